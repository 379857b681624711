package storage

import (
	"context"
	"errors"
	"testing"
)

// TestBranchRowAndFreeName checks the one-branch reads the workbench refreshes after an
// undo, a redo or a fork against the listing of every branch they replace, the free
// names picked for new branches, and Locate with main found first or not at all.
func TestBranchRowAndFreeName(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "S")
	keys := appendN(t, s, "S", MainBranch, 4) // m0..m3
	if _, err := s.Undo(ctx, "S", MainBranch, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.ForkOnly(ctx, "S", MainBranch, "fork-2", 1); err != nil {
		t.Fatal(err)
	}
	side := appendN(t, s, "S", "fork-2", 2) // on fork-2 only
	if err := s.ForkOnly(ctx, "S", "fork-2", "forked", 3); err != nil {
		t.Fatal(err)
	}
	all := branchMap(t, s, "S")
	usage, err := s.BranchUsage(ctx, "S")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{MainBranch, "fork-2", "forked"} {
		b, err := s.BranchRow(ctx, "S", name)
		if err != nil {
			t.Fatal(err)
		}
		w := all[name]
		if b.Tip != w.Tip || b.Length != w.Length || b.Redo != w.Redo || b.ForkTurn != w.ForkTurn || b.ID != w.ID {
			t.Errorf("BranchRow(%s) = tip %s, %d turns, redo %d, fork turn %s; Branches says tip %s, %d turns, redo %d, fork turn %s",
				name, b.Tip, b.Length, b.Redo, b.ForkTurn, w.Tip, w.Length, w.Redo, w.ForkTurn)
		}
		u, err := s.BranchUsageOf(ctx, "S", name)
		if err != nil || u != usage[name] {
			t.Errorf("BranchUsageOf(%s) = %+v (%v), BranchUsage says %+v", name, u, err, usage[name])
		}
	}
	if all[MainBranch].Redo != 1 {
		t.Errorf("main redo %d, want 1 (the test needs a redo to compare)", all[MainBranch].Redo)
	}
	if _, err := s.BranchRow(ctx, "S", "nope"); err == nil {
		t.Error("BranchRow of a missing branch: no error")
	}
	if err := s.ForkOnly(ctx, "S", MainBranch, "empty", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Undo(ctx, "S", "empty", 1); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{MainBranch, "fork-2", "forked", "empty"} {
		tip, total, err := s.BranchTip(ctx, "S", name)
		tail, want, werr := s.BranchPathTail(ctx, "S", name, 1)
		if err != nil || werr != nil || total != want || (tip == nil) != (len(tail) == 0) {
			t.Fatalf("BranchTip(%s) = %+v, %d (%v); the path's tail is %+v, %d (%v)", name, tip, total, err, tail, want, werr)
		}
		if tip != nil && (tip.Key != tail[0].Key || tip.Index != tail[0].Index || !tip.Started.Equal(tail[0].Started)) {
			t.Errorf("BranchTip(%s) = %s at %d started %v; the path ends at %s at %d started %v", name,
				tip.Key, tip.Index, tip.Started, tail[0].Key, tail[0].Index, tail[0].Started)
		}
	}
	if _, _, err := s.BranchTip(ctx, "S", "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("BranchTip of a missing branch: %v, want ErrNotFound", err)
	}

	for _, tc := range []struct{ base, want string }{
		{"fork", "fork-3"},     // one fork-* name (fork-2): fork-2 is taken, so the next
		{"forked", "forked-1"}, // "forked" itself is not forked-<n>
		{"edit", "edit-1"},
	} {
		got, err := s.FreeBranchName(ctx, "S", tc.base)
		if err != nil || got != tc.want {
			t.Errorf("FreeBranchName(%s) = %q (%v), want %q", tc.base, got, err, tc.want)
		}
	}

	for _, tc := range []struct {
		key    string
		branch string
		index  int
	}{
		{keys[1], MainBranch, 1}, // on main: found first
		{keys[2], MainBranch, 2},
		{side[1], "fork-2", 3}, // on fork-2 and forked: the older one
	} {
		b, i, err := s.Locate(ctx, "S", tc.key)
		if err != nil || b != tc.branch || i != tc.index {
			t.Errorf("Locate(%s) = %s, %d (%v), want %s, %d", tc.key, b, i, err, tc.branch, tc.index)
		}
	}
	if _, _, err := s.Locate(ctx, "S", keys[3]); err == nil {
		t.Error("Locate of the undone turn: no error")
	}
}
