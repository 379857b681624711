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
// While no map drops a rendering, a commit need not even read an entry's map.
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
	other := sig.NewMap("question", "another", "answer", "entry")
	render(other)
	const o = -1 // other
	steps := []struct {
		name    string
		hist    []int // entries, by index (o: other)
		prepare func()
		fast    bool // entry 0 is known unchanged without comparing its values
		// and without reading its map: no map dropped a rendering since the last commit
		// saw entry 0 (a change to any map that had one makes every entry read its map
		// once more)
		quiet bool
	}{
		{"first", []int{0, 1}, nil, false, false},
		{"grows", []int{0, 1, 2}, nil, true, true},
		{"changed in place, rendered again", []int{0, 1, 2}, func() { entries[0].Set("answer", "changed"); render(entries[0]) }, false, false},
		{"rendered again unchanged", []int{0, 1, 2, 3}, func() { render(entries[1]) }, true, true},
		{"changed in place, not rendered", []int{0, 1, 2, 3}, func() { entries[2].Set("answer", int64(7)) }, true, false},
		{"an undo: shorter", []int{0, 1}, nil, true, true},
		{"another entry where the undone ones were", []int{0, 1, o}, nil, true, true},
		{"and the next", []int{0, 1, o, 3}, nil, true, true},
	}
	var want []string
	for _, st := range steps {
		// the turn before's transaction has run (commitlater.go): its values are the
		// sink's until then, and the write cache is what it left
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		if st.prepare != nil {
			st.prepare()
		}
		if e := s.wc.entries[key]; len(e) > 0 && e[0].unchanged(entries[0]) != st.fast {
			t.Errorf("%s: entry 0 known unchanged: %v, want %v", st.name, !st.fast, st.fast)
		}
		if e := s.wc.entries[key]; len(e) > 0 && e[0].quiet(entries[0], sig.RenderingsDropped()) != st.quiet {
			t.Errorf("%s: entry 0 known unchanged without reading it: %v, want %v", st.name, !st.quiet, st.quiet)
		}
		var hist []*sig.Map
		for _, i := range st.hist {
			if i == o {
				hist = append(hist, other)
			} else {
				hist = append(hist, entries[i])
			}
		}
		c := &trace.Call{ID: "c1", Path: "agent", PredictorType: "Predict", Adapter: "chat", Model: "m",
			History: sig.History{Messages: hist}, Completion: "ok", Started: fixtureEpoch}
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
