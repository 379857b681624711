package adapter

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
)

// TestRequestCache: one predictor's requests through its RequestCache, as a session
// makes them (the history grows, an undo shortens it, an edit replaces an entry, an
// entry's values change, a list value changes in place, another signature, the JSON
// fallback), are byte for byte the requests formatted with no cache from copies of the
// entries that never had a rendering; and the cache holds the entries it may.
func TestRequestCache(t *testing.T) {
	s := benchSig()
	withOutputs := func(instructions, output string) *sig.Signature {
		return sig.New("ClassifyIntent", instructions, []sig.Field{field("question", "str", "")},
			[]sig.Field{field(output, "str", ""), field("confidence", "float", "")}).
			AppendInput(sig.Field{Name: "history", Type: sig.THistory})
	}
	entry := func(i int) *sig.Map {
		return sig.NewMap("question", fmt.Sprintf("question %d", i), "intent", "billing", "confidence", 0.5)
	}
	list := []any{"a", "b"}
	h := benchHistory(3).Messages
	var c RequestCache
	steps := []struct {
		name   string
		change func()
		ad     Adapter
		s      *sig.Signature
		cached int // entries the cache holds afterwards
	}{
		{"first request", func() {}, Chat{}, s, 3},
		{"two more turns", func() { h = append(h, entry(3), entry(4)) }, Chat{}, s, 5},
		{"an undo", func() { h = h[:4] }, Chat{}, s, 4},
		{"an edit of the third", func() { h = append(h[:2:2], entry(7), entry(8)) }, Chat{}, s, 4},
		{"an entry's values change", func() { h[1].Set("intent", "general") }, Chat{}, s, 4},
		{"a list value", func() { h = append(h, sig.NewMap("question", list, "intent", "general"), entry(9)) }, Chat{}, s, 4},
		{"the list changes in place", func() { list[0] = "changed" }, Chat{}, s, 4},
		{"another signature", func() {}, Chat{}, withOutputs("Other instructions.", "intent"), 4},
		{"a renamed output", func() {}, Chat{}, withOutputs("", "category"), 4},
		{"the JSON fallback", func() {}, JSON{}, s, 4},
		{"back to the chat adapter, one turn more", func() { h = append(h, entry(10)) }, Chat{}, s, 4},
		{"after the list entry is gone", func() { h = slices.Delete(h, 4, 5) }, Chat{}, s, 6},
	}
	for _, st := range steps {
		st.change()
		got, err := st.ad.Format(Request{Signature: st.s, Inputs: sig.NewMap("question", "now?", "history", sig.History{Messages: h}), Cache: &c})
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		want, err := st.ad.Format(Request{Signature: st.s, Inputs: sig.NewMap("question", "now?", "history", sig.History{Messages: h}.Clone())})
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: the request through the cache differs:\n got %q\nwant %q", st.name, got, want)
		}
		if len(c.maps) != st.cached || len(c.ends) != st.cached || st.cached > 0 && int(c.ends[st.cached-1]) != len(c.msgs) {
			t.Errorf("%s: the cache holds %d entries (%d ends, %d messages), want %d", st.name, len(c.maps), len(c.ends), len(c.msgs), st.cached)
		}
	}
}

// TestRequestCacheConcurrent: requests of one predictor formatted at once (a session's
// call beside its RenderAhead) all come out whole.
func TestRequestCacheConcurrent(t *testing.T) {
	s := benchSig()
	h := benchHistory(200)
	want, err := Chat{}.Format(Request{Signature: s, Inputs: sig.NewMap("question", "q", "history", h.Clone())})
	if err != nil {
		t.Fatal(err)
	}
	var c RequestCache
	var wg sync.WaitGroup
	got := make([][]lm.Message, 8)
	for i := range got {
		wg.Go(func() {
			n := 100 + i*10 // histories of different lengths
			msgs, err := Chat{}.Format(Request{Signature: s, Inputs: sig.NewMap("question", "q", "history", sig.History{Messages: h.Messages[:n]}), Cache: &c})
			if err != nil {
				t.Error(err)
			}
			got[i] = msgs
		})
	}
	wg.Wait()
	for i, msgs := range got {
		n := 100 + i*10
		// the system message, 2 messages an entry, then the question
		w := append(slices.Clone(want[:1+2*n]), want[len(want)-1])
		if !slices.Equal(msgs, w) {
			t.Errorf("request %d (%d entries) differs from the one formatted alone", i, n)
		}
	}
}

// A cache filled at once (a restored session's first request, or RenderAhead) leaves
// room for the entries the next requests add, one a turn (here 100 of them): filled to
// its capacity, one of the next requests would copy it whole.
func TestRequestCacheFillLeavesRoom(t *testing.T) {
	s := benchSig()
	h := benchHistory(1100)
	var c RequestCache
	format := func(n int) {
		t.Helper()
		if _, err := (Chat{}).Format(Request{Signature: s, Inputs: sig.NewMap("question", "q", "history", sig.History{Messages: h.Messages[:n]}), Cache: &c}); err != nil {
			t.Fatal(err)
		}
	}
	format(1000)
	first := &c.msgs[0]
	for n := 1001; n <= 1100; n++ {
		format(n)
	}
	if len(c.msgs) != 2200 || &c.msgs[0] != first {
		t.Fatalf("the cache holds %d messages, moved: %v", len(c.msgs), &c.msgs[0] != first)
	}
}
