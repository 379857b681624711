package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// TestBranchWindows checks every paged read against the whole-branch reads it replaces,
// on a branch long enough for the jump pointers to skip (37 turns) and on a fork.
func TestBranchWindows(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "S")
	turns := make([]*trace.Turn, 37)
	for i := range turns {
		turns[i] = fixtureTurn(i, 4, true)
	}
	keys, err := s.AppendTurns(ctx, "S", MainBranch, turns)
	if err != nil || len(keys) != 37 {
		t.Fatal(len(keys), err)
	}
	if _, err := s.Fork(ctx, "S", MainBranch, "f", 20); err != nil {
		t.Fatal(err)
	}
	appendN(t, s, "S", "f", 5)
	for _, br := range []string{MainBranch, "f"} {
		path, err := s.BranchPath(ctx, "S", br)
		if err != nil {
			t.Fatal(err)
		}
		full, err := s.LoadBranch(ctx, "S", br)
		if err != nil {
			t.Fatal(err)
		}
		n, err := s.BranchLen(ctx, "S", br)
		if err != nil || n != len(path) {
			t.Fatalf("%s: BranchLen %d, path %d, %v", br, n, len(path), err)
		}
		for i, nd := range path {
			if nd.Index != i {
				t.Fatalf("%s: path[%d] has index %d", br, i, nd.Index)
			}
		}
		cases := []struct{ from, limit, wantFrom, wantLen int }{
			{0, 0, 0, n}, {0, 10, 0, 10}, {5, 1, 5, 1}, {n - 7, 50, n - 7, 7}, {n - 1, 1, n - 1, 1},
			{n, 10, n, 0}, {n + 5, 10, n, 0}, {13, 0, 13, n - 13},
			// a negative from counts from the end: -k, k is the last page of k turns
			{-3, 3, n - 3, 3}, {-3, 2, n - 3, 2}, {-50, 50, 0, n}, {-3, 0, n - 3, 3},
		}
		for _, c := range cases {
			name := fmt.Sprintf("%s[%d:+%d]", br, c.from, c.limit)
			got, total, err := s.BranchPathRange(ctx, "S", br, c.from, c.limit)
			if err != nil || total != n || len(got) != c.wantLen {
				t.Errorf("%s: %d turns of %d, %v", name, len(got), total, err)
				continue
			}
			if c.wantLen > 0 && toJSON(t, got) != toJSON(t, path[c.wantFrom:c.wantFrom+c.wantLen]) {
				t.Errorf("%s: window differs from BranchPath", name)
			}
			page, err := s.LoadBranchRange(ctx, "S", br, c.from, c.limit)
			if err != nil || page.From != c.wantFrom || page.Total != n || len(page.Keys) != c.wantLen {
				t.Errorf("%s: page %+v %v", name, page, err)
				continue
			}
			if c.wantLen > 0 && toJSON(t, page.Turns) != toJSON(t, full[c.wantFrom:c.wantFrom+c.wantLen]) {
				t.Errorf("%s: page turns differ from LoadBranch", name)
			}
			if len(page.Keys) > 0 {
				byKey, err := s.LoadTurns(ctx, page.Keys)
				if err != nil || toJSON(t, byKey) != toJSON(t, page.Turns) {
					t.Errorf("%s: LoadTurns differs: %v", name, err)
				}
			}
		}
		tail, total, err := s.BranchPathTail(ctx, "S", br, 4)
		if err != nil || total != n || toJSON(t, tail) != toJSON(t, path[n-4:]) {
			t.Errorf("%s: tail %d of %d %v", br, len(tail), total, err)
		}
		lean, err := s.LoadBranchWith(ctx, "S", br, LoadOptions{NoRequests: true})
		if err != nil || len(lean) != n {
			t.Fatal(len(lean), err)
		}
		for i := range full {
			want := full[i].Clone()
			trace.WalkCalls(want.Calls, func(c *trace.Call, _ int) {
				c.Messages, c.Completion, c.RawRequest, c.RawResponse = lm.MessageList{}, "", "", ""
			})
			if toJSON(t, lean[i]) != toJSON(t, want) {
				t.Fatalf("%s: NoRequests turn %d differs from LoadBranch without requests:\n%s\n%s", br, i, toJSON(t, lean[i]), toJSON(t, want))
			}
		}
		leaner, err := s.LoadBranchWith(ctx, "S", br, LoadOptions{NoRequests: true, NoHistories: true})
		if err != nil || len(leaner) != n {
			t.Fatal(len(leaner), err)
		}
		histories := 0
		for i := range lean {
			want := lean[i].Clone()
			trace.WalkCalls(want.Calls, func(c *trace.Call, _ int) {
				histories += len(c.History.Messages)
				c.History = sig.History{}
			})
			if toJSON(t, leaner[i]) != toJSON(t, want) {
				t.Fatalf("%s: NoHistories turn %d differs from NoRequests without histories:\n%s\n%s", br, i, toJSON(t, leaner[i]), toJSON(t, want))
			}
		}
		if histories == 0 {
			t.Fatalf("%s: the calls have no histories to leave out", br)
		}
		// HistoryOf reads one call's history: that call as NoRequests has it, the others
		// as NoHistories.
		for i := range lean {
			var first string
			trace.WalkCalls(lean[i].Calls, func(c *trace.Call, _ int) {
				if first == "" {
					first = c.ID
				}
			})
			one, err := s.LoadTurnsWith(ctx, []string{path[i].Key}, LoadOptions{NoRequests: true, HistoryOf: first})
			if err != nil {
				t.Fatal(err)
			}
			want := lean[i].Clone()
			trace.WalkCalls(want.Calls, func(c *trace.Call, _ int) {
				if c.ID != first {
					c.History = sig.History{}
				}
			})
			if toJSON(t, one[0]) != toJSON(t, want) {
				t.Fatalf("%s: HistoryOf %s, turn %d:\n%s\n%s", br, first, i, toJSON(t, one[0]), toJSON(t, want))
			}
		}
	}
	// LoadTurns keeps the order asked for and names an unknown key.
	rev := []string{keys[3], keys[1]}
	if ts, err := s.LoadTurns(ctx, rev); err != nil || ts[0].Index != 3 || ts[1].Index != 1 {
		t.Errorf("LoadTurns order: %v", err)
	}
	if _, err := s.LoadTurns(ctx, []string{keys[0], "99999"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("LoadTurns unknown key: %v", err)
	}
}

