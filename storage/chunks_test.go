package storage

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sessionbench/sessionbench/core/trace"
)

// TestRestoreReadInChunks: the restore read split in chunks (at any chunk count, the
// chunk boundaries anywhere) gives exactly the turns and nodes the whole read gives.
func TestRestoreReadInChunks(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "c")
	appendN(t, s, "c", MainBranch, 23)
	b, err := branchByName(ctx, s.r, "c", MainBranch)
	if err != nil {
		t.Fatal(err)
	}
	o := LoadOptions{NoRequests: true, NoHistories: true}
	for _, w := range []struct{ from, end int }{{0, 23}, {5, 23}, {0, 17}, {9, 10}} {
		nodes, err := pathWindow(ctx, s.r, b.tipID, b.Length, w.from, w.end-w.from)
		if err != nil {
			t.Fatal(err)
		}
		whole, err := s.turnsOfChunk(ctx, s.r, nodes, o)
		if err != nil {
			t.Fatal(err)
		}
		if len(whole) != w.end-w.from {
			t.Fatalf("window %v: %d turns read whole", w, len(whole))
		}
		for _, k := range []int{2, 3, 4, 7} {
			t.Run(fmt.Sprintf("window=%d-%d/chunks=%d", w.from, w.end, k), func(t *testing.T) {
				ts, err := s.turnsInChunks(ctx, nodes, o, k)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := toJSON(t, ts), toJSON(t, whole); got != want {
					t.Fatalf("turns read in chunks differ from the whole read:\n%s\nwant\n%s", got, want)
				}
				ns, ts, err := s.windowInChunks(ctx, b.tipID, b.Length, w.from, w.end, o, k)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := toJSON(t, ts), toJSON(t, whole); got != want {
					t.Fatalf("window read in chunks differs from the whole read:\n%s\nwant\n%s", got, want)
				}
				if got, want := toJSON(t, ns), toJSON(t, nodes); got != want {
					t.Fatalf("nodes read in chunks differ:\n%s\nwant\n%s", got, want)
				}
			})
		}
	}
}

// TestLoadBranchRangeInChunks: a long branch's restore read, as ui/sessions makes it,
// is split in chunks (here 2 of 300 turns, and 3 after the branch grows) and gives
// what the whole read gives; a shorter window of it, and any other read, is not split.
func TestLoadBranchRangeInChunks(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "c")
	o := LoadOptions{NoRequests: true, NoHistories: true}
	for _, c := range []struct{ turns, chunks int }{{600, 2}, {800, 3}} {
		b, err := branchByName(ctx, s.r, "c", MainBranch)
		if err != nil {
			t.Fatal(err)
		}
		bulkAppend(t, s, "c", MainBranch, c.turns-b.Length, 200, func(i int) *trace.Turn { return fixtureTurn(b.Length+i, 4, false) })
		if k := s.restoreChunks(ctx, c.turns, o); k != c.chunks {
			t.Fatalf("%d turns: %d chunks, want %d", c.turns, k, c.chunks)
		}
		for _, w := range []struct{ from, limit int }{{0, 0}, {-300, 0}, {100, 520}} {
			p, err := s.LoadBranchRangeWith(ctx, "c", MainBranch, w.from, w.limit, o)
			if err != nil {
				t.Fatal(err)
			}
			b, err := branchByName(ctx, s.r, "c", MainBranch)
			if err != nil {
				t.Fatal(err)
			}
			nodes, err := pathWindow(ctx, s.r, b.tipID, b.Length, w.from, w.limit)
			if err != nil {
				t.Fatal(err)
			}
			whole, err := s.turnsOfChunk(ctx, s.r, nodes, o)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Turns) != len(whole) || len(p.Keys) != len(nodes) || p.Total != c.turns {
				t.Fatalf("%d turns, window %v: %d turns, %d keys of %d, want %d", c.turns, w, len(p.Turns), len(p.Keys), p.Total, len(whole))
			}
			for i := range whole {
				if p.Keys[i] != nodes[i].Key || toJSON(t, p.Turns[i]) != toJSON(t, whole[i]) {
					t.Fatalf("%d turns, window %v: turn %d (%s) differs from the whole read:\n%s\nwant\n%s",
						c.turns, w, i, p.Keys[i], toJSON(t, p.Turns[i]), toJSON(t, whole[i]))
				}
			}
		}
	}
	if k := s.restoreChunks(ctx, 800, LoadOptions{NoRequests: true}); k != 1 {
		t.Fatalf("a read with histories is split in %d chunks", k)
	}
	if k := s.restoreChunks(ctx, 300, o); k != 1 {
		t.Fatalf("300 turns are split in %d chunks", k)
	}
}

