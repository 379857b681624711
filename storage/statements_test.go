package storage

import (
	"context"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/trace"
)

// A turn's transaction is its statements, 10-100 µs each on this driver, so a turn runs
// few: under a sliding window each stored list is looked up once (its run goes on from
// the previous list's; below a node just inserted there is nothing to look up), and the
// turn's row is read and written once each. The last turn sent again after an undo
// finds every node of its lists, and another turn in its place the nodes it shares with
// them. Every turn comes back as it was sent.
func TestWindowedTurnStatements(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "x")
	sink := s.Sink("x", MainBranch)
	const window, n = 4, 16
	// Steady state for fixtureTurn's three calls (six lists), two more on a turn that
	// reserves its branch's next block of turn ids (turnids.go): 65-66 before lists were
	// looked up once each and the turn's row read and updated once, 48 before the tip's
	// move checked the branch itself (advanceTip), 47 before the turn's row was written
	// once (commitNewTurn), 46 before the node of a text just stored was no longer
	// looked up, 44 with the block counted in.
	const maxStatements, reserving = 43, 2
	nodes := func() int { return listNodes(t, s) }
	reserved := 0
	for i := 0; i < n; i++ {
		next0 := nextTurnIDs(t, s) // a read: it waits for the turn before's transaction
		ran0 := s.wc.ran.Load()
		if _, err := runTurn(ctx, sink, fixtureTurn(i, window, false)); err != nil {
			t.Fatal(err)
		}
		limit := int64(maxStatements)
		if nextTurnIDs(t, s) != next0 {
			limit += reserving
			reserved++
		}
		if ran := s.wc.ran.Load() - ran0; i > 2*window && ran > limit {
			t.Errorf("turn %d ran %d statements; want at most %d", i, ran, limit)
		}
	}
	if reserved != 3 { // the first turn's block, then a block every 6 turns
		t.Errorf("%d of %d turns reserved turn ids; want 3", reserved, n)
	}
	again := func(tr *trace.Turn) {
		t.Helper()
		if _, err := s.Undo(ctx, "x", MainBranch, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := runTurn(ctx, sink, tr); err != nil {
			t.Fatal(err)
		}
	}
	before := nodes()
	again(fixtureTurn(n-1, window, false))
	if after := nodes(); after != before {
		t.Errorf("sending the undone turn again stored %d list nodes more", after-before)
	}
	// another last turn, then the first one again: its lists' nodes are all found
	other := fixtureTurn(n-1, window, false)
	other.Calls[1].Messages = other.Calls[1].Messages.Concat(lm.MessagesOf([]lm.Message{{Role: "user", Content: "one more"}}))
	again(other)
	grown := nodes() - before
	again(fixtureTurn(n-1, window, false))
	if after := nodes() - before; after != grown {
		t.Errorf("sending the first last turn again stored %d list nodes more", after-grown)
	}
	sentAsFixture(t, s, "x", n, window)
}

// Turns sent again after an undo of several turns, under a sliding window, find the
// nodes their windows were stored with (the write cache keeps the run a little before the
// last window), and come back as they were sent.
func TestUndoneWindowsSentAgainShareNodes(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "x")
	sink := s.Sink("x", MainBranch)
	const window, n = 4, 16
	for i := range n {
		if _, err := runTurn(ctx, sink, fixtureTurn(i, window, false)); err != nil {
			t.Fatal(err)
		}
	}
	nodes := func() int { return listNodes(t, s) }
	for _, undo := range []int{1, 2, 3, 5, 8} { // the code before stored 0, 41, 48, 72 and 100 nodes again
		before := nodes()
		if _, err := s.Undo(ctx, "x", MainBranch, undo); err != nil {
			t.Fatal(err)
		}
		for i := n - undo; i < n; i++ {
			if _, err := runTurn(ctx, sink, fixtureTurn(i, window, false)); err != nil {
				t.Fatal(err)
			}
		}
		if added := nodes() - before; added != 0 {
			t.Errorf("undo %d, the same turns sent again: %d list nodes stored again", undo, added)
		}
	}
	sentAsFixture(t, s, "x", n, window)
}

// listNodes is how many list nodes s holds.
func listNodes(t *testing.T, s *Store) (c int) {
	t.Helper()
	if err := s.r.QueryRowContext(context.Background(), "SELECT count(*) FROM list_nodes").Scan(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

// sentAsFixture checks that the main branch of conv holds n turns, each's calls as
// fixtureTurn(i, window) made them.
func sentAsFixture(t *testing.T, s *Store, conv string, n, window int) {
	t.Helper()
	turns, err := s.LoadBranch(context.Background(), conv, MainBranch)
	if err != nil || len(turns) != n {
		t.Fatal(len(turns), err)
	}
	for i, got := range turns {
		if g, w := toJSON(t, got.Calls), toJSON(t, fixtureTurn(i, window, false).Calls); g != w {
			t.Fatalf("turn %d comes back different:\n got %s\nwant %s", i, g, w)
		}
	}
}
