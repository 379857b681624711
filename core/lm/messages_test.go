package lm

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// conversation is the requests a predictor sends over turns: a system message, demos,
// the last window turns (all when window is 0) as user/assistant pairs, and the
// current input, each history text rendered once and shared, as the ChatAdapter's are.
// The answers all read the same (a classifier's) when same is set.
func conversation(turns, window, demos int, same ...bool) [][]Message {
	sys := Message{Role: "system", Content: "Your input fields are: `question` (str)."}
	var fixed []Message
	for d := range demos {
		fixed = append(fixed, Message{Role: "user", Content: fmt.Sprintf("demo %d", d)}, Message{Role: "assistant", Content: "ok"})
	}
	var hist []Message
	out := make([][]Message, turns)
	for i := range out {
		h := hist
		if window > 0 && len(h) > 2*window {
			h = h[len(h)-2*window:]
		}
		req := append([]Message{sys}, fixed...)
		req = append(req, h...)
		req = append(req, Message{Role: "user", Content: fmt.Sprintf("[[ ## question ## ]]\nq%d\n\nRespond with ...", i)})
		out[i] = req
		hist = append(hist, Message{Role: "user", Content: fmt.Sprintf("[[ ## question ## ]]\nq%d", i)},
			Message{Role: "assistant", Content: fmt.Sprintf("[[ ## answer ## ]]\na%d", i)})
		if len(same) > 0 && same[0] {
			hist[len(hist)-1].Content = "[[ ## intent ## ]]\nbilling"
		}
	}
	return out
}

// copiedTexts is reqs with every text a copy of its own: equal, but never at the same
// address as another request's.
func copiedTexts(reqs [][]Message) [][]Message {
	out := make([][]Message, len(reqs))
	for i, r := range reqs {
		out[i] = make([]Message, len(r))
		for j, m := range r {
			out[i][j] = Message{Role: strings.Clone(m.Role), Content: strings.Clone(m.Content), Extra: strings.Clone(m.Extra)}
		}
	}
	return out
}

func TestMessageLogListsEqualTheirRequests(t *testing.T) {
	dup := []Message{{Role: "system", Content: "s"}, {Role: "user", Content: "x"}, {Role: "assistant", Content: "y"},
		{Role: "user", Content: "x"}, {Role: "assistant", Content: "y"}, {Role: "user", Content: "now"}}
	cases := []struct {
		name string
		reqs [][]Message
	}{
		{"growing history", conversation(200, 0, 0)},
		{"window of 4 with demos", conversation(300, 4, 2)},
		{"window of 1", conversation(300, 1, 0)},
		{"answers that repeat", conversation(300, 0, 1, true)},
		{"texts copied anew for each request", copiedTexts(conversation(300, 0, 1))},
		{"window over answers that repeat", conversation(300, 3, 0, true)},
		{"repeated messages", [][]Message{dup, dup, append(slices.Clone(dup[:5]), Message{Role: "user", Content: "x"}, dup[5])}},
		{"one message", [][]Message{{{Role: "user", Content: "a"}}, {{Role: "user", Content: "a"}}}},
		{"extra keys tell messages apart", [][]Message{
			{{Role: "user", Content: "a"}, {Role: "user", Content: "b"}},
			{{Role: "user", Content: "a", Extra: `{"name":"x"}`}, {Role: "user", Content: "b"}},
		}},
		{"a request that changes the past", [][]Message{
			{{Role: "system", Content: "s"}, {Role: "user", Content: "1"}, {Role: "user", Content: "2"}},
			{{Role: "system", Content: "t"}, {Role: "user", Content: "1"}, {Role: "user", Content: "3"}, {Role: "user", Content: "4"}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var g MessageLog
			var lists []MessageList
			for i, req := range tc.reqs {
				l := g.List(req)
				if got := l.Slice(); !slices.Equal(got, req) || l.Len() != len(req) {
					t.Fatalf("request %d: list holds %v, want %v", i, got, req)
				}
				lists = append(lists, l)
			}
			// A later request never changes an earlier list.
			for i, l := range lists {
				if !slices.Equal(l.Slice(), tc.reqs[i]) {
					t.Fatalf("request %d changed after later ones: %v", i, l.Slice())
				}
			}
		})
	}
}

// TestMessageLogShares checks the point of the log: consecutive requests share their
// history instead of each holding a copy.
func TestMessageLogShares(t *testing.T) {
	cases := []struct {
		name         string
		window       int
		same         bool // every answer the same text
		wantRuns     int  // of a list after the first few: the shared ones and the input
		wantLogBound int  // messages the log holds at most after 1,000 turns
	}{
		{"growing history: one run and the input", 0, false, 2, 2000},
		{"window: system, window, input", 4, false, 2, 64 + 2*9},
		{"growing history of answers that repeat", 0, true, 2, 2000},
		{"window over answers that repeat", 4, true, 2, 64 + 2*9},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reqs := conversation(1000, tc.window, 0, tc.same)
			var g MessageLog
			arrays := map[*Message]bool{}
			for i, req := range reqs {
				l := g.List(req)
				if i > 10 {
					if len(l.runs) > tc.wantRuns+1 {
						t.Fatalf("request %d is cut in %d runs, want at most %d", i, len(l.runs), tc.wantRuns+1)
					}
				}
				arrays[unsafe.SliceData(l.runs[0])] = true
			}
			// Without a window the log's array moves when appending outgrows it (a new
			// array for each growth of a quarter at this size), not once per request.
			if tc.window == 0 && len(arrays) > 40 {
				t.Fatalf("1,000 requests refer to %d arrays, want at most 40", len(arrays))
			}
			if len(g.msgs) > tc.wantLogBound {
				t.Fatalf("the log holds %d messages after 1,000 requests, want at most %d", len(g.msgs), tc.wantLogBound)
			}
		})
	}
}

