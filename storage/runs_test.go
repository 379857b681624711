package storage

import (
	"context"
	"fmt"
	"testing"

	"github.com/sessionbench/sessionbench/core/trace"
)

// Requests and histories that keep a sliding window share their stored elements as
// unwindowed ones share their prefix: each turn adds a handful of list nodes, not the
// whole window again; every list comes back exactly, on a fork too, and after the branch
// that started the shared runs is deleted.
func TestWindowedListsShareRuns(t *testing.T) {
	ctx := context.Background()
	for _, window := range []int{0, 1, 3, 8} {
		t.Run(fmt.Sprintf("window=%d", window), func(t *testing.T) {
			s := openTemp(t)
			mustConv(t, s, "S")
			const n = 40
			want := make([]*trace.Turn, n)
			for i := range want {
				want[i] = fixtureTurn(i, window, true)
				if _, err := runTurn(ctx, s.Sink("S", MainBranch), want[i]); err != nil {
					t.Fatal(err)
				}
			}
			var nodes int
			if err := s.r.QueryRow("SELECT count(*) FROM list_nodes").Scan(&nodes); err != nil {
				t.Fatal(err)
			}
			// Three calls a turn, each a request and a history: an unwindowed request adds
			// three nodes (the previous answer, the new question, the request's last
			// message) and its history one; a windowed one about the same, plus once the
			// window's first copy.
			if limit := n*3*4 + 3*2*(2*window+2); nodes > limit {
				t.Errorf("%d list nodes for %d turns, want at most %d", nodes, n, limit)
			}
			got, err := s.LoadBranch(ctx, "S", MainBranch)
			if err != nil {
				t.Fatal(err)
			}
			if toJSON(t, got) != toJSON(t, want) {
				t.Fatal("windowed turns come back different")
			}
			// A fork whose runs continue nodes that only the other branch's later turn
			// made (a's turn n) stays whole when that branch is deleted: the sweep keeps
			// every node a run reaches.
			if _, err := s.Fork(ctx, "S", MainBranch, "a", n-1); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Fork(ctx, "S", MainBranch, "b", n-1); err != nil {
				t.Fatal(err)
			}
			if _, err := runTurn(ctx, s.Sink("S", "a"), fixtureTurn(n, window, true)); err != nil {
				t.Fatal(err)
			}
			b := append([]*trace.Turn(nil), want...)
			for i := n; i < n+5; i++ {
				tr := fixtureTurn(i, window, true)
				tr.Calls[1].Completion += " (on b)"
				if _, err := runTurn(ctx, s.Sink("S", "b"), tr); err != nil {
					t.Fatal(err)
				}
				b = append(b, tr)
			}
			if _, err := s.DeleteBranch(ctx, "S", "a", false); err != nil {
				t.Fatal(err)
			}
			got, err = s.LoadBranch(ctx, "S", "b")
			if err != nil || toJSON(t, got) != toJSON(t, b) {
				t.Fatalf("b after deleting a comes back different: %v", err)
			}
			// New turns after the sweep store and load exactly (the write cache forgot
			// what the sweep may have removed).
			for i := n + 5; i < n+8; i++ {
				b = append(b, fixtureTurn(i, window, true))
				if _, err := runTurn(ctx, s.Sink("S", "b"), b[i]); err != nil {
					t.Fatal(err)
				}
			}
			got, err = s.LoadBranch(ctx, "S", "b")
			if err != nil || toJSON(t, got) != toJSON(t, b) {
				t.Fatalf("b after the sweep comes back different: %v", err)
			}
			if err := s.IntegrityCheck(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
