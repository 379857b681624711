package storage

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/trace"
)

// walkUsage is the reference: the usage of every call of the loaded branch, summed in Go.
func walkUsage(t *testing.T, s *Store, conv, branch string) lm.Usage {
	t.Helper()
	turns, err := s.LoadBranch(context.Background(), conv, branch)
	if err != nil {
		t.Fatal(err)
	}
	var u lm.Usage
	for _, tr := range turns {
		trace.WalkCalls(tr.Calls, func(c *trace.Call, _ int) { u = u.Add(c.Usage) })
	}
	return u
}

func TestBranchUsage(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "usage.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustConv(t, s, "u")
	mustConv(t, s, "other")
	appendN(t, s, "u", MainBranch, 3)
	appendN(t, s, "other", MainBranch, 2) // another conversation must not leak in
	if _, err := s.Fork(ctx, "u", MainBranch, "f", 0); err != nil {
		t.Fatal(err)
	}
	appendN(t, s, "u", "f", 1)
	if _, err := s.CreateBranch(ctx, "u", "empty"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateBranch(ctx, "u", "undone"); err != nil {
		t.Fatal(err)
	}
	appendN(t, s, "u", "undone", 2)
	if _, err := s.Undo(ctx, "u", "undone", 1); err != nil {
		t.Fatal(err)
	}
	// A pending turn's recorded call is on no path yet.
	sink := s.Sink("u", MainBranch)
	pt := fixtureTurn(3, 0, false)
	key, err := sink.BeginTurn(ctx, pt.Inputs)
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.RecordCall(ctx, key, "", pt.Calls[1]); err != nil {
		t.Fatal(err)
	}

	got, err := s.BranchUsage(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	// Every fixture turn i has three calls of 100+i prompt and 20 completion tokens.
	turnUsage := func(i int) lm.Usage {
		return lm.Usage{PromptTokens: 3 * (100 + i), CompletionTokens: 60, TotalTokens: 3 * (120 + i)}
	}
	sum := func(idx ...int) lm.Usage {
		var u lm.Usage
		for _, i := range idx {
			t := turnUsage(i)
			u.PromptTokens += t.PromptTokens
			u.CompletionTokens += t.CompletionTokens
			u.TotalTokens += t.TotalTokens
		}
		return u
	}
	want := map[string]lm.Usage{
		MainBranch: sum(0, 1, 2),
		"f":        sum(0, 1), // main's turn 0, then its own turn 1
		"empty":    {},
		"undone":   sum(0),
	}
	if len(got) != len(want) {
		t.Fatalf("got %d branches %v, want %d", len(got), got, len(want))
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("branch %s: usage %+v, want %+v", name, got[name], w)
		}
		if ref := walkUsage(t, s, "u", name); got[name] != ref {
			t.Errorf("branch %s: usage %+v, but its loaded calls sum to %+v", name, got[name], ref)
		}
	}

	none, err := s.BranchUsage(ctx, "missing")
	if err != nil || len(none) != 0 {
		t.Fatalf("unknown conversation: %v, %v; want an empty map", none, err)
	}
}

// BenchmarkBranchUsage measures the per-pane totals on a 500-turn branch with a fork.
func BenchmarkBranchUsage(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "usage.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	mustConv(b, s, "u")
	appendN(b, s, "u", MainBranch, 500)
	if _, err := s.Fork(ctx, "u", MainBranch, "f", 250); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := s.BranchUsage(ctx, "u"); err != nil {
			b.Fatal(err)
		}
	}
}