func TestMessageListOperations(t *testing.T) {
	a, b, c := Message{Role: "user", Content: "a"}, Message{Role: "assistant", Content: "b"}, Message{Role: "user", Content: "c"}
	whole := MessagesOf([]Message{a, b, c})
	cut := MessagesOf([]Message{a}).Concat(MessagesOf([]Message{b, c}))
	cases := []struct {
		name string
		got  any
		want any
	}{
		{"equal however cut", whole.Equal(cut), true},
		{"none is not empty", MessageList{}.Equal(MessagesOf([]Message{})), false},
		{"shorter is not equal", whole.Equal(cut.Sub(0, 2)), false},
		{"sub across runs", cut.Sub(1, 3).Slice(), []Message{b, c}},
		{"sub of nothing is nothing", MessageList{}.Sub(0, 0).IsNil(), true},
		{"empty sub is a request", cut.Sub(2, 2).IsNil(), false},
		{"at across runs", cut.At(2), c},
		{"common prefix", cut.CommonPrefix(MessagesOf([]Message{a, b, a})), 2},
		{"common prefix with nothing", cut.CommonPrefix(MessageList{}), 0},
		{"concat nothing", cut.Concat(MessageList{}).Len(), 3},
		{"none slices to nil", MessageList{}.Slice() == nil, true},
		{"empty slices to empty", MessagesOf([]Message{}).Slice() != nil, true},
	}
	for _, tc := range cases {
		if fmt.Sprint(tc.got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// A list writes the JSON its messages' slice writes, so save files and records read
// the same.
func TestMessageListJSON(t *testing.T) {
	msgs := []Message{{Role: "user", Content: "<b>&"}, {Role: "user", Content: "x", Extra: `{"name":"bob"}`}}
	cases := []struct {
		name string
		list MessageList
		want any
	}{
		{"none", MessageList{}, []Message(nil)},
		{"empty", MessagesOf([]Message{}), []Message{}},
		{"cut in runs", MessagesOf(msgs[:1]).Concat(MessagesOf(msgs[1:])), msgs},
	}
	for _, tc := range cases {
		got, err := json.Marshal(struct{ M MessageList }{tc.list})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(struct{ M any }{tc.want})
		if string(got) != string(want) {
			t.Errorf("%s: %s, want %s", tc.name, got, want)
		}
		var back struct{ M MessageList }
		if err := json.Unmarshal(got, &back); err != nil || !back.M.Equal(tc.list) {
			t.Errorf("%s: read back %v (%v)", tc.name, back.M.Slice(), err)
		}
	}
}

// BenchmarkMessageLog is what recording a request costs a RecordAll session at 1,000
// and 10,000 turns, with and without a window.
func BenchmarkMessageLog(b *testing.B) {
	for _, window := range []int{0, 4} {
		for _, n := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("window=%d/turns=%d", window, n), func(b *testing.B) {
				reqs := conversation(n+1, window, 0)
				var g MessageLog
				for _, r := range reqs[:n] {
					g.List(r)
				}
				next := reqs[n]
				b.ReportAllocs()
				for b.Loop() {
					g.List(next)
				}
			})
		}
	}
}

// CommonPrefix counts what a naive comparison counts, whether the texts are the very
// same strings, equal ones elsewhere in memory, or differ, wherever in a block of
// headers compared as raw memory that falls.
func TestCommonPrefixOfLongLists(t *testing.T) {
	base := make([]Message, 300)
	for i := range base {
		base[i] = Message{Role: []string{"user", "assistant"}[i%2], Content: fmt.Sprintf("message %d", i)}
	}
	naive := func(a, b []Message) int {
		n := 0
		for n < len(a) && n < len(b) && a[n] == b[n] {
			n++
		}
		return n
	}
	edit := func(f func(m []Message)) []Message {
		m := append([]Message{}, base...)
		f(m)
		return m
	}
	cases := []struct {
		name  string
		other []Message
	}{
		{"the same texts", edit(func([]Message) {})},
		{"equal texts elsewhere, first", edit(func(m []Message) { m[0].Content = strings.Clone(m[0].Content) })},
		{"equal texts elsewhere, mid-block", edit(func(m []Message) { m[70].Content = strings.Clone(m[70].Content) })},
		{"one differs", edit(func(m []Message) { m[200].Content += "!" })},
		{"equal elsewhere, then one differs", edit(func(m []Message) {
			m[3].Content = strings.Clone(m[3].Content)
			m[130].Role = "system"
		})},
		{"shorter", base[:129]},
		{"differs at the last", edit(func(m []Message) { m[299].Content = "x" })},
	}
	for _, tc := range cases {
		for _, cut := range []int{0, 1, 64, 100} {
			a := MessagesOf(base[:cut]).Concat(MessagesOf(base[cut:]))
			if got, want := a.CommonPrefix(MessagesOf(tc.other)), naive(base, tc.other); got != want {
				t.Errorf("%s, cut at %d: %d, want %d", tc.name, cut, got, want)
			}
		}
	}
}

// Record keeps a long list its maker says is shared as it is (its runs untouched), and
// logs the others: a list not shared, or a short one, as List would.
func TestMessageLogRecord(t *testing.T) {
	long := conversation(40, 0, 0)[39] // 80 messages
	short := conversation(3, 0, 0)[2]
	for _, tc := range []struct {
		name   string
		msgs   []Message
		shared bool
		kept   bool // the list returned is the one given, run for run
	}{
		{"long, shared", long, true, true},
		{"long, not shared", long, false, false},
		{"short, shared", short, true, false},
		{"short, not shared", short, false, false},
		{"long, shared, in short runs", long, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g MessageLog
			in := ListOf(tc.msgs)
			if strings.HasSuffix(tc.name, "in short runs") {
				// a history the cache could not keep: no run holds most of the request
				in = ListOf(tc.msgs[:30], tc.msgs[30:60], tc.msgs[60:])
			}
			out := g.Record(in, tc.shared)
			if !out.Equal(in) {
				t.Fatalf("the list recorded differs from the request")
			}
			kept := len(out.runs) == len(in.runs) && &out.runs[0][0] == &tc.msgs[0]
			if kept != tc.kept {
				t.Errorf("kept as given: %v, want %v", kept, tc.kept)
			}
			if logged := len(g.msgs) > 0; logged == tc.kept {
				t.Errorf("logged: %v, want %v", logged, !tc.kept)
			}
		})
	}
}
