package adapter

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
)

// withHistory is s with DSPy's history input appended.
func withHistory(s *sig.Signature) *sig.Signature {
	return s.AppendInput(sig.Field{Name: "history", Type: sig.THistory, Desc: "Conversation history"})
}

// wantHistory is what the history part of a request under s (its history field
// removed) must hold, from format_user_message_content and
// format_assistant_message_content as written for one message (userContent, the
// style's assistant), which keep nothing between calls.
func wantHistory(st style, s *sig.Signature, h sig.History) []lm.Message {
	s = s.WithoutInput(s.HistoryField())
	var out []lm.Message
	for _, m := range h.Messages {
		if u := userContent(st, s, m, "", false); u != "" {
			out = append(out, lm.Message{Role: "user", Content: u})
		}
		out = append(out, lm.Message{Role: "assistant", Content: st.assistant(s, m, nil)})
	}
	return out
}

// formatHistory formats a request under s whose history is h and returns its history
// messages (the system message and the final user message cut off).
func formatHistory(t *testing.T, ad Adapter, s *sig.Signature, h sig.History) []lm.Message {
	t.Helper()
	msgs, err := ad.Format(Request{Signature: s, Inputs: sig.NewMap("q", "now?", "history", h)})
	if err != nil {
		t.Fatal(err)
	}
	return msgs[1 : len(msgs)-1]
}

// TestRenderEntryIsUserAndAssistantContent: a history entry written into one buffer is
// byte for byte the two messages DSPy's functions build, above all where Python's strip
// cuts the joined sections (white space, Unicode spaces, invalid UTF-8 at the end).
func TestRenderEntryIsUserAndAssistantContent(t *testing.T) {
	sigs := map[string]*sig.Signature{
		"two in, two out": sig.New("S", "", []sig.Field{field("q", "str", ""), field("ctx", "str", "")},
			[]sig.Field{field("a", "str", ""), field("n", "int", "")}),
		"typed": sig.New("S", "", []sig.Field{field("q", "str", ""), field("tags", "list[str]", "")},
			[]sig.Field{field("ok", "bool", ""), field("m", "dict[str, Any]", ""), field("a", "str", "")}),
		"no outputs": sig.New("S", "", []sig.Field{field("q", "str", "")}, nil),
		"no inputs":  sig.New("S", "", nil, []sig.Field{field("a", "str", "")}),
	}
	values := []any{
		"plain", "", " ", "   \n\t", "trailing  \n", "\n\nlead", "x\u3000", "x\u00a0", "\u2028", "\u3000\u00a0",
		"x\x80", "\xe3\x80", "\x80 ", "\xff", "a\nb «c» \n", nil, int64(-3), 2.5, true, json.Number("123456789012345678901234567890"),
		[]any{}, []any{"one "}, []any{"a", "b\n "}, sig.NewMap("k", []any{int64(1), nil}),
	}
	names := []string{"q", "ctx", "a", "n", "tags", "ok", "m"}
	for sn, s := range sigs {
		for _, st := range []style{chatStyle{}, jsonStyle{}} {
			for i, v := range values {
				// Each value in every field at once, at the end (last of the present
				// fields), and alone, so each takes the place the strip reaches.
				entries := []*sig.Map{sig.NewMap(), sig.NewMap("other", "x")}
				for _, last := range names {
					e := sig.NewMap()
					for _, n := range names {
						if n != last {
							e.Set(n, "mid "+n+" ")
						}
					}
					e.Set(last, v)
					entries = append(entries, e, sig.NewMap(last, v))
				}
				for j, e := range entries {
					u, a := renderEntry(st, s, e)
					if wu := userContent(st, s, e, "", false); u != wu {
						t.Errorf("%s/%s/value %d/entry %d: user\n got %q\nwant %q", sn, st.name(), i, j, u, wu)
					}
					if wa := st.assistant(s, e, nil); a != wa {
						t.Errorf("%s/%s/value %d/entry %d: assistant\n got %q\nwant %q", sn, st.name(), i, j, a, wa)
					}
				}
			}
		}
	}
}