// TestTurnTreePages: the pages concatenate to TurnTree, tips marked, parents first.
func TestTurnTreePages(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "S")
	appendN(t, s, "S", MainBranch, 6)
	if _, err := s.Fork(ctx, "S", MainBranch, "f", 2); err != nil {
		t.Fatal(err)
	}
	appendN(t, s, "S", "f", 3)
	all, err := s.TurnTree(ctx, "S")
	if err != nil {
		t.Fatal(err)
	}
	var got []*TurnNode
	after := ""
	for pages := 0; ; pages++ {
		page, next, err := s.TurnTreePage(ctx, "S", after, 4)
		if err != nil || pages > 5 {
			t.Fatal(pages, err)
		}
		got = append(got, page...)
		if next == "" {
			break
		}
		after = next
	}
	if toJSON(t, got) != toJSON(t, all) || len(got) != 9 {
		t.Errorf("pages (%d turns) differ from TurnTree (%d)", len(got), len(all))
	}
	seen := map[string]bool{}
	for _, n := range got {
		if n.Parent != "" && !seen[n.Parent] {
			t.Errorf("turn %s comes before its parent %s", n.Key, n.Parent)
		}
		seen[n.Key] = true
	}
	if _, _, err := s.TurnTreePage(ctx, "S", "", 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("limit 0: %v", err)
	}
}

func TestLocate(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "c")
	mustConv(t, s, "other")
	main := appendN(t, s, "c", MainBranch, 3)
	if _, err := s.Fork(ctx, "c", MainBranch, "f", 1); err != nil {
		t.Fatal(err)
	}
	own := appendN(t, s, "c", "f", 1)
	if _, err := s.Fork(ctx, "c", "f", "g", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Undo(ctx, "c", MainBranch, 1); err != nil {
		t.Fatal(err)
	}
	foreign := appendN(t, s, "other", MainBranch, 1)
	for _, tc := range []struct {
		name, key, branch string
		index             int
		err               error
	}{
		{"on main", main[1], MainBranch, 1, nil},
		{"root", main[0], MainBranch, 0, nil},
		{"a fork's own turn, found on the fork first made", own[0], "f", 2, nil},
		{"undone", main[2], "", 0, ErrNotFound},
		{"another conversation's", foreign[0], "", 0, ErrNotFound},
		{"unknown", "999999", "", 0, ErrNotFound},
		{"not a key", "x", "", 0, ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, i, err := s.Locate(ctx, "c", tc.key)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Locate(%s) = %s, %d, %v; want %v", tc.key, b, i, err, tc.err)
				}
				return
			}
			if err != nil || b != tc.branch || i != tc.index {
				t.Fatalf("Locate(%s) = %s, %d, %v; want %s, %d", tc.key, b, i, err, tc.branch, tc.index)
			}
		})
	}
}

// The lean reads keep what restoring needs and drop the requests.
func TestLoadWithNoRequests(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "c")
	keys := appendN(t, s, "c", MainBranch, 3)
	full, err := s.LoadTurns(ctx, keys[1:])
	if err != nil {
		t.Fatal(err)
	}
	lean, err := s.LoadTurnsWith(ctx, keys[1:], LoadOptions{NoRequests: true})
	if err != nil || len(lean) != 2 {
		t.Fatal(len(lean), err)
	}
	page, err := s.LoadBranchRangeWith(ctx, "c", MainBranch, 0, 0, LoadOptions{NoRequests: true})
	if err != nil || len(page.Turns) != 3 || strings.Join(page.Keys, ",") != strings.Join(keys, ",") {
		t.Fatalf("page %+v, %v", page, err)
	}
	for i, l := range append(lean, page.Turns[1:]...) {
		f := full[i%2]
		lc, fc := l.Calls[1], f.Calls[1]
		if !lc.Messages.IsNil() || lc.Completion != "" || fc.Messages.Len() == 0 || fc.Completion == "" {
			t.Errorf("turn %d: lean call has %d messages and completion %q; full %d, %q", i, lc.Messages.Len(), lc.Completion,
				fc.Messages.Len(), fc.Completion)
		}
		if !py.Same(lc.Outputs, fc.Outputs) || lc.Usage != fc.Usage || !py.Same(l.Inputs, f.Inputs) ||
			len(l.Calls[0].Children) != 1 {
			t.Errorf("turn %d: lean load lost values", i)
		}
	}
}

