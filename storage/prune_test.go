package storage

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// rowCounts counts the rows a turn owns, directly or through its calls.
func rowCounts(t *testing.T, s *Store) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range []string{"turns", "calls", "list_nodes", "contents", "attempts", "redo"} {
		var n int
		if err := s.r.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[table] = n
	}
	return out
}

func checkIntegrity(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	if err := s.IntegrityCheck(ctx); err != nil {
		t.Error(err)
	}
	rows, err := s.r.QueryContext(ctx, "PRAGMA foreign_key_check")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if rows.Next() {
		t.Error("foreign_key_check reports dangling references")
	}
}

func branchJSON(t *testing.T, s *Store, conv, branch string) string {
	t.Helper()
	turns, err := s.LoadBranch(context.Background(), conv, branch)
	if err != nil {
		t.Fatal(err)
	}
	return toJSON(t, turns)
}

// TestDeleteBranchRemovesOrphans is the rm-branch scenario on a real file: a fork with
// turns of its own (one with new message contents, and the conversation's best attempt)
// is deleted; its turns, calls, attempts and the contents only it used go, main stays
// byte-identical and the file stays consistent.
func TestDeleteBranchRemovesOrphans(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "S")
	appendN(t, s, "S", MainBranch, 3)
	if _, err := s.AppendTurn(ctx, "S", MainBranch, attemptsTurn(3, 0.5)); err != nil {
		t.Fatal(err)
	}
	before := rowCounts(t, s)
	mainBefore := branchJSON(t, s, "S", MainBranch)

	if _, err := s.Fork(ctx, "S", MainBranch, "f", 1); err != nil {
		t.Fatal(err)
	}
	fkeys := appendN(t, s, "S", "f", 2) // indexes 2..4: 4 has messages main never sent
	k, err := s.AppendTurn(ctx, "S", "f", attemptsTurn(4, 0.9))
	if err != nil {
		t.Fatal(err)
	}
	fkeys = append(fkeys, k)
	grown := rowCounts(t, s)
	if grown["turns"] != before["turns"]+3 || grown["list_nodes"] <= before["list_nodes"] || grown["contents"] <= before["contents"] {
		t.Fatalf("the fork added no rows of its own: %v -> %v", before, grown)
	}
	if c, _ := s.Conversation(ctx, "S"); c.BestAttempt == nil || c.BestAttempt.TurnKey != fkeys[2] {
		t.Fatalf("best attempt before delete: %+v", c.BestAttempt)
	}

	if _, err := s.DeleteBranch(ctx, "S", "f", false); err != nil {
		t.Fatal(err)
	}
	after := rowCounts(t, s)
	for table, n := range before {
		if after[table] != n {
			t.Errorf("%s: %d rows after delete, %d before the fork", table, after[table], n)
		}
	}
	if got := branchJSON(t, s, "S", MainBranch); got != mainBefore {
		t.Error("main changed when the fork was deleted")
	}
	c, err := s.Conversation(ctx, "S")
	if err != nil || c.BestAttempt == nil || c.BestAttempt.Score != 0.5 {
		t.Errorf("best attempt after delete: %+v %v", c, err)
	}
	for _, k := range fkeys {
		if _, err := s.LoadTurn(ctx, k); err == nil {
			t.Errorf("turn %s of the deleted branch is still stored", k)
		}
	}
	checkIntegrity(t, s)
}