// FuzzRenderEntry: any text, in any field, renders as userContent and AssistantContent do.
func FuzzRenderEntry(f *testing.F) {
	for _, seed := range [][2]string{{"a", "b"}, {"x  \n", "\u3000"}, {"\x80", " \xe3"}, {"", "\n"}, {"«»", "a\nb"}} {
		f.Add(seed[0], seed[1])
	}
	s := sig.New("S", "", []sig.Field{field("q", "str", ""), field("c", "str", "")}, []sig.Field{field("a", "str", ""), field("b", "str", "")})
	f.Fuzz(func(t *testing.T, x, y string) {
		for _, e := range []*sig.Map{sig.NewMap("q", x, "c", y, "a", x, "b", y), sig.NewMap("c", x, "a", y), sig.NewMap("q", []any{x, y})} {
			u, a := renderEntry(chatStyle{}, s, e)
			if wu, wa := UserContent(s, e, "", false), AssistantContent(s, e, nil); u != wu || a != wa {
				t.Fatalf("entry %v:\n got %q %q\nwant %q %q", e, u, a, wu, wa)
			}
		}
	})
}

// TestHistoryRenderingNotStale: an entry rendered in one request and rendered again
// after what its texts depend on changed (the signature's fields, the adapter, the
// entry's own values) renders as if seen for the first time.
func TestHistoryRenderingNotStale(t *testing.T) {
	base := withHistory(sig.New("S", "", []sig.Field{field("q", "str", ""), field("ctx", "str", "")},
		[]sig.Field{field("a", "str", ""), field("n", "int", "")}))
	other := func(ins, outs []sig.Field) *sig.Signature { return withHistory(sig.New("S", "", ins, outs)) }
	cases := []struct {
		name        string
		entry       func() *sig.Map
		first, then Adapter
		sig         *sig.Signature
		change      func(*sig.Map) // applied to the entry after the first request
	}{
		{name: "an input dropped", sig: other([]sig.Field{field("q", "str", "")}, []sig.Field{field("a", "str", ""), field("n", "int", "")})},
		{name: "an input added", sig: other([]sig.Field{field("q", "str", ""), field("ctx", "str", ""), field("n", "str", "")}, []sig.Field{field("a", "str", "")})},
		{name: "inputs reordered", sig: other([]sig.Field{field("ctx", "str", ""), field("q", "str", "")}, []sig.Field{field("a", "str", ""), field("n", "int", "")})},
		{name: "an output dropped", sig: other([]sig.Field{field("q", "str", ""), field("ctx", "str", "")}, []sig.Field{field("a", "str", "")})},
		{name: "outputs reordered", sig: other([]sig.Field{field("q", "str", ""), field("ctx", "str", "")}, []sig.Field{field("n", "int", ""), field("a", "str", "")})},
		{name: "an input becomes an output", sig: other([]sig.Field{field("q", "str", "")}, []sig.Field{field("ctx", "str", ""), field("a", "str", "")})},
		{name: "a field renamed", sig: other([]sig.Field{field("q", "str", ""), field("ctx2", "str", "")}, []sig.Field{field("a", "str", ""), field("n", "int", "")})},
		{name: "a type changed", sig: other([]sig.Field{field("q", "str", ""), field("ctx", "list[str]", "")}, []sig.Field{field("a", "str", ""), field("n", "str", "")}),
			entry: func() *sig.Map { return sig.NewMap("q", "hi", "ctx", []any{"x", "y"}, "a", "ans", "n", int64(2)) }},
		{name: "chat then json", then: JSON{}},
		{name: "json then chat", first: JSON{}},
		{name: "a value set", change: func(m *sig.Map) { m.Set("a", "changed") }},
		{name: "a value set to the same text", change: func(m *sig.Map) { m.Set("a", "answer") }},
		{name: "a field added", change: func(m *sig.Map) { m.Set("ctx", "new context") }},
		{name: "a field deleted", change: func(m *sig.Map) { m.Delete("q") }},
		{name: "read from JSON", change: func(m *sig.Map) {
			if err := m.UnmarshalJSON([]byte(`{"q":"other","a":"x","n":7}`)); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a list changed in place",
			entry:  func() *sig.Map { return sig.NewMap("q", []any{"one", "two"}, "a", "ans") },
			change: func(m *sig.Map) { v, _ := m.Get("q"); v.([]any)[1] = "changed" }},
		{name: "a dict changed in place",
			entry:  func() *sig.Map { return sig.NewMap("q", sig.NewMap("k", "v"), "a", "ans") },
			change: func(m *sig.Map) { v, _ := m.Get("q"); v.(*sig.Map).Set("k", "changed") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.entry == nil {
				c.entry = func() *sig.Map { return sig.NewMap("q", "hi", "ctx", "c", "a", "answer", "n", int64(2)) }
			}
			if c.first == nil {
				c.first = Chat{}
			}
			if c.then == nil {
				c.then = c.first
			}
			if c.sig == nil {
				c.sig = base
			}
			h := sig.History{Messages: []*sig.Map{c.entry(), c.entry()}}
			first := formatHistory(t, c.first, base, h)
			compareMessages(t, first, wantHistory(styleFor(c.first), base, h))
			if c.change != nil {
				c.change(h.Messages[0])
			}
			compareMessages(t, formatHistory(t, c.then, c.sig, h), wantHistory(styleFor(c.then), c.sig, h))
			// and back: the first request's view again, the entries as they are now
			compareMessages(t, formatHistory(t, c.first, base, h), wantHistory(styleFor(c.first), base, h))
		})
	}
}

// styleFor is a's style (styleOf), for the adapters these tests use.
func styleFor(a Adapter) style {
	st, _ := styleOf(a)
	return st
}

// TestHistoryRenderingKept: an entry of plain values is rendered once, whatever the
// number of requests that repeat it; one holding a list or a dict (which can change
// without the map knowing) is not kept.
func TestHistoryRenderingKept(t *testing.T) {
	s := withHistory(sig.New("S", "", []sig.Field{field("q", "str", "")}, []sig.Field{field("a", "str", "")}))
	cases := []struct {
		entry *sig.Map
		kept  bool
	}{
		{sig.NewMap("q", "hi", "a", "ans"), true},
		{sig.NewMap("q", nil, "a", int64(1), "x", 2.5, "y", true, "z", json.Number("1")), true},
		{sig.NewMap("q", []any{"one"}, "a", "ans"), false},
		{sig.NewMap("q", "hi", "a", sig.NewMap("k", "v")), false},
	}
	for i, c := range cases {
		h := sig.History{Messages: []*sig.Map{c.entry}}
		formatHistory(t, Chat{}, s, h)
		r := c.entry.Rendering()
		if (r != nil) != c.kept {
			t.Fatalf("entry %d: rendering kept = %v, want %v", i, r != nil, c.kept)
		}
		formatHistory(t, Chat{}, s, h)
		if c.kept && c.entry.Rendering() != r {
			t.Errorf("entry %d: rendered again for a second request under the same signature", i)
		}
	}
}

// TestHistoryRenderingTwoKept: an entry shown in two ways in turn (the ChatAdapter and its
// JSON fallback) keeps both renderings, and never more than two.
func TestHistoryRenderingTwoKept(t *testing.T) {
	s := withHistory(sig.New("S", "", []sig.Field{field("q", "str", "")}, []sig.Field{field("a", "str", "")}))
	s2 := withHistory(sig.New("S", "", []sig.Field{field("q", "str", "")}, []sig.Field{field("b", "str", "")}))
	e := sig.NewMap("q", "hi", "a", "ans")
	h := sig.History{Messages: []*sig.Map{e}}
	steps := []struct {
		ad       Adapter
		s        *sig.Signature
		rendered bool // a new rendering is made
	}{
		{Chat{}, s, true}, {JSON{}, s, true}, {Chat{}, s, false}, {JSON{}, s, false},
		// a third: the older of the two goes
		{Chat{}, s2, true}, {JSON{}, s, false}, {Chat{}, s, true}, {Chat{}, s2, false}, {JSON{}, s, true},
	}
	for i, st := range steps {
		before := e.Rendering()
		compareMessages(t, formatHistory(t, st.ad, st.s, h), wantHistory(styleFor(st.ad), st.s, h))
		if got := e.Rendering() != before; got != st.rendered {
			t.Errorf("step %d (%s): rendered = %v, want %v", i, st.ad.Name(), got, st.rendered)
		}
		n := 0
		for r := e.Rendering(); r != nil; r = r.Next {
			n++
		}
		if n > 2 {
			t.Fatalf("step %d: %d renderings kept", i, n)
		}
	}
}

// TestHistoryRenderingConcurrent: requests formatted at once over one history, under two
// signatures, each get their own texts (run with -race).
func TestHistoryRenderingConcurrent(t *testing.T) {
	a := withHistory(sig.New("S", "", []sig.Field{field("q", "str", "")}, []sig.Field{field("a", "str", "")}))
	b := withHistory(sig.New("S", "", []sig.Field{field("q", "str", "")}, []sig.Field{field("b", "str", ""), field("a", "str", "")}))
	h := benchHistoryQA(50)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for i := range 8 {
		wg.Go(func() {
			s, ad := a, Adapter(Chat{})
			if i%2 == 1 {
				s = b
			}
			if i%4 >= 2 {
				ad = JSON{}
			}
			want := wantHistory(styleFor(ad), s, h)
			for range 20 {
				msgs, err := ad.Format(Request{Signature: s, Inputs: sig.NewMap("q", "now?", "history", h)})
				if err != nil {
					errs <- err.Error()
					return
				}
				for j, m := range msgs[1 : len(msgs)-1] {
					if m != want[j] {
						errs <- fmt.Sprintf("goroutine %d message %d: got %q, want %q", i, j, m.Content, want[j].Content)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestFormatAllocsFlatInHistory: once a history's entries have been rendered, a request
// allocates the same number of times at 10 entries as at 2,000 (its message list is one
// allocation): what it allocates grows with the history only by the list's own size.
func TestFormatAllocsFlatInHistory(t *testing.T) {
	s := benchSig()
	allocs := map[int]float64{}
	for _, n := range []int{10, 2000} {
		in := sig.NewMap("question", "The reset email never arrives", "history", benchHistory(n))
		req := Request{Signature: s, Inputs: in}
		if _, err := (Chat{}).Format(req); err != nil {
			t.Fatal(err)
		}
		allocs[n] = testing.AllocsPerRun(20, func() {
			if _, err := (Chat{}).Format(req); err != nil {
				t.Fatal(err)
			}
		})
	}
	if allocs[2000] != allocs[10] {
		t.Errorf("allocations per request: %v at 10 entries, %v at 2000; want the same", allocs[10], allocs[2000])
	}
}

func benchHistoryQA(n int) sig.History {
	h := sig.History{Messages: make([]*sig.Map, n)}
	for i := range h.Messages {
		h.Messages[i] = sig.NewMap("q", fmt.Sprintf("question %d: why was I charged twice?", i),
			"a", fmt.Sprintf("reply %d: the second charge is a pending authorisation.", i))
	}
	return h
}

// BenchmarkChatFormatHistory formats a request on a history of n entries: warm, every
// entry rendered by an earlier request (what each turn of a session meets), cached, its
// messages also in the predictor's RequestCache (what a session's calls meet), and cold,
// every entry new (a session's first request after it was restored). beyond-list-B/op
// is what a request allocates besides its message list: flat when warm (4 KB) but for
// the list's own rounding up to its size class (up to a page: 10 KB in all at 10,000
// entries, beside a 960 KB list).
func BenchmarkChatFormatHistory(b *testing.B) {
	s := benchSig()
	for _, n := range []int{100, 1000, 10000} {
		h := benchHistory(n)
		for _, mode := range []string{"warm", "cached", "cold"} {
			b.Run(fmt.Sprintf("turns=%d/%s", n, mode), func(b *testing.B) {
				in := sig.NewMap("question", "The reset email never arrives", "history", h)
				var cache *RequestCache
				if mode == "cached" {
					cache = &RequestCache{}
				}
				if mode != "cold" {
					if _, err := (Chat{}).Format(Request{Signature: s, Inputs: in, Cache: cache}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				var beyond uint64
				var m0, m1 runtime.MemStats
				for b.Loop() {
					b.StopTimer()
					if mode == "cold" {
						in.Set("history", h.Clone())
					}
					runtime.ReadMemStats(&m0)
					b.StartTimer()
					msgs, err := (Chat{}).Format(Request{Signature: s, Inputs: in, Cache: cache})
					b.StopTimer()
					if err != nil {
						b.Fatal(err)
					}
					runtime.ReadMemStats(&m1)
					beyond += m1.TotalAlloc - m0.TotalAlloc - uint64(cap(msgs))*uint64(unsafe.Sizeof(lm.Message{}))
					b.StartTimer()
				}
				b.ReportMetric(float64(beyond)/float64(b.N), "beyond-list-B/op")
			})
		}
	}
}
