package storage

import (
	"context"
	"math/rand"
	"slices"
	"testing"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// callRef is one call of a stored turn, with the history LoadTurnsWith reads for it.
type callRef struct {
	key  string
	turn *trace.Turn
	id   string
	want string // the history as JSON
}

// storedCalls lists every call of the turns keys with its history as read alone.
func storedCalls(t *testing.T, s *Store, keys []string) []callRef {
	t.Helper()
	ctx := context.Background()
	var out []callRef
	bare, err := s.LoadTurnsWith(ctx, keys, LoadOptions{NoRequests: true, NoHistories: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, bt := range bare {
		trace.WalkCalls(bt.Calls, func(c *trace.Call, _ int) {
			ts, err := s.LoadTurnsWith(ctx, keys[i:i+1], LoadOptions{NoRequests: true, HistoryOf: c.ID})
			if err != nil {
				t.Fatal(err)
			}
			var h sig.History
			trace.WalkCalls(ts[0].Calls, func(lc *trace.Call, _ int) {
				if lc.ID == c.ID {
					h = lc.History
				}
			})
			out = append(out, callRef{key: keys[i], turn: bt, id: c.ID, want: toJSON(t, h)})
		})
	}
	return out
}

// TestHistoryReaderReadsWhatLoadReads holds CallHistory to LoadTurnsWith(HistoryOf) for
// every call of a branch, with and without a window (a head list or a run), whatever
// order the calls are read in: the lists kept are extended, never changed.
func TestHistoryReaderReadsWhatLoadReads(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		window int
		order  func([]callRef) []callRef
	}{
		{"forward", 0, func(c []callRef) []callRef { return c }},
		{"backward", 0, func(c []callRef) []callRef { slices.Reverse(c); return c }},
		{"shuffled", 0, func(c []callRef) []callRef {
			rand.New(rand.NewSource(7)).Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
			return c
		}},
		{"window", 3, func(c []callRef) []callRef { return c }},
		{"every call twice", 0, func(c []callRef) []callRef { return append(c, c...) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTemp(t)
			mustConv(t, s, "c")
			var keys []string
			for i := range 12 {
				k, err := s.AppendTurn(ctx, "c", MainBranch, fixtureTurn(i, tc.window, false))
				if err != nil {
					t.Fatal(err)
				}
				keys = append(keys, k)
			}
			calls := storedCalls(t, s, keys)
			r := s.NewHistoryReader()
			nonEmpty := 0
			for _, c := range tc.order(calls) {
				h, err := r.CallHistory(ctx, c.key, c.turn.Started, c.id)
				if err != nil {
					t.Fatal(err)
				}
				if got := toJSON(t, h); got != c.want {
					t.Fatalf("call %s of turn %s: got\n%s\nwant\n%s", c.id, c.key, got, c.want)
				}
				if len(h.Messages) > 0 {
					nonEmpty++
				}
			}
			if nonEmpty == 0 {
				t.Fatal("no call had a history: the test reads nothing")
			}
		})
	}
}

// TestHistoryReaderErrors: an unknown call, a turn key whose turn is another one (its
// start differs) and a malformed key are errors.
func TestHistoryReaderErrors(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "c")
	keys := appendN(t, s, "c", MainBranch, 2)
	ts, err := s.LoadTurnsWith(ctx, keys, restoreOpts)
	if err != nil {
		t.Fatal(err)
	}
	r := s.NewHistoryReader()
	for _, tc := range []struct {
		name, key, call string
		at              int
	}{
		{"unknown call", keys[1], "nope", 1},
		{"another turn's start", keys[1], ts[1].Calls[0].ID, 0},
		{"malformed key", "x", ts[1].Calls[0].ID, 1},
	} {
		if _, err := r.CallHistory(ctx, tc.key, ts[tc.at].Started, tc.call); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

var restoreOpts = LoadOptions{NoRequests: true, NoHistories: true}

// TestHistoryReaderSeesReusedNodes: after a conversation is deleted its list nodes are
// swept and their ids given to the next lists written; a reader that kept the old lists
// must read the new ones, not serve the old under the same ids.
func TestHistoryReaderSeesReusedNodes(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	r := s.NewHistoryReader()
	write := func(conv, prefix string) []callRef {
		mustConv(t, s, conv)
		var keys []string
		for i := range 6 {
			tr := fixtureTurn(i, 0, false)
			trace.WalkCalls(tr.Calls, func(c *trace.Call, _ int) {
				for _, m := range c.History.Messages {
					m.Set("question", prefix+m.String("question"))
				}
			})
			k, err := s.AppendTurn(ctx, conv, MainBranch, tr)
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k)
		}
		return storedCalls(t, s, keys)
	}
	nodes := func() map[int64]bool {
		out := map[int64]bool{}
		rows, err := s.r.QueryContext(ctx, "SELECT history_node FROM calls WHERE history_node IS NOT NULL")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			out[id] = true
		}
		return out
	}
	check := func(calls []callRef) {
		t.Helper()
		for _, c := range calls {
			h, err := r.CallHistory(ctx, c.key, c.turn.Started, c.id)
			if err != nil {
				t.Fatal(err)
			}
			if got := toJSON(t, h); got != c.want {
				t.Fatalf("call %s of turn %s: got\n%s\nwant\n%s", c.id, c.key, got, c.want)
			}
		}
	}
	check(write("a", "A: "))
	before := nodes()
	if err := s.DeleteConversation(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	b := write("b", "B: ")
	reused := 0
	for id := range nodes() {
		if before[id] {
			reused++
		}
	}
	if reused == 0 {
		t.Fatal("no list node id was reused: the test does not exercise stale lists")
	}
	slices.Reverse(b) // the longest lists first: they end at reused ids kept for a
	check(b)
}