// CountRequests counts what a loaded turn's leaf calls without an error count: the
// model requests undo reports as rolled back.
func TestCountRequests(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "S")
	var keys []string
	want := 0
	for i := range 4 {
		tr := fixtureTurn(i, 0, false) // a planner with a nested tool call, and an answer
		if i == 2 {
			tr.Calls[1].Error = "answer failed"
		}
		k, err := s.AppendTurn(ctx, "S", MainBranch, tr)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
		trace.WalkCalls(tr.Calls, func(c *trace.Call, _ int) {
			if len(c.Children) == 0 && c.Error == "" {
				want++
			}
		})
	}
	for _, ks := range [][]string{keys, keys[2:3], nil} {
		got, err := s.CountRequests(ctx, ks)
		exp := 0
		if len(ks) == len(keys) {
			exp = want
		} else if len(ks) == 1 {
			exp = 1 // the tool call; the answer failed
		}
		if err != nil || got != exp {
			t.Errorf("CountRequests(%v) = %d, %v; want %d", ks, got, err, exp)
		}
	}
	if want != 7 {
		t.Fatalf("fixture has %d requests, want 7", want)
	}
}

// Each lean read is the full read less exactly what it leaves out, calls in the same
// tree and order: siblings that started at the same instant stay in the order they were
// recorded, a failed call keeps its error, a recovered one its mark.
func TestLeanReadsLeaveOutOnlyWhatTheySay(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "c")
	mk := func(i int) *trace.Turn {
		tr := fixtureTurn(i, 2, true)
		score := 0.5
		tr.Calls[1].Score, tr.Calls[1].Tries = &score, []lm.Try{{N: 1, Status: 429, Err: "429 Too Many Requests"}, {N: 2}}
		if i == 1 {
			tr.Calls[1].Error, tr.Calls[1].Outputs = "answer failed", nil
			tr.Calls[0].Recovered = trace.RecoveredInexact
		}
		// three siblings that started together, recorded z, a, m
		for _, id := range []string{"z", "a", "m"} {
			c := fixtureCall(i, 9, "agent.side", 0, false)
			c.ID, c.Started = "side-"+id, tr.Calls[1].Started
			tr.Calls = append(tr.Calls, c)
		}
		return tr
	}
	var keys []string
	for i := range 3 {
		k, err := s.AppendTurn(ctx, "c", MainBranch, mk(i))
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	// and a turn in flight, read from its journal
	k, err := recordCalls(ctx, s.Sink("c", MainBranch), mk(3))
	if err != nil {
		t.Fatal(err)
	}
	keys = append(keys, k)
	full, err := s.LoadTurns(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		o     LoadOptions
		leave func(c *trace.Call)
	}{
		{"requests", LoadOptions{NoRequests: true}, func(c *trace.Call) {
			c.Messages, c.Completion, c.RawRequest, c.RawResponse = lm.MessageList{}, "", "", ""
		}},
		{"requests and histories", LoadOptions{NoRequests: true, NoHistories: true}, func(c *trace.Call) {
			c.Messages, c.Completion, c.RawRequest, c.RawResponse, c.History = lm.MessageList{}, "", "", "", sig.History{}
		}},
		{"values only", LoadOptions{ValuesOnly: true}, func(c *trace.Call) {
			c.Messages, c.Completion, c.RawRequest, c.RawResponse, c.History = lm.MessageList{}, "", "", "", sig.History{}
			c.Usage, c.Params, c.Tries, c.Score = lm.Usage{}, lm.Params{}, nil, nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.LoadTurnsWith(ctx, keys, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			for i := range keys {
				want := full[i].Clone()
				trace.WalkCalls(want.Calls, func(c *trace.Call, _ int) { tc.leave(c) })
				if g, w := toJSON(t, got[i]), toJSON(t, want); g != w {
					t.Errorf("turn %d:\n got %s\nwant %s", i, g, w)
				}
				var ids []string
				for _, c := range got[i].Calls {
					ids = append(ids, c.ID)
				}
				if want := fmt.Sprintf("t%d.c1,t%d.c3,side-z,side-a,side-m", i, i); strings.Join(ids, ",") != want {
					t.Errorf("turn %d: calls %s, want %s", i, strings.Join(ids, ","), want)
				}
			}
			if got[1].Calls[1].Error != "answer failed" || got[1].Calls[0].Recovered != trace.RecoveredInexact || got[0].Calls[0].Children[0].ID != "t0.c2" {
				t.Errorf("turn 1 lost its failed call's error, its recovered mark or a child")
			}
		})
	}
}
