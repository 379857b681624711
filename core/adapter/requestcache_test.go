package adapter

import (
	"fmt"
	"runtime"
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
	// every list made stays what it was when it was made, whatever the cache did since
	type made struct {
		name string
		list lm.MessageList
		was  []lm.Message
	}
	var lists []made
	for _, st := range steps {
		st.change()
		l, _, err := FormatList(st.ad, Request{Signature: st.s, Inputs: sig.NewMap("question", "now?", "history", sig.History{Messages: h}), Cache: &c})
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got := l.Slice()
		lists = append(lists, made{st.name, l, got})
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
	for _, m := range lists {
		if !slices.Equal(m.list.Slice(), m.was) {
			t.Errorf("the list of %q changed after it was made", m.name)
		}
	}
}

// A request through the cache shares the cache's messages instead of copying them:
// what it allocates does not grow with the history (before, each request copied the
// history's messages, 96 KB at 1,000 entries).
func TestRequestCacheListsShareTheHistory(t *testing.T) {
	s := benchSig()
	perRequest := map[int]uint64{}
	for _, n := range []int{10, 2000} {
		var c RequestCache
		req := Request{Signature: s, Inputs: sig.NewMap("question", "q", "history", benchHistory(n)), Cache: &c}
		format := func() lm.MessageList {
			l, shared, err := FormatList(Chat{}, req)
			if err != nil || !shared {
				t.Fatalf("FormatList: %v, shared %v", err, shared)
			}
			return l
		}
		if l := format(); l.Len() != 2+2*n {
			t.Fatalf("%d messages for %d entries", l.Len(), n)
		}
		const runs = 50
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		for range runs {
			format()
		}
		runtime.ReadMemStats(&m1)
		perRequest[n] = (m1.TotalAlloc - m0.TotalAlloc) / runs
	}
	if perRequest[2000] > perRequest[10]+256 {
		t.Errorf("a request allocates %d bytes at 10 entries, %d at 2,000; want the same", perRequest[10], perRequest[2000])
	}
}

// TestRequestCacheConcurrent: requests of one predictor formatted at once (a session's
// call beside its RenderAhead) all come out whole, and stay so.
func TestRequestCacheConcurrent(t *testing.T) {
	s := benchSig()
	h := benchHistory(200)
	want, err := Chat{}.Format(Request{Signature: s, Inputs: sig.NewMap("question", "q", "history", h.Clone())})
	if err != nil {
		t.Fatal(err)
	}
	var c RequestCache
	var wg sync.WaitGroup
	got := make([]lm.MessageList, 8)
	for i := range got {
		wg.Go(func() {
			n := 100 + i*10 // histories of different lengths
			l, _, err := FormatList(Chat{}, Request{Signature: s, Inputs: sig.NewMap("question", "q", "history", sig.History{Messages: h.Messages[:n]}), Cache: &c})
			if err != nil {
				t.Error(err)
			}
			got[i] = l
		})
	}
	wg.Wait()
	// read once all are made: each list is still whole, whatever the others made the
	// cache do after it
	for i, l := range got {
		msgs := l.Slice()
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

// A demo changed in place shows in the next request through the cache, as without one.
func TestRequestCacheDemoChangedInPlace(t *testing.T) {
	s := benchSig()
	demo := sig.NewMap("question", "a demo question", "intent", "billing", "confidence", 0.5)
	var c RequestCache
	for _, intent := range []string{"billing", "technical"} {
		demo.Set("intent", intent)
		req := Request{Signature: s, Demos: []*sig.Map{demo}, Inputs: sig.NewMap("question", "q", "history", benchHistory(3))}
		want, err := Chat{}.Format(req)
		if err != nil {
			t.Fatal(err)
		}
		req.Cache = &c
		got, _, err := FormatList(Chat{}, req)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Slice(), want) {
			t.Errorf("demo intent %s: the request through the cache differs:\n got %q\nwant %q", intent, got.Slice(), want)
		}
	}
}
