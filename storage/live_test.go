package storage

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/trace"
)

// recordAsEngine begins turn t on sink (or takes up the turn sink was told to resume)
// and records its calls as the engine does: children before their parent, and in record
// mode "calls" (drop) each call's request dropped once recorded, so a parent's record
// holds children without theirs. It returns the key and the calls as they were sent.
func recordAsEngine(ctx context.Context, sink *BranchSink, t *trace.Turn, drop bool) (string, []*trace.Call, error) {
	sent := make([]*trace.Call, len(t.Calls))
	for i, c := range t.Calls {
		sent[i] = c.Clone()
	}
	key, err := sink.BeginTurn(ctx, t.Inputs)
	if err != nil {
		return "", nil, err
	}
	var rec func(parent string, c *trace.Call) error
	rec = func(parent string, c *trace.Call) error {
		for _, ch := range c.Children {
			if err := rec(c.ID, ch); err != nil {
				return err
			}
		}
		if err := sink.RecordCall(ctx, key, parent, c); err != nil {
			return err
		}
		if drop {
			c.Messages, c.Completion, c.RawRequest, c.RawResponse = lm.MessageList{}, "", "", ""
		}
		return nil
	}
	for _, c := range t.Calls {
		if err := rec("", c); err != nil {
			return key, nil, err
		}
	}
	return key, sent, nil
}

// sameCalls fails unless got are want exactly, naming the first call whose request or
// history differs.
func sameCalls(t *testing.T, reader string, got, want []*trace.Call) {
	t.Helper()
	var g, w []*trace.Call
	trace.WalkCalls(got, func(c *trace.Call, _ int) { g = append(g, c) })
	trace.WalkCalls(want, func(c *trace.Call, _ int) { w = append(w, c) })
	if len(g) != len(w) {
		t.Errorf("%s: %d calls, want %d", reader, len(g), len(w))
		return
	}
	for i := range w {
		for _, part := range []struct {
			name      string
			got, want any
		}{{"request", g[i].Messages, w[i].Messages}, {"history", g[i].History, w[i].History}} {
			gb, _ := json.Marshal(part.got)
			wb, _ := json.Marshal(part.want)
			if string(gb) != string(wb) {
				t.Errorf("%s: call %s (%s): %s of %d bytes, want the %d the engine sent", reader, w[i].ID, w[i].Path, part.name, len(gb), len(wb))
			}
		}
	}
	if toJSON(t, got) != toJSON(t, want) {
		t.Errorf("%s: the calls differ from what the engine recorded", reader)
	}
}

