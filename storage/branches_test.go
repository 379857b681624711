package storage

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/trace"
)

func branchMap(t *testing.T, s *Store, conv string) map[string]*Branch {
	t.Helper()
	bs, err := s.Branches(context.Background(), conv)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]*Branch{}
	for _, b := range bs {
		m[b.Name] = b
	}
	return m
}

// The behaviours of reference/hpd-agent-branches.md §3.7, in this project's form (turns
// instead of messages, shared instead of copied).
func TestForkRules(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "S")
	bs := branchMap(t, s, "S")
	if len(bs) != 1 || bs[MainBranch] == nil {
		t.Fatalf("new conversation branches: %v", bs)
	}

	// Forking an empty branch: only at 0, giving an empty branch.
	if _, err := s.Fork(ctx, "S", MainBranch, "e1", 1); err == nil || !strings.Contains(err.Error(), "must be 0") {
		t.Errorf("fork empty at 1: %v", err)
	}
	e0, err := s.Fork(ctx, "S", MainBranch, "e0", 0)
	if err != nil || e0.Length != 0 || e0.Tip != "" {
		t.Fatalf("fork empty at 0: %+v %v", e0, err)
	}
	if _, err := s.DeleteBranch(ctx, "S", "e0", false); err != nil {
		t.Fatal(err)
	}

	keys := appendN(t, s, "S", MainBranch, 3) // m0 m1 m2
	f1, err := s.Fork(ctx, "S", MainBranch, "f1", 1)
	if err != nil {
		t.Fatal(err)
	}
	if f1.Length != 2 || f1.Tip != keys[1] || f1.ForkedFrom != MainBranch || *f1.ForkIndex != 1 || f1.IsOriginal() || f1.ForkTurn != keys[1] {
		t.Errorf("f1 = %+v", f1)
	}
	path, _ := s.BranchPath(ctx, "S", "f1")
	if len(path) != 2 || path[0].Key != keys[0] || path[1].Key != keys[1] {
		t.Errorf("f1 path shares m0, m1: %+v", path)
	}
	if m := branchMap(t, s, "S")[MainBranch]; !reflect.DeepEqual(m.Children, []string{"f1"}) || !m.IsOriginal() {
		t.Errorf("main children %v", m.Children)
	}

	errCases := []struct {
		at   int
		name string
		msg  string
		want error
	}{
		{999, "x", "out of range (0-2)", ErrInvalid},
		{3, "x", "out of range (0-2)", ErrInvalid},
		{-1, "x", "cannot be negative", ErrInvalid},
		{0, "f1", "already exists", ErrConflict},
		{0, " ", "empty", ErrInvalid},
	}
	for _, tc := range errCases {
		if _, err := s.Fork(ctx, "S", MainBranch, tc.name, tc.at); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("fork at %d as %q: %v, want %q", tc.at, tc.name, err, tc.msg)
		}
	}
	if _, err := s.Fork(ctx, "S", "nope", "x", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown source: %v", err)
	}
	if _, err := s.Fork(ctx, "nope", MainBranch, "x", 0); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "conversation") {
		t.Errorf("unknown conversation: %v", err)
	}

	// Sibling groups: three forks of main at 0, one at 2.
	for _, n := range []string{"g1", "g2", "g3"} {
		if _, err := s.Fork(ctx, "S", MainBranch, n, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Fork(ctx, "S", MainBranch, "h1", 2); err != nil {
		t.Fatal(err)
	}
	bs = branchMap(t, s, "S")
	type sib struct {
		idx, total int
		prev, next string
	}
	want := map[string]sib{
		"g1": {1, 4, MainBranch, "g2"}, "g2": {2, 4, "g1", "g3"}, "g3": {3, 4, "g2", ""},
		"h1": {1, 2, MainBranch, ""}, "f1": {1, 2, MainBranch, ""},
	}
	for n, w := range want {
		b := bs[n]
		if got := (sib{b.SiblingIndex, b.TotalSiblings, b.PreviousSibling, b.NextSibling}); got != w {
			t.Errorf("%s siblings = %+v, want %+v", n, got, w)
		}
	}
	if g, _ := s.Siblings(ctx, "S", MainBranch, 0); !reflect.DeepEqual(g, []string{MainBranch, "g1", "g2", "g3"}) {
		t.Errorf("siblings at 0: %v", g)
	}

	// Multi-level ancestry; the source's own group position is not disturbed.
	appendN(t, s, "S", "f1", 1)
	if _, err := s.Fork(ctx, "S", "f1", "f2", 2); err != nil {
		t.Fatal(err)
	}
	bs = branchMap(t, s, "S")
	if !reflect.DeepEqual(bs["f2"].Ancestors, map[string]string{"0": MainBranch, "1": "f1"}) {
		t.Errorf("f2 ancestors %v", bs["f2"].Ancestors)
	}
	if bs["f1"].SiblingIndex != 1 || bs["f1"].TotalSiblings != 2 || bs["f2"].Length != 3 {
		t.Errorf("f1 %+v f2 %+v", bs["f1"], bs["f2"])
	}
}

func TestDeleteBranchRules(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "S")
	keys := appendN(t, s, "S", MainBranch, 2)
	for _, n := range []string{"fork-1", "fork-2", "fork-3"} {
		if _, err := s.Fork(ctx, "S", MainBranch, n, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Fork(ctx, "S", "fork-2", "kid-a", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fork(ctx, "S", "fork-2", "kid-b", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fork(ctx, "S", "kid-a", "grandkid", 0); err != nil {
		t.Fatal(err)
	}

	if _, err := s.DeleteBranch(ctx, "S", MainBranch, true); err == nil || !strings.Contains(err.Error(), "cannot delete the 'main' branch") {
		t.Errorf("delete main: %v", err)
	}
	if _, err := s.DeleteBranch(ctx, "S", "nope", false); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `branch "nope" not found in conversation "S"`) {
		t.Errorf("delete unknown: %v", err)
	}
	_, err := s.DeleteBranch(ctx, "S", "fork-2", false)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "with 2 child branches; delete children first: kid-a, kid-b") {
		t.Errorf("delete with children: %v", err)
	}
	if len(branchMap(t, s, "S")) != 7 {
		t.Fatal("a refused delete removed something")
	}
	deleted, err := s.DeleteBranch(ctx, "S", "fork-2", true)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(deleted, []string{"grandkid", "kid-a", "kid-b", "fork-2"}) {
		t.Errorf("recursive delete order %v, want depth-first children first", deleted)
	}
	bs := branchMap(t, s, "S")
	if bs["fork-1"].SiblingIndex != 1 || bs["fork-3"].SiblingIndex != 2 || bs["fork-3"].TotalSiblings != 3 ||
		bs["fork-1"].NextSibling != "fork-3" || bs["fork-3"].PreviousSibling != "fork-1" {
		t.Errorf("after deleting the middle sibling: fork-1 %+v fork-3 %+v", bs["fork-1"], bs["fork-3"])
	}
	if !reflect.DeepEqual(bs[MainBranch].Children, []string{"fork-1", "fork-3"}) {
		t.Errorf("main children %v", bs[MainBranch].Children)
	}
	// Other branches' turns are untouched.
	turns, err := s.LoadBranch(ctx, "S", MainBranch)
	if err != nil || len(turns) != 2 {
		t.Fatalf("main after delete: %d %v", len(turns), err)
	}
	if p, _ := s.BranchPath(ctx, "S", MainBranch); p[1].Key != keys[1] {
		t.Errorf("main path changed")
	}
	if _, err := s.DeleteBranch(ctx, "S", "fork-1", false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteBranch(ctx, "S", "fork-3", false); err != nil {
		t.Fatal(err)
	}
	if c := branchMap(t, s, "S")[MainBranch]; len(c.Children) != 0 || c.TotalSiblings != 1 {
		t.Errorf("main after deleting every fork: %+v", c)
	}
}

func TestUndoRedo(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "S")
	keys := appendN(t, s, "S", MainBranch, 5)
	tip := func() (string, int) {
		b, err := s.Branch(ctx, "S", MainBranch)
		if err != nil {
			t.Fatal(err)
		}
		return b.Tip, b.Redo
	}
	if u, err := s.Undo(ctx, "S", MainBranch, 0); err != nil || len(u) != 0 {
		t.Errorf("undo 0: %v %v", u, err)
	}
	u, err := s.Undo(ctx, "S", MainBranch, 2)
	if err != nil || !reflect.DeepEqual(u, []string{keys[4], keys[3]}) {
		t.Fatalf("undo 2 = %v %v", u, err)
	}
	if tp, r := tip(); tp != keys[2] || r != 2 {
		t.Errorf("after undo: tip %s redo %d", tp, r)
	}
	if u, _ := s.Undo(ctx, "S", MainBranch, 1); !reflect.DeepEqual(u, []string{keys[2]}) {
		t.Errorf("second undo %v", u)
	}
	r, err := s.Redo(ctx, "S", MainBranch, 2)
	if err != nil || !reflect.DeepEqual(r, []string{keys[2], keys[3]}) {
		t.Fatalf("redo 2 = %v %v", r, err)
	}
	if tp, n := tip(); tp != keys[3] || n != 1 {
		t.Errorf("after redo: tip %s redo %d", tp, n)
	}
	// Undo past the start empties the branch and deletes nothing.
	u, _ = s.Undo(ctx, "S", MainBranch, 100)
	if len(u) != 4 {
		t.Errorf("undo 100 undid %d", len(u))
	}
	if tp, _ := tip(); tp != "" {
		t.Errorf("tip after undoing everything: %q", tp)
	}
	tree, _ := s.TurnTree(ctx, "S")
	if len(tree) != 5 {
		t.Errorf("undo deleted turns: %d left", len(tree))
	}
	if r, _ := s.Redo(ctx, "S", MainBranch, 100); len(r) != 5 {
		t.Errorf("redo all: %v", r)
	}
	if tp, _ := tip(); tp != keys[4] {
		t.Errorf("tip after redo all %s", tp)
	}
	// A new turn after an undo clears the redo list.
	s.Undo(ctx, "S", MainBranch, 2)
	nk := appendN(t, s, "S", MainBranch, 1)
	if tp, n := tip(); tp != nk[0] || n != 0 {
		t.Errorf("after new turn: tip %s redo %d", tp, n)
	}
	if r, _ := s.Redo(ctx, "S", MainBranch, 1); len(r) != 0 {
		t.Errorf("redo after new turn: %v", r)
	}
	path, _ := s.BranchPath(ctx, "S", MainBranch)
	if len(path) != 4 || path[3].Key != nk[0] || path[3].Parent != keys[2] || path[3].Index != 3 {
		t.Errorf("new turn is a sibling of the undone one: %+v", path[3])
	}
	// The undo stack of one branch does not affect another.
	if _, err := s.Fork(ctx, "S", MainBranch, "b", 1); err != nil {
		t.Fatal(err)
	}
	s.Undo(ctx, "S", "b", 1)
	if _, n := tip(); n != 0 {
		t.Errorf("main redo changed by undo on b")
	}
}

// Level-ancestor lookups through jump pointers agree with walking parents.
func TestAncestorAtMatchesWalk(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "S")
	keys := appendN(t, s, "S", MainBranch, 70)
	tipID, _ := parseTurnKey(keys[len(keys)-1])
	for d := 0; d < 70; d++ {
		id, err := ancestorAt(ctx, s.r, tipID, d)
		if err != nil {
			t.Fatal(err)
		}
		if turnKey(id) != keys[d] {
			t.Fatalf("ancestor at %d = %d, want %s", d, id, keys[d])
		}
	}
}

// A sink remembers its branch's id between turns; when the name comes to name another
// branch (deleted and made again, its old id another branch's), the next turn goes to
// the branch the name names, and a conversation
// closed since takes no turn, its branch left free.
func TestSinkFollowsItsBranchName(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "c")
	if _, err := s.CreateBranch(ctx, "c", "b"); err != nil {
		t.Fatal(err)
	}
	sink := s.Sink("c", "b")
	if _, err := runTurn(ctx, sink, fixtureTurn(0, 0, false)); err != nil {
		t.Fatal(err)
	}
	old, err := s.Branch(ctx, "c", "b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteBranch(ctx, "c", "b", false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBranch(ctx, "c", "x"); err != nil { // takes the old id
		t.Fatal(err)
	}
	again, err := s.CreateBranch(ctx, "c", "b")
	if err != nil || again.ID == old.ID {
		t.Fatalf("branch made again: %+v, %v (the old one was %d)", again, err, old.ID)
	}
	key, err := runTurn(ctx, sink, fixtureTurn(0, 0, false))
	if err != nil {
		t.Fatalf("a turn on the branch made again: %v", err)
	}
	if br, err := s.Branch(ctx, "c", "b"); err != nil || br.Tip != key || br.Length != 1 {
		t.Fatalf("the branch made again: %+v, %v; want its first turn %s", br, err, key)
	}

	if err := s.SetStatus(ctx, "c", trace.StatusCompleted); err != nil {
		t.Fatal(err)
	}
	if _, err := sink.BeginTurn(ctx, nil); !errors.Is(err, ErrClosedSession) {
		t.Fatalf("a turn on a completed conversation: %v", err)
	}
	// refused, not busy: the refused turn let the branch go
	if _, err := s.Sink("c", "b").BeginTurn(ctx, nil); !errors.Is(err, ErrClosedSession) {
		t.Fatalf("another sink's turn on the completed conversation: %v", err)
	}
}
