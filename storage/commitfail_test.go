package storage

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/trace"
)

// A turn's transaction that fails, after CommitTurn returned (commitlater.go), ends the
// turn all the same (BranchSink.commitFailed) and is reported by Sync: the branch is
// free at once, the turn's calls are kept, and the next turn runs. Kept beside the
// branch as failed when the branch moved; when nothing could be written, its journal is
// let go, and the first reader once the database takes writes again commits it onto
// the branch, as its end record says it was returned. The other process is a second
// Store on the same file (its own connections and journal locks), which moves the
// branch, or breaks the database for writing, while the turn is in flight.
func TestCommitThatFails(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		// meddle runs in the other process while the turn is in flight; mend after the
		// commit failed.
		meddle, mend func(t *testing.T, other *Store)
		want         error        // what the reported error wraps
		status       trace.Status // of the turn in the end
		says         string       // in the reported error
		onPath       bool         // the turn is on the branch in the end
	}{
		{"branch moved", func(t *testing.T, other *Store) {
			moveTipUnder(t, other, "S", MainBranch)
		}, func(*testing.T, *Store) {}, ErrConflict, trace.StatusFailed, `moved while turn`, false},
		{"not writable", func(t *testing.T, other *Store) {
			if _, err := other.w.ExecContext(ctx, `CREATE TRIGGER no_turns BEFORE INSERT ON turns BEGIN SELECT RAISE(ABORT, 'disk full (test)'); END`); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, other *Store) {
			if _, err := other.w.ExecContext(ctx, `DROP TRIGGER no_turns`); err != nil {
				t.Fatal(err)
			}
		}, nil, trace.StatusCompleted, `commits it onto branch "main"`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := openTemp(t)
			mustConv(t, s, "S")
			sink := s.Sink("S", MainBranch)
			for i := range 2 {
				if _, err := runTurn(ctx, sink, fixtureTurn(i, 0, true)); err != nil {
					t.Fatal(err)
				}
			}
			other, err := Open(ctx, s.Path())
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()

			tr := fixtureTurn(2, 0, true)
			key, err := sink.BeginTurn(ctx, tr.Inputs)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []*trace.Call{tr.Calls[0].Children[0], tr.Calls[0], tr.Calls[1]} {
				parent := ""
				if c == tr.Calls[0].Children[0] {
					parent = tr.Calls[0].ID
				}
				if err := sink.RecordCall(ctx, key, parent, c); err != nil {
					t.Fatal(err)
				}
			}
			tc.meddle(t, other)
			if err := sink.CommitTurn(ctx, key, tr); err != nil {
				t.Fatalf("commit: %v; want it returned as its end record is written", err)
			}
			err = s.Sync()
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "turn "+key) {
				t.Fatalf("Sync: %v; want %v saying %q and naming turn %s", err, tc.want, tc.says, key)
			}
			if err := s.Sync(); err != nil {
				t.Errorf("Sync again: %v; want the failure reported once", err)
			}
			tc.mend(t, other)

			// The turn is stored with its calls, out of the branch's path, carrying the
			// commit's error; or, let go in its journal, committed by the first reader.
			info, err := other.TurnInfo(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			got, err := other.LoadTurns(ctx, []string{key})
			if err != nil {
				t.Fatal(err)
			}
			if info.Status != tc.status || (tc.status == trace.StatusFailed && !strings.Contains(info.Error, tc.says)) {
				t.Errorf("kept turn: %s %q, want %s saying %q", info.Status, info.Error, tc.status, tc.says)
			}
			if toJSON(t, got[0].Calls) != toJSON(t, tr.Calls) {
				t.Error("the kept turn's calls are not those recorded")
			}
			path, err := other.BranchPath(ctx, "S", MainBranch)
			if err != nil {
				t.Fatal(err)
			}
			if on := slices.ContainsFunc(path, func(n *TurnNode) bool { return n.Key == key }); on != tc.onPath {
				t.Errorf("the turn whose transaction failed is on the branch's path: %v, want %v", on, tc.onPath)
			}

			// The branch is free: the other process can begin a turn on it.
			osink := other.Sink("S", MainBranch)
			k, err := osink.BeginTurn(ctx, nil)
			if err != nil {
				t.Fatalf("the branch is still busy after the failed commit: %v", err)
			}
			if err := osink.AbortTurn(ctx, k, &trace.Turn{Status: trace.StatusCancelled, Error: "the branch was free"}); err != nil {
				t.Fatal(err)
			}

			// The next turn runs, on this sink, after the branch's tip.
			next := fixtureTurn(len(path), 0, true)
			nk, err := runTurn(ctx, sink, next)
			if err != nil {
				t.Fatalf("the next turn: %v", err)
			}
			tip, _, err := s.BranchTip(ctx, "S", MainBranch)
			if err != nil || tip.Key != nk {
				t.Fatalf("tip %v, want the next turn %s: %v", tip, nk, err)
			}
			if err := s.IntegrityCheck(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