// A turn in flight, read by another store or while another process runs it, comes back
// whole from every reader: each call's request and history byte for byte as the engine
// sent them, though the journal's records hold only what each adds to the turn before's
// same call; readers of the turn's place and counts see it too, and a turn read without
// its requests is what the stored turn gives once committed.
func TestLiveTurnReadsWhole(t *testing.T) {
	ctx := context.Background()
	const n = 40 // committed turns before the one in flight
	cases := []struct {
		name   string
		window int
		by     string // who runs the turn: "store" (another Store, nothing shared) or "process"
		// the recorder committed the turn before itself (its records are continuations
		// of the calls it has), rather than starting fresh (seeded from the stored turn)
		same   bool
		drop   bool // record mode "calls"
		resume bool // an interrupted turn taken up in place
	}{
		{name: "first turn of a store", by: "store"},
		{name: "next turn of a sink", by: "store", same: true},
		{name: "record mode calls", by: "store", drop: true},
		{name: "record mode calls, next turn", by: "store", same: true, drop: true},
		{name: "window", window: 35, by: "store"},
		{name: "window, next turn of a sink", window: 35, by: "store", same: true},
		{name: "resumed in place", by: "store", resume: true},
		{name: "another process", by: "process"},
		{name: "another process, record mode calls", by: "process", drop: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.by == "process" && testing.Short() {
				t.Skip("spawns processes")
			}
			db := filepath.Join(t.TempDir(), "live.db")
			s, err := Open(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			mustConv(t, s, "S")
			for i := range n - 1 {
				if _, err := runTurn(ctx, s.Sink("S", MainBranch), fixtureTurn(i, tc.window, true)); err != nil {
					t.Fatal(err)
				}
			}
			other, err := Open(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			sink := other.Sink("S", MainBranch)
			if tc.same {
				_, err = runTurn(ctx, sink, fixtureTurn(n-1, tc.window, true))
			} else {
				_, err = runTurn(ctx, s.Sink("S", MainBranch), fixtureTurn(n-1, tc.window, true))
			}
			if err == nil {
				err = other.Sync() // the other process's transaction runs beside its CommitTurn
			}
			if err != nil {
				t.Fatal(err)
			}
			br, err := s.Branch(ctx, "S", MainBranch)
			if err != nil {
				t.Fatal(err)
			}

			var key string
			var sent []*trace.Call
			switch {
			case tc.by == "process":
				env := []string{"SB_WINDOW=" + strconv.Itoa(tc.window)}
				if tc.drop {
					env = append(env, "SB_DROP=1")
				}
				cmd, out, stderr := startChild(t, "record", db, "S", MainBranch, env...)
				defer func() {
					cmd.Process.Signal(syscall.SIGKILL)
					cmd.Wait()
				}()
				if !out.Scan() || !strings.HasPrefix(out.Text(), "recorded ") {
					t.Fatalf("child: %q %s", out.Text(), stderr)
				}
				key, sent = strings.TrimPrefix(out.Text(), "recorded "), fixtureTurn(n, tc.window, true).Calls
			case tc.resume:
				// the turn's first call recorded, then its process gone: kept interrupted
				first := fixtureTurn(n, tc.window, true)
				first.Calls = first.Calls[:1]
				first.Calls[0].Children = nil
				gone := other.Sink("S", MainBranch)
				k, _, err := recordAsEngine(ctx, gone, first, false)
				if err != nil {
					t.Fatal(err)
				}
				crash(t, other, gone, k)
				if p, err := s.PendingTurn(ctx, k); err != nil || p.Status != trace.StatusInterrupted {
					t.Fatalf("the crashed turn: %+v, %v", p, err)
				}
				if err := sink.Resume(ctx, k); err != nil {
					t.Fatal(err)
				}
				if key, sent, err = recordAsEngine(ctx, sink, fixtureTurn(n, tc.window, true), tc.drop); err != nil {
					t.Fatal(err)
				}
				if key != k {
					t.Fatalf("took up turn %s, want %s in place", key, k)
				}
			default:
				if key, sent, err = recordAsEngine(ctx, sink, fixtureTurn(n, tc.window, true), tc.drop); err != nil {
					t.Fatal(err)
				}
			}
			recs := journalRecords(t, s, br)
			if !slices.ContainsFunc(recs, func(rc runCall) bool { return rc.Base != nil }) {
				t.Fatal("no journal record holds only a continuation: the case tests nothing")
			}
			if slid := slices.ContainsFunc(recs, func(rc runCall) bool { return rc.Base != nil && rc.Base.MsgsLen > 0 && rc.Base.HistLen > 0 }); slid != (tc.window > 0 && tc.same) {
				// a window slid on since the turn before, whose calls the recorder has
				t.Errorf("a record takes a slide of its base's messages and history: %v; want %v", slid, !slid)
			}

			// What the engine sent, from every reader that gives calls.
			ps, err := s.PendingTurns(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if i := slices.IndexFunc(ps, func(p *PendingTurn) bool { return p.Key == key }); i < 0 || ps[i].Status != trace.StatusRunning {
				t.Fatalf("PendingTurns: turn %s is not there running", key)
			} else {
				sameCalls(t, "PendingTurns", ps[i].Calls, sent)
			}
			p, err := s.PendingTurn(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			sameCalls(t, "PendingTurn", p.Calls, sent)
			lt, err := s.LoadTurn(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if lt.Status != trace.StatusRunning {
				t.Errorf("LoadTurn: turn %s is %s, want running", key, lt.Status)
			}
			sameCalls(t, "LoadTurn", lt.Calls, sent)
			lts, err := s.LoadTurns(ctx, []string{br.Tip, key})
			if err != nil {
				t.Fatal(err)
			}
			sameCalls(t, "LoadTurns", lts[1].Calls, sent)
			if lts[0].Index != n-1 || lts[0].Status != trace.StatusCompleted {
				t.Errorf("LoadTurns: the stored turn beside it is %d %s", lts[0].Index, lts[0].Status)
			}
			light, err := s.LoadTurnsWith(ctx, []string{key}, LoadOptions{NoRequests: true, HistoryOf: sent[1].ID})
			if err != nil {
				t.Fatal(err)
			}

			// Where it is and how many calls it made, from the readers that give no calls.
			kept, err := s.KeptTurns(ctx, "S", MainBranch)
			if err != nil {
				t.Fatal(err)
			}
			if i := slices.IndexFunc(kept, func(k *TurnNode) bool { return k.Key == key }); i < 0 || kept[i].Status != trace.StatusRunning || kept[i].Calls != 3 {
				t.Errorf("KeptTurns: %s", toJSON(t, kept))
			}
			info, err := s.TurnInfo(ctx, key)
			if err != nil || info.Status != trace.StatusRunning || info.Calls != 3 || info.Branch != MainBranch || info.Owner == nil || !info.Owner.Alive {
				t.Errorf("TurnInfo: %+v, %v", info, err)
			}
			tree, err := s.TurnTree(ctx, "S")
			if err != nil || len(tree) != n+1 || tree[n].Key != key || tree[n].Status != trace.StatusRunning || tree[n].Calls != 3 {
				t.Errorf("TurnTree: %d turns, %v", len(tree), err)
			}
			outline, err := s.TurnOutline(ctx, "S")
			if err != nil || len(outline) != n+1 || outline[n].Key != key || outline[n].Status != trace.StatusRunning {
				t.Errorf("TurnOutline: %d turns, %v", len(outline), err)
			}
			convs, err := s.ListConversations(ctx)
			if err != nil || len(convs) != 1 || convs[0].Pending != 1 || convs[0].Kept[trace.StatusRunning] != 1 {
				t.Errorf("ListConversations: %+v, %v", convs, err)
			}

			if tc.by == "process" {
				return // its turn is never committed; TestSeededJournal imports a killed one
			}
			// Once committed, the stored turn is what was read in flight.
			if err := sink.CommitTurn(ctx, key, fixtureTurn(n, tc.window, true)); err != nil {
				t.Fatal(err)
			}
			if err := other.Sync(); err != nil { // its transaction, beside CommitTurn (commitlater.go)
				t.Fatal(err)
			}
			stored, err := s.LoadTurnsWith(ctx, []string{key}, LoadOptions{NoRequests: true, HistoryOf: sent[1].ID})
			if err != nil {
				t.Fatal(err)
			}
			if toJSON(t, light[0].Calls) != toJSON(t, stored[0].Calls) {
				t.Error("LoadTurnsWith NoRequests, HistoryOf: the turn in flight differs from the turn stored")
			}
			got, err := s.LoadTurn(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			sameCalls(t, "LoadTurn, committed", got.Calls, sent)
		})
	}
}
