package storage

import (
	"context"
	"testing"
)

// WarmBranch caches the tip turn's stored lists, writing nothing: a fresh store then
// commits the next turn without looking its shared prefix up, and stores it exactly.
func TestWarmBranch(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		turns int // on the branch before
	}{{"empty branch", 0}, {"one turn", 1}, {"long branch", 40}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := reopenedWith(t, tc.turns)
			before := dump(t, s)
			if err := s.WarmBranch(ctx, "S", MainBranch); err != nil {
				t.Fatal(err)
			}
			if after := dump(t, s); after != before {
				t.Fatal("WarmBranch changed the database")
			}
			for _, l := range []struct {
				key       string
				fromTurns int // the tip's list is empty before (turn 0 has no history)
			}{{"m\x00agent.answer", 1}, {"h\x00agent.answer", 2}, {"m\x00agent.planner.tool", 1}} {
				got := s.wc.path(l.key)
				if (got.l.Len() > 0) != (tc.turns >= l.fromTurns) || got.l.Len() != got.nodes.len() {
					t.Errorf("%q: %d items, %d nodes cached after %d turns", l.key, got.l.Len(), got.nodes.len(), tc.turns)
				}
				// a history's entries with the values they render (the commit renders none again)
				if e := s.wc.entries[l.key]; l.key[0] == 'h' && len(e) != got.l.Len() {
					t.Errorf("%q: %d entries kept for %d items", l.key, len(e), got.l.Len())
				}
			}
			nextReadsBack(t, s, tc.turns)
		})
	}
}

// A closed store warms no branch (the workbench may prefetch as it quits).
func TestWarmBranchAfterClose(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "S")
	appendN(t, s, "S", MainBranch, 2)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.WarmBranch(ctx, "S", MainBranch); err != nil {
		t.Errorf("WarmBranch on a closed store: %v", err)
	}
}

// WarmBranch caches what it checked: a stored list whose hashes are not those of its
// elements (a damaged file) is left out, the others are cached, and the next turn is
// stored exactly all the same.
func TestWarmBranchLeavesOutADamagedList(t *testing.T) {
	ctx := context.Background()
	s := reopenedWith(t, 3)
	// the node before the last of the tip's request to agent.answer
	if _, err := s.w.ExecContext(ctx, `UPDATE list_nodes SET hash = x'0102030405060708' WHERE id = (
		SELECT l.parent_id FROM calls c JOIN branches b ON b.tip_id = c.turn_id JOIN list_nodes l ON l.id = c.messages_node
		WHERE b.name = ? AND c.path = 'agent.answer')`, MainBranch); err != nil {
		t.Fatal(err)
	}
	if err := s.WarmBranch(ctx, "S", MainBranch); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]bool{"m\x00agent.answer": false, "h\x00agent.answer": true, "m\x00agent.planner.tool": true} {
		if got := s.wc.path(key).l.Len() > 0; got != want {
			t.Errorf("%q cached: %v, want %v", key, got, want)
		}
	}
	nextReadsBack(t, s, 3)
}

// nextReadsBack runs the fixture's next turn (index n) on conversation S's main branch
// and checks that each of its calls reads back as sent.
func nextReadsBack(t *testing.T, s *Store, n int) {
	t.Helper()
	ctx := context.Background()
	next := fixtureTurn(n, 0, false)
	key, err := runTurn(ctx, s.Sink("S", MainBranch), next)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.LoadTurn(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range next.Calls {
		if toJSON(t, got.Calls[i].Messages) != toJSON(t, c.Messages) || toJSON(t, got.Calls[i].History) != toJSON(t, c.History) {
			t.Errorf("call %s does not read back as sent", c.Path)
		}
	}
}

// reopenedWith is a store with n turns on conversation S's main branch, opened anew (as a
// new process opens it: its caches empty); closed when the test ends.
func reopenedWith(t *testing.T, n int) *Store {
	t.Helper()
	s, err := Open(context.Background(), branchFile(t, n))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// branchFile is the path of a closed database with n turns on conversation S's main
// branch.
func branchFile(tb testing.TB, n int) string {
	tb.Helper()
	first := openTemp(tb)
	mustConv(tb, first, "S")
	appendN(tb, first, "S", MainBranch, n)
	first.Close()
	return first.Path()
}

// WarmBranchSmall caches the lists of the tip's calls too small to be seeded (seedFrom)
// and leaves out the others, which a turn's calls seed as they begin.
func TestWarmBranchSmall(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		turns  int
		cached bool
	}{{3, true}, {40, false}} { // calls of about 3x the turns' elements
		s := reopenedWith(t, tc.turns)
		if err := s.WarmBranchSmall(ctx, "S", MainBranch); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"m\x00agent.answer", "h\x00agent.answer", "m\x00agent.planner.tool"} {
			if got := s.wc.path(key).l.Len() > 0; got != tc.cached {
				t.Errorf("%d turns: %q cached: %v, want %v", tc.turns, key, got, tc.cached)
			}
		}
		nextReadsBack(t, s, tc.turns)
	}
}
