package storage

import (
	"context"
	"path/filepath"
	"testing"
)

// Two stores on one database (two processes) taking turns on one branch, and a turn on
// another branch now and then: each turn takes the id its branch reserved, no id is
// taken twice, a branch's keys go up, and the counter moves only by the branches'
// blocks (a block serves 7 turns: the next is reserved when one is left).
func TestBranchTurnIDsAcrossStores(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ids.db")
	open := func() *Store {
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(), open()
	mustConv(t, a, "c")
	if _, err := a.CreateBranch(ctx, "c", "side"); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	last := map[string]int64{}
	const n = 24
	for i := 0; i < n; i++ {
		s, branch := a, MainBranch
		if i%2 == 1 {
			s = b
		}
		if i%5 == 4 {
			branch = "side"
		}
		length, err := s.BranchLen(ctx, "c", branch)
		if err != nil {
			t.Fatal(err)
		}
		key, err := runTurn(ctx, s.Sink("c", branch), fixtureTurn(length, 0, false))
		if err != nil {
			t.Fatalf("turn %d on %s: %v", i, branch, err)
		}
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		if seen[key] {
			t.Fatalf("turn %d on %s took id %s a second time", i, branch, key)
		}
		seen[key] = true
		id, err := parseTurnKey(key)
		if err != nil {
			t.Fatal(err)
		}
		if id <= last[branch] {
			t.Errorf("turn %d on %s is %d, after %d", i, branch, id, last[branch])
		}
		last[branch] = id
	}
	// main: 20 turns, 3 blocks; side: 4 turns, 1 block
	if got, want := nextTurnIDs(t, a), int64(1+4*idsPerReserve); got != want {
		t.Errorf("the counter is at %d after %d turns, want %d (four blocks)", got, n, want)
	}
}
