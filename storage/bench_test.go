package storage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// bulkAppend commits n turns made by mk to branch, batch turns per transaction, so large
// fixtures build without one fsync per turn. It uses the same code as CommitTurn.
func bulkAppend(tb testing.TB, s *Store, conv, branch string, n, batch int, mk func(i int) *trace.Turn) {
	tb.Helper()
	ctx := context.Background()
	for done := 0; done < n; {
		err := s.write(ctx, func(tx *wtx) error {
			for i := done; i < n && i < done+batch; i++ {
				br, err := branchByName(ctx, tx, conv, branch)
				if err != nil {
					return err
				}
				t := mk(br.Length)
				in, _ := jsonOf(t.Inputs)
				id, err := insertTurn(ctx, tx, conv, br, in.String, nil, 0)
				if err != nil {
					return err
				}
				if err := commitTurn(ctx, s.wc, tx, br, turnPos{id: id, parent: br.tipID.Int64, conv: conv}, t); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
		done += batch
	}
}

func lightTurn(i int) *trace.Turn {
	return &trace.Turn{Index: i, Inputs: sig.NewMap("question", fixtureQuestion(i)), Outputs: sig.NewMap("answer", "ok")}
}

// BenchmarkFork forks a 10,001-turn branch at different depths: the cost does not grow
// with the index (a fork is one new row; the turn is found through jump pointers).
func BenchmarkFork(b *testing.B) {
	ctx := context.Background()
	s := openTemp(b)
	mustConv(b, s, "S")
	bulkAppend(b, s, "S", MainBranch, 10001, 2000, lightTurn)
	br, err := s.Branch(ctx, "S", MainBranch)
	if err != nil {
		b.Fatal(err)
	}
	tip, _ := parseTurnKey(br.Tip)
	// The lookup alone, without the fsync of the commit that dominates a fork.
	for _, at := range []int{10, 5000, 10000} {
		b.Run(fmt.Sprintf("lookup-at=%d", at), func(b *testing.B) {
			for b.Loop() {
				if _, err := ancestorAt(ctx, s.r, tip, at); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, at := range []int{10, 5000, 10000} {
		b.Run(fmt.Sprintf("at=%d", at), func(b *testing.B) {
			i := 0
			for b.Loop() {
				i++
				if _, err := s.Fork(ctx, "S", MainBranch, fmt.Sprintf("f-%d-%d", at, i), at); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLoadBranch opens a branch of 10,000 turns, each with a planner call (and a
// nested tool call) and an answer call whose requests carry a 4-turn history window.
func BenchmarkLoadBranch(b *testing.B) {
	ctx := context.Background()
	s := openTemp(b)
	mustConv(b, s, "S")
	bulkAppend(b, s, "S", MainBranch, 10000, 1000, func(i int) *trace.Turn { return fixtureTurn(i, 4, false) })
	b.Run("full", func(b *testing.B) {
		for b.Loop() {
			turns, err := s.LoadBranch(ctx, "S", MainBranch)
			if err != nil || len(turns) != 10000 {
				b.Fatal(len(turns), err)
			}
		}
	})
	b.Run("path-only", func(b *testing.B) {
		for b.Loop() {
			nodes, err := s.BranchPath(ctx, "S", MainBranch)
			if err != nil || len(nodes) != 10000 {
				b.Fatal(len(nodes), err)
			}
		}
	})
}

// loopCPU runs f in b.Loop and reports CPU milliseconds per call beside wall time.
func loopCPU(b *testing.B, f func() error) {
	c0, n := cpuTime(), 0
	for b.Loop() {
		if err := f(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	if c := cpuTime() - c0; c > 0 && n > 0 {
		b.ReportMetric(float64(c.Microseconds())/1000/float64(n), "cpu-ms/op")
	}
}

// BenchmarkOpenBranch10k is opening a 10,000-turn branch (issue 6), each turn a planner
// call with a nested tool call and an answer call over a 4-turn window, in the ways the
// workbench can: everything (LoadBranch, what export needs), what restoring a session
// needs (the calls' values, read as ui/sessions reads them: from the branch's path pack,
// and from the rows for a branch that has none), the last page of 50 turns with calls (the first frame), and that
// page the way ui/app loads it today (the whole path, then one LoadTurn per turn).
func BenchmarkOpenBranch10k(b *testing.B) {
	ctx := context.Background()
	s := openTemp(b)
	mustConv(b, s, "S")
	bulkAppend(b, s, "S", MainBranch, 10000, 1000, func(i int) *trace.Turn { return fixtureTurn(i, 4, false) })
	count := func(want int) func([]*trace.Turn, error) error {
		return func(ts []*trace.Turn, err error) error {
			if err == nil && len(ts) != want {
				err = fmt.Errorf("%d turns, want %d", len(ts), want)
			}
			return err
		}
	}
	b.Run("full", func(b *testing.B) {
		loopCPU(b, func() error { return count(10000)(s.LoadBranch(ctx, "S", MainBranch)) })
	})
	b.Run("restore-rows", func(b *testing.B) {
		loopCPU(b, func() error {
			// what restoring a session reads of a branch with no path pack
			p, err := s.LoadBranchRangeWith(ctx, "S", MainBranch, 0, 0, warmRestore)
			if err != nil {
				return err
			}
			return count(10000)(p.Turns, nil)
		})
	})
	// as ui/sessions reads a branch to restore its session, once its path pack is
	// written (the first restore's WarmBranch writes it)
	if _, err := s.LoadPathValues(ctx, "S", MainBranch); err != nil {
		b.Fatal(err)
	}
	if err := s.WarmBranch(ctx, "S", MainBranch); err != nil {
		b.Fatal(err)
	}
	b.Run("restore", func(b *testing.B) {
		loopCPU(b, func() error {
			p, err := s.LoadPathValues(ctx, "S", MainBranch)
			if err == nil && p.Packed != 10000 {
				err = fmt.Errorf("%d turns from the pack, want all", p.Packed)
			}
			if err != nil {
				return err
			}
			return count(10000)(p.Turns, nil)
		})
	})
	b.Run("last-page", func(b *testing.B) {
		loopCPU(b, func() error {
			p, err := s.LoadBranchRange(ctx, "S", MainBranch, 10000-50, 50)
			if err != nil {
				return err
			}
			return count(50)(p.Turns, nil)
		})
	})
	b.Run("last-page-per-turn", func(b *testing.B) {
		loopCPU(b, func() error {
			path, err := s.BranchPath(ctx, "S", MainBranch)
			if err != nil {
				return err
			}
			for _, n := range path[len(path)-50:] {
				if _, err := s.LoadTurn(ctx, n.Key); err != nil {
					return err
				}
			}
			return nil
		})
	})
	b.Run("path-tail", func(b *testing.B) {
		loopCPU(b, func() error {
			nodes, total, err := s.BranchPathTail(ctx, "S", MainBranch, 50)
			if err == nil && (len(nodes) != 50 || total != 10000) {
				err = fmt.Errorf("tail: %d of %d", len(nodes), total)
			}
			return err
		})
	})
}

// twoCallTurn is a turn of two sibling calls whose requests carry the whole conversation
// so far (dspy-session's default: no window).
func twoCallTurn(i int) *trace.Turn {
	t := fixtureTurn(i, 0, false)
	t.Calls[0].Children = nil
	return t
}

// BenchmarkBytesOnDisk stores a 1,000-turn two-call session with full history and reports
// the database size against its unique content (distinct message texts, completions and
// the inputs/outputs JSON): every request repeats the conversation, so storing requests
// naively would cost ~1,000x; the target is <= 3x.
func BenchmarkBytesOnDisk(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		dir := b.TempDir()
		s, err := Open(ctx, filepath.Join(dir, "bytes.db"))
		if err != nil {
			b.Fatal(err)
		}
		mustConv(b, s, "S")
		bulkAppend(b, s, "S", MainBranch, 1000, 100, twoCallTurn)
		unique := map[string]bool{}
		var uniq, naive int64
		add := func(x string) {
			naive += int64(len(x))
			if !unique[x] {
				unique[x] = true
				uniq += int64(len(x))
			}
		}
		js := func(m *sig.Map) string { j, _ := jsonOf(m); return j.String }
		for i := 0; i < 1000; i++ {
			t := twoCallTurn(i)
			add(js(t.Inputs))
			add(js(t.Outputs))
			trace.WalkCalls(t.Calls, func(c *trace.Call, _ int) {
				for _, m := range c.Messages.All() {
					add(m.Content)
				}
				add(c.Completion)
				add(js(c.Inputs))
				add(js(c.Outputs))
			})
		}
		if _, err := s.w.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			b.Fatal(err)
		}
		st, err := os.Stat(s.Path())
		if err != nil {
			b.Fatal(err)
		}
		turns, err := s.LoadBranch(ctx, "S", MainBranch)
		if err != nil || len(turns) != 1000 || turns[999].Calls[1].Messages.Len() != 2000 {
			b.Fatal("reload failed", err)
		}
		s.Close()
		b.ReportMetric(float64(st.Size())/float64(uniq), "disk/unique")
		b.ReportMetric(float64(st.Size())/1e6, "MB-on-disk")
		b.ReportMetric(float64(uniq)/1e6, "MB-unique")
		b.ReportMetric(float64(naive)/1e6, "MB-naive")
	}
}

// BenchmarkListing100k measures the UI's light queries on a conversation of 100,000
// turns (a long main branch plus forks).
func BenchmarkListing100k(b *testing.B) {
	ctx := context.Background()
	s := openTemp(b)
	mustConv(b, s, "big")
	bulkAppend(b, s, "big", MainBranch, 100000, 5000, lightTurn)
	for i := 0; i < 20; i++ {
		if _, err := s.Fork(ctx, "big", MainBranch, fmt.Sprintf("f%d", i), i*4000); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < 50; i++ {
		mustConv(b, s, fmt.Sprintf("small%d", i))
	}
	b.Run("ListConversations", func(b *testing.B) {
		for b.Loop() {
			if l, err := s.ListConversations(ctx); err != nil || len(l) != 51 {
				b.Fatal(err)
			}
		}
	})
	b.Run("PendingTurns", func(b *testing.B) {
		// `sessionbench run` and the workbench's start ask for them, whatever the
		// conversation: through their partial index, not a scan of every turn
		loopCPU(b, func() error {
			if l, err := s.PendingTurns(ctx); err != nil || len(l) != 0 {
				return fmt.Errorf("pending: %d %v", len(l), err)
			}
			return nil
		})
	})
	b.Run("Branches", func(b *testing.B) {
		for b.Loop() {
			if l, err := s.Branches(ctx, "big"); err != nil || len(l) != 21 {
				b.Fatal(err)
			}
		}
	})
	b.Run("BranchPath", func(b *testing.B) {
		loopCPU(b, func() error {
			if l, err := s.BranchPath(ctx, "big", MainBranch); err != nil || len(l) != 100000 {
				return fmt.Errorf("path: %d %v", len(l), err)
			}
			return nil
		})
	})
	b.Run("BranchPathTail50", func(b *testing.B) {
		loopCPU(b, func() error {
			if l, n, err := s.BranchPathTail(ctx, "big", MainBranch, 50); err != nil || len(l) != 50 || n != 100000 {
				return fmt.Errorf("tail: %d of %d %v", len(l), n, err)
			}
			return nil
		})
	})
	b.Run("TurnTree", func(b *testing.B) {
		loopCPU(b, func() error {
			if l, err := s.TurnTree(ctx, "big"); err != nil || len(l) != 100000 {
				return fmt.Errorf("tree: %d %v", len(l), err)
			}
			return nil
		})
	})
	b.Run("TurnOutline", func(b *testing.B) {
		loopCPU(b, func() error {
			if l, err := s.TurnOutline(ctx, "big"); err != nil || len(l) != 100000 {
				return fmt.Errorf("outline: %d %v", len(l), err)
			}
			return nil
		})
	})
	b.Run("BranchUsage", func(b *testing.B) {
		loopCPU(b, func() error {
			if u, err := s.BranchUsage(ctx, "big"); err != nil || len(u) != 21 {
				return fmt.Errorf("usage: %d %v", len(u), err)
			}
			return nil
		})
	})
	b.Run("TurnTreePage1000", func(b *testing.B) {
		loopCPU(b, func() error {
			if l, next, err := s.TurnTreePage(ctx, "big", "", 1000); err != nil || len(l) != 1000 || next == "" {
				return fmt.Errorf("tree page: %d %v", len(l), err)
			}
			return nil
		})
	})
}