// The totals follow the tip: a fork, undo, redo, a turn after an undo and a resumed
// turn (whose replayed call replaces the one recorded before the crash) each leave every
// branch's usage equal to the sum over its loaded calls.
func TestBranchUsageFollowsTip(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "u")
	check := func(step string, want map[string]int) {
		t.Helper()
		got, err := s.BranchUsage(ctx, "u")
		if err != nil {
			t.Fatal(err)
		}
		for name, prompt := range want {
			ref := walkUsage(t, s, "u", name)
			if got[name] != ref || ref.PromptTokens != prompt {
				t.Errorf("%s: branch %s usage %+v, loaded calls sum to %+v (want %d prompt tokens)", step, name, got[name], ref, prompt)
			}
		}
	}
	p := func(idx ...int) int { // prompt tokens of fixture turns: 3 calls of 100+i each
		n := 0
		for _, i := range idx {
			n += 3 * (100 + i)
		}
		return n
	}
	appendN(t, s, "u", MainBranch, 3)
	check("append", map[string]int{MainBranch: p(0, 1, 2)})
	if _, err := s.Fork(ctx, "u", MainBranch, "f", 1); err != nil {
		t.Fatal(err)
	}
	appendN(t, s, "u", "f", 1) // turn index 2 on f
	check("fork", map[string]int{MainBranch: p(0, 1, 2), "f": p(0, 1, 2)})
	if _, err := s.Undo(ctx, "u", MainBranch, 2); err != nil {
		t.Fatal(err)
	}
	check("undo", map[string]int{MainBranch: p(0), "f": p(0, 1, 2)})
	if _, err := s.Redo(ctx, "u", MainBranch, 1); err != nil {
		t.Fatal(err)
	}
	check("redo", map[string]int{MainBranch: p(0, 1)})
	if _, err := s.Undo(ctx, "u", MainBranch, 1); err != nil {
		t.Fatal(err)
	}
	appendN(t, s, "u", MainBranch, 2) // turns 1 and 2 again, new ones
	check("new turns after undo", map[string]int{MainBranch: p(0, 1, 2), "f": p(0, 1, 2)})

	// A crash after the first call, then a resume that records it again.
	tr := fixtureTurn(3, 0, false)
	crashed := s.Sink("u", MainBranch)
	key, err := crashed.BeginTurn(ctx, tr.Inputs)
	if err != nil {
		t.Fatal(err)
	}
	if err := crashed.RecordCall(ctx, key, "", tr.Calls[1]); err != nil {
		t.Fatal(err)
	}
	crash(t, s, crashed, key)
	check("pending", map[string]int{MainBranch: p(0, 1, 2)})
	sink := s.Sink("u", MainBranch)
	if err := sink.Resume(ctx, key); err != nil {
		t.Fatal(err)
	}
	if k, err := runTurn(ctx, sink, tr); err != nil || k != key {
		t.Fatalf("resumed turn %s (%v), want %s", k, err, key)
	}
	check("resume", map[string]int{MainBranch: p(0, 1, 2, 3), "f": p(0, 1, 2)})
}

// An estimated count (the server reported none) is stored with its call and marks every
// branch total it is part of; branches without it stay exact.
func TestUsageEstimateIsStored(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "e")
	appendN(t, s, "e", MainBranch, 1)
	est := fixtureTurn(1, 0, false)
	est.Calls[1].Usage = lm.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9, Estimated: true}
	if _, err := s.AppendTurn(ctx, "e", MainBranch, est); err != nil {
		t.Fatal(err)
	}
	appendN(t, s, "e", MainBranch, 1) // exact again, but the path holds an estimate
	if _, err := s.Fork(ctx, "e", MainBranch, "before", 0); err != nil {
		t.Fatal(err)
	}
	turns, err := s.LoadBranch(ctx, "e", MainBranch)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.BranchUsage(ctx, "e")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		got, want bool
	}{
		{"exact call", turns[1].Calls[0].Usage.Estimated, false},
		{"estimated call", turns[1].Calls[1].Usage.Estimated, true},
		{"later exact call", turns[2].Calls[1].Usage.Estimated, false},
		{"main total", got[MainBranch].Estimated, true},
		{"fork before the estimate", got["before"].Estimated, false},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: estimated = %v, want %v", c.name, c.got, c.want)
		}
	}
	for _, b := range []string{MainBranch, "before"} {
		if ref := walkUsage(t, s, "e", b); got[b] != ref {
			t.Errorf("branch %s: usage %+v, but its loaded calls sum to %+v", b, got[b], ref)
		}
	}
}
