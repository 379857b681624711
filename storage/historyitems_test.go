package storage

import (
	"context"
	"testing"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// A history entry the adapter rendered (sig.Rendering) is known unchanged while it
// carries that very rendering, so a commit does not compare its values; an entry changed
// in place (which drops its rendering, however soon the adapter renders it again) is
// stored as it is then, and one rendered again without a change as it was.
func TestHistoryEntriesUnderRenderings(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "x")
	render := func(m *sig.Map) { m.SetRendering(&sig.Rendering{Key: "chat", User: "u", Assistant: "a"}) }
	entries := make([]*sig.Map, 4)
	for i := range entries {
		entries[i] = sig.NewMap("question", "q"+string(rune('0'+i)), "answer", "a"+string(rune('0'+i)))
		render(entries[i])
	}
	const key = "h\x00agent"
	steps := []struct {
		name    string
		n       int
		prepare func()
		fast    bool // entry 0 is known unchanged without comparing its values
	}{
		{"first", 2, nil, false},
		{"grows", 3, nil, true},
		{"changed in place, rendered again", 3, func() { entries[0].Set("answer", "changed"); render(entries[0]) }, false},
		{"rendered again unchanged", 4, func() { render(entries[1]) }, true},
		{"changed in place, not rendered", 4, func() { entries[2].Set("answer", int64(7)) }, true},
	}
	var want []string
	for _, st := range steps {
		if st.prepare != nil {
			st.prepare()
		}
		if e := s.wc.entries[key]; len(e) > 0 && e[0].unchanged(entries[0]) != st.fast {
			t.Errorf("%s: entry 0 known unchanged: %v, want %v", st.name, !st.fast, st.fast)
		}
		c := &trace.Call{ID: "c1", Path: "agent", PredictorType: "Predict", Adapter: "chat", Model: "m",
			History: sig.History{Messages: append([]*sig.Map{}, entries[:st.n]...)}, Completion: "ok", Started: fixtureEpoch}
		want = append(want, toJSON(t, c.History))
		tr := &trace.Turn{Inputs: sig.NewMap("q", st.name), Outputs: sig.NewMap("a", "ok"), Calls: []*trace.Call{c}}
		if _, err := runTurn(ctx, s.Sink("x", MainBranch), tr); err != nil {
			t.Fatal(err)
		}
	}
	turns, err := s.LoadBranch(ctx, "x", MainBranch)
	if err != nil || len(turns) != len(steps) {
		t.Fatal(len(turns), err)
	}
	for i, st := range steps {
		if got := toJSON(t, turns[i].Calls[0].History); got != want[i] {
			t.Errorf("%s: stored %s, sent %s", st.name, got, want[i])
		}
	}
}