// TestRestoreReadInChunksReportsTheCorruptTurn: a chunk that fails makes the read fail
// with its own error (which turn, what is wrong), not with the cancellation it caused
// the other chunks.
func TestRestoreReadInChunksReportsTheCorruptTurn(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "c")
	keys := appendN(t, s, "c", MainBranch, 12)
	id, err := parseTurnKey(keys[10])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(ctx, `UPDATE turns SET inputs = '{"question": ' WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
	b, err := branchByName(ctx, s.r, "c", MainBranch)
	if err != nil {
		t.Fatal(err)
	}
	o := LoadOptions{NoRequests: true, NoHistories: true}
	_, _, err = s.windowInChunks(ctx, b.tipID, b.Length, 0, b.Length, o, 3)
	if err == nil || !strings.Contains(err.Error(), "inputs of turn "+keys[10]+" are corrupt") {
		t.Fatalf("window read in chunks: %v, want turn %s's inputs reported corrupt", err, keys[10])
	}
	nodes, err := pathWindow(ctx, s.r, b.tipID, b.Length, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err = s.turnsInChunks(ctx, nodes, o, 4); err == nil || !strings.Contains(err.Error(), "inputs of turn "+keys[10]+" are corrupt") {
		t.Fatalf("turns read in chunks: %v, want turn %s's inputs reported corrupt", err, keys[10])
	}
}

// TestInChunksPrefersTheCause: the chunks a failure cancels report the cancellation;
// the read reports the failure, whatever chunk it was in.
func TestInChunksPrefersTheCause(t *testing.T) {
	bad := errors.New("chunk 2 is bad")
	var mu sync.Mutex
	var seen [][2]int
	err := inChunks(context.Background(), 10, 3, func(ctx context.Context, lo, hi int) error {
		mu.Lock()
		seen = append(seen, [2]int{lo, hi})
		mu.Unlock()
		if lo == 8 {
			return bad
		}
		<-ctx.Done() // the earlier chunks are cut short by the failure
		return fmt.Errorf("read turns %d to %d: %w", lo, hi, ctx.Err())
	})
	if !errors.Is(err, bad) {
		t.Fatalf("inChunks: %v, want %v", err, bad)
	}
	slices.SortFunc(seen, func(a, b [2]int) int { return a[0] - b[0] })
	if want := [][2]int{{0, 4}, {4, 8}, {8, 10}}; !slices.Equal(seen, want) {
		t.Fatalf("chunks %v, want %v", seen, want)
	}
	if err := inChunks(context.Background(), 2, 4, func(ctx context.Context, lo, hi int) error {
		if hi-lo != 1 {
			return fmt.Errorf("chunk [%d, %d)", lo, hi)
		}
		return nil
	}); err != nil {
		t.Fatalf("more chunks than items: %v", err)
	}
}

// TestRestoreReadInChunksBesideWrites: chunks read on different connections, each in its
// own snapshot; turns committed meanwhile (the tip moving on) change nothing of the
// window read, which ends at the tip the read began with.
func TestRestoreReadInChunksBesideWrites(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "c")
	bulkAppend(t, s, "c", MainBranch, 700, 350, func(i int) *trace.Turn { return fixtureTurn(i, 4, false) })
	o := LoadOptions{NoRequests: true, NoHistories: true}
	want, err := s.LoadBranchRangeWith(ctx, "c", MainBranch, 0, 0, o)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		for i := 700; i < 760; i++ {
			if _, err := s.AppendTurn(ctx, "c", MainBranch, fixtureTurn(i, 4, false)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	reads := 0
	for writing := true; writing; reads++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			writing = false
		default:
		}
		p, err := s.LoadBranchRangeWith(ctx, "c", MainBranch, 0, 700, o)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Turns) != 700 || p.Keys[699] != want.Keys[699] || toJSON(t, p.Turns[350]) != toJSON(t, want.Turns[350]) {
			t.Fatalf("read %d beside writes: %d turns, last %s, want 700 ending at %s", reads, len(p.Turns), p.Keys[len(p.Keys)-1], want.Keys[699])
		}
	}
	p, err := s.LoadBranchRangeWith(ctx, "c", MainBranch, 0, 0, o)
	if err != nil || p.Total != 760 || len(p.Turns) != 760 {
		t.Fatalf("after the writes: %d of %d turns, %v", len(p.Turns), p.Total, err)
	}
}