// TestDeleteBranchKeepsReachableTurns: a turn goes only if no remaining branch reaches it.
func TestDeleteBranchKeepsReachableTurns(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name      string
		setup     func(t *testing.T, s *Store) // main has 3 turns; fork "f" at 2 exists
		del       string
		recursive bool
		removed   int // turns deleted
	}{
		{name: "fork with no turns of its own", del: "f"},
		{name: "fork with turns", del: "f", removed: 2,
			setup: func(t *testing.T, s *Store) { appendN(t, s, "S", "f", 2) }},
		{name: "child fork goes with its parent", del: "f", recursive: true, removed: 3,
			setup: func(t *testing.T, s *Store) {
				appendN(t, s, "S", "f", 2)
				if _, err := s.Fork(ctx, "S", "f", "g", 3); err != nil {
					t.Fatal(err)
				}
				appendN(t, s, "S", "g", 1)
			}},
		{name: "turns a child fork shares stay when only the child goes", del: "g",
			setup: func(t *testing.T, s *Store) {
				appendN(t, s, "S", "f", 2)
				if _, err := s.Fork(ctx, "S", "f", "g", 4); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "turns on main's redo list stay", del: "f",
			setup: func(t *testing.T, s *Store) {
				if _, err := s.Undo(ctx, "S", MainBranch, 2); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "turns main abandoned by undo and a new turn go", del: "f", removed: 2,
			setup: func(t *testing.T, s *Store) {
				if _, err := s.Undo(ctx, "S", MainBranch, 2); err != nil {
					t.Fatal(err)
				}
				appendN(t, s, "S", MainBranch, 1)
			}},
		{name: "an interrupted turn of the deleted branch goes", del: "f", removed: 1,
			setup: func(t *testing.T, s *Store) {
				sink := s.Sink("S", "f")
				key, err := sink.BeginTurn(ctx, sig.NewMap("question", "q"))
				if err != nil {
					t.Fatal(err)
				}
				crash(t, s, sink, key)
				if _, err := s.PendingTurns(ctx); err != nil { // finds it, and keeps it as interrupted
					t.Fatal(err)
				}
			}},
		{name: "an in-flight turn of main stays", del: "f", removed: 1,
			setup: func(t *testing.T, s *Store) {
				appendN(t, s, "S", "f", 1)
				if _, err := s.Sink("S", MainBranch).BeginTurn(ctx, sig.NewMap("question", "q")); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := openTemp(t)
			mustConv(t, s, "S")
			appendN(t, s, "S", MainBranch, 3)
			if _, err := s.Fork(ctx, "S", MainBranch, "f", 2); err != nil {
				t.Fatal(err)
			}
			if c.setup != nil {
				c.setup(t, s)
			}
			before := rowCounts(t, s)
			pendingBefore, _ := s.PendingTurns(ctx)
			mainBefore := branchJSON(t, s, "S", MainBranch)
			if _, err := s.DeleteBranch(ctx, "S", c.del, c.recursive); err != nil {
				t.Fatal(err)
			}
			after := rowCounts(t, s)
			if got := before["turns"] - after["turns"]; got != c.removed {
				t.Errorf("%d turns deleted, want %d", got, c.removed)
			}
			if got := branchJSON(t, s, "S", MainBranch); got != mainBefore {
				t.Error("main changed")
			}
			pending, _ := s.PendingTurns(ctx)
			for _, p := range pending {
				if p.Branch == "" {
					t.Errorf("pending turn %s of a deleted branch is left", p.Key)
				}
			}
			if c.name == "an in-flight turn of main stays" && (len(pending) != 1 || len(pendingBefore) != 1) {
				t.Errorf("main's in-flight turn: %d before, %d after", len(pendingBefore), len(pending))
			}
			// Redo still works over what it lists (main with a turn in flight is busy).
			if _, err := s.Redo(ctx, "S", MainBranch, 10); err != nil && !(c.name == "an in-flight turn of main stays" && errors.Is(err, ErrBusy)) {
				t.Errorf("redo on main after delete: %v", err)
			}
			checkIntegrity(t, s)
		})
	}
}

// A branch or conversation with a turn in flight in a live process is not deleted under
// it: the process would lose the turn when it ends.
func TestDeleteRefusesTurnInFlight(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "S")
	appendN(t, s, "S", MainBranch, 2)
	if _, err := s.Fork(ctx, "S", MainBranch, "f", 1); err != nil {
		t.Fatal(err)
	}
	sink := s.Sink("S", "f")
	key, err := sink.BeginTurn(ctx, sig.NewMap("question", "q"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteBranch(ctx, "S", "f", false); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "was not deleted") {
		t.Errorf("delete the branch: %v", err)
	}
	if err := s.DeleteConversation(ctx, "S"); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "turn in flight") {
		t.Errorf("delete the conversation: %v", err)
	}
	if err := sink.AbortTurn(ctx, key, &trace.Turn{Status: trace.StatusCancelled}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteBranch(ctx, "S", "f", false); err != nil {
		t.Errorf("delete once the turn ended: %v", err)
	}
}

// A turn that has locked its branch's journal but not written it yet (it is reserving its
// id, reading the branch) is not seen by the journals' listing: the delete's own
// transaction takes the lock, so the branch is not deleted under the turn. Once the lock
// is free the delete goes through and removes the branch's journal.
func TestDeleteRefusesTurnBeginning(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		del  func(s *Store) error
	}{
		{"branch", func(s *Store) error { _, err := s.DeleteBranch(ctx, "S", "f", false); return err }},
		{"conversation", func(s *Store) error { return s.DeleteConversation(ctx, "S") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTemp(t)
			mustConv(t, s, "S")
			appendN(t, s, "S", MainBranch, 2)
			if _, err := s.Fork(ctx, "S", MainBranch, "f", 1); err != nil {
				t.Fatal(err)
			}
			b, err := s.Branch(ctx, "S", "f")
			if err != nil {
				t.Fatal(err)
			}
			j, _, err := s.tryRun(b.ID) // a turn beginning: locked, empty
			if err != nil || j == nil {
				t.Fatal(j, err)
			}
			if err := tc.del(s); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "not deleted") {
				t.Errorf("delete while a turn begins: %v", err)
			}
			if _, err := s.Branch(ctx, "S", "f"); err != nil {
				t.Errorf("the branch is gone: %v", err)
			}
			j.Close() // the turn gave up
			if err := tc.del(s); err != nil {
				t.Fatalf("delete once the journal is free: %v", err)
			}
			if _, err := os.Stat(s.runPath(b.ID)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the deleted branch's journal is left: %v", err)
			}
		})
	}
}
