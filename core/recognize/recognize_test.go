package recognize

import (
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

func field(name, typ, desc string) sig.Field {
	return sig.Field{Name: name, Type: sig.MustType(typ), Desc: desc}
}

// signatures used by the round-trip cases, named for failure messages.
var signatures = map[string]*sig.Signature{
	"simple": sig.New("", "", []sig.Field{field("question", "str", "")}, []sig.Field{field("answer", "str", "")}),
	"session": sig.New("ClassifyIntent", "Classify the customer's intent.",
		[]sig.Field{field("question", "str", "")}, []sig.Field{field("intent", "str", "One of: billing, technical, general")}).
		AppendInput(sig.Field{Name: "history", Type: sig.THistory, Desc: "Conversation history"}),
	"typed": sig.New("Typed", "Score the facts.\n\n    Be strict:\n      - no guessing\n    Thanks.",
		[]sig.Field{field("context", "list[str]", "facts"), field("n", "int", "${n}"), field("flag", "bool", ""),
			field("opts", "dict[str, int]", "weights"), field("maybe", "Optional[int]", "")},
		[]sig.Field{field("score", "float", "a score"), field("ok", "bool", ""), field("tags", "list[str]", ""),
			field("level", "Literal['low', 'high']", "how bad"), field("note", "str | None", "optional note"),
			{Name: "count", Type: sig.TInt, Desc: "how many", Constraints: sig.NewMap("ge", int64(1), "le", int64(5))},
			{Name: "summary", Type: sig.TStr, Desc: "short", Constraints: sig.NewMap("max_length", int64(200))}}),
	"cot": sig.New("", "Answer with care.", []sig.Field{field("question", "str", "the question")},
		[]sig.Field{field("reasoning", "str", "${reasoning}"), field("answer", "str", "")}),
	"declared history": sig.New("Chat", "", []sig.Field{field("question", "str", ""), field("history", "History", "past turns"),
		field("context", "str", "retrieved")}, []sig.Field{field("reply", "str", ""), field("confident", "bool", "")}),
	"no inputs": sig.New("", "Say something.", nil, []sig.Field{field("line", "str", "")}),
	"tricky descriptions": sig.New("", "Line one.\nIn adhering to this structure, your objective is: a trap",
		[]sig.Field{field("a", "str", "has ): inside\nand a second line\n2. `b` looks like an entry"), field("b", "str", "")},
		[]sig.Field{field("c", "Literal['x): y', 'z']", "Your output fields are:\n1. `c` (str): fake")}),
}

type roundTrip struct {
	name    string
	sig     string
	demos   []*sig.Map
	inputs  *sig.Map
	history *sig.History
}

var roundTrips = []roundTrip{
	{name: "plain", sig: "simple", inputs: sig.NewMap("question", "What is 2+2?")},
	{name: "value keeps trailing newlines and headers", sig: "simple",
		inputs: sig.NewMap("question", "line\n\n[[ ## answer ## ]]\nnot a header\n\n")},
	{name: "empty value", sig: "simple", inputs: sig.NewMap("question", "")},
	{name: "input absent", sig: "simple", inputs: sig.NewMap()},
	{name: "session with history", sig: "session", inputs: sig.NewMap("question", "The reset email never arrives"),
		history: &sig.History{Messages: []*sig.Map{
			sig.NewMap("question", "I can't log in", "intent", "technical"),
			sig.NewMap("intent", "billing"),   // no inputs: the user turn is dropped
			sig.NewMap("question", "refund?"), // no output: None
			sig.NewMap("question", "multi\nline\n\nvalue", "intent", "general\n\nwith blank lines"),
		}}},
	{name: "session, empty history", sig: "session", inputs: sig.NewMap("question", "hi"), history: &sig.History{}},
	{name: "typed values", sig: "typed", inputs: sig.NewMap("context", []any{"a fact", "another\nfact", "«quoted»"},
		"n", int64(3), "flag", true, "opts", sig.NewMap("x", int64(1), "ü", int64(2)), "maybe", nil)},
	{name: "typed demos, complete and incomplete", sig: "typed",
		demos: []*sig.Map{
			sig.NewMap("context", []any{"c"}, "n", int64(1), "flag", false, "opts", sig.NewMap(), "maybe", int64(2),
				"score", 0.5, "ok", true, "tags", []any{"t"}, "level", "low", "note", "n", "count", int64(2), "summary", "s"),
			sig.NewMap("context", []any{}, "score", 1e-05, "tags", []any{}),
		},
		inputs: sig.NewMap("context", []any{"x"}, "n", int64(-7), "flag", false, "opts", sig.NewMap("k", int64(0)), "maybe", int64(9))},
	{name: "chain of thought with demos", sig: "cot",
		demos:  []*sig.Map{sig.NewMap("question", "q1", "reasoning", "r1", "answer", "a1"), sig.NewMap("question", "q2", "answer", "a2")},
		inputs: sig.NewMap("question", "q3")},
	{name: "declared history in the middle", sig: "declared history",
		demos:  []*sig.Map{sig.NewMap("question", "dq", "context", "dc", "reply", "dr", "confident", true)},
		inputs: sig.NewMap("question", "now?", "context", "ctx\n"),
		history: &sig.History{Messages: []*sig.Map{
			sig.NewMap("question", "before", "context", "c0", "reply", "r0", "confident", false),
			sig.NewMap("context", "only context", "reply", "r1", "confident", true),
		}}},
	{name: "no inputs", sig: "no inputs", inputs: sig.NewMap()},
	{name: "tricky descriptions", sig: "tricky descriptions", inputs: sig.NewMap("a", "1", "b", "2"),
		demos: []*sig.Map{sig.NewMap("a", "x", "b", "y", "c", "z")}},
}

func (rt roundTrip) request() adapter.Request {
	in := rt.inputs.Clone()
	s := signatures[rt.sig]
	if rt.history != nil {
		in.Set(s.HistoryField(), *rt.history)
	}
	return adapter.Request{Signature: s, Demos: rt.demos, Inputs: in}
}

// TestRoundTrip formats varied requests with both adapters, recognises them, and checks
// that what was recovered formats back to the same bytes and is what was formatted.
func TestRoundTrip(t *testing.T) {
	for _, ad := range []adapter.Adapter{adapter.Chat{}, adapter.JSON{}} {
		for _, rt := range roundTrips {
			t.Run(ad.Name()+"/"+rt.name, func(t *testing.T) {
				msgs, err := ad.Format(rt.request())
				if err != nil {
					t.Fatal(err)
				}
				r := Parse(msgs)
				if r.Adapter != ad.Name() {
					t.Fatalf("adapter %q (reason: %s), want %q", r.Adapter, r.Reason, ad.Name())
				}
				if !r.Exact {
					t.Fatalf("not exact: %s", r.Mismatch)
				}
				checkSignature(t, r.Signature, signatures[rt.sig])
				if want := rt.inputs; !r.Inputs.Equal(want) {
					t.Errorf("inputs %s, want %s", py.CompactJSON(r.Inputs), py.CompactJSON(want))
				}
				wantHist := sig.History{}
				if rt.history != nil {
					wantHist = stripped(*rt.history, r.Signature, ad.Name() == "chat")
				}
				if !py.Same(r.History, wantHist) {
					t.Errorf("history %s, want %s", py.CompactJSON(r.History), py.CompactJSON(wantHist))
				}
				if len(r.Demos) != len(rt.demos) {
					t.Fatalf("%d demos, want %d", len(r.Demos), len(rt.demos))
				}
			})
		}
	}
}

// stripped is what a history can be recovered as: the last value of each message loses
// its trailing whitespace (DSPy strips the message), and a missing output reads None (in a
// str field the text None under ChatAdapter, which writes it as text).
func stripped(h sig.History, s *sig.Signature, chat bool) sig.History {
	turn := s.WithoutInput(s.HistoryField())
	out := sig.History{}
	for _, m := range h.Messages {
		e := sig.NewMap()
		var lastIn string
		for _, f := range turn.Inputs {
			if v, ok := m.Get(f.Name); ok {
				e.Set(f.Name, v)
				lastIn = f.Name
			}
		}
		if v, ok := e.Get(lastIn); ok {
			if str, isStr := v.(string); isStr {
				e.Set(lastIn, py.RStrip(str))
			}
		}
		for i, f := range turn.Outputs {
			v, ok := m.Get(f.Name)
			if !ok {
				v = nil
				if chat && f.Type.IsStr() {
					v = "None"
				}
			}
			if str, isStr := v.(string); isStr && i == len(turn.Outputs)-1 {
				v = py.RStrip(str)
			}
			e.Set(f.Name, v)
		}
		out.Messages = append(out.Messages, e)
	}
	return out
}

func checkSignature(t *testing.T, got, want *sig.Signature) {
	t.Helper()
	if adapter.TaskDescription(got) != adapter.TaskDescription(want) {
		t.Errorf("instructions %q, want %q", got.Instructions, want.Instructions)
	}
	check := func(side string, g, w []sig.Field) {
		if len(g) != len(w) {
			t.Errorf("%s: %d fields, want %d", side, len(g), len(w))
			return
		}
		for i := range w {
			wd := w[i].Desc
			if wd == "${"+w[i].Name+"}" {
				wd = ""
			}
			if g[i].Name != w[i].Name || g[i].Type.Name() != w[i].Type.Name() || g[i].Desc != wd ||
				g[i].ConstraintText() != w[i].ConstraintText() {
				t.Errorf("%s %d: got %s (%s) %q [%s], want %s (%s) %q [%s]", side, i, g[i].Name, g[i].Type.Name(), g[i].Desc,
					g[i].ConstraintText(), w[i].Name, w[i].Type.Name(), wd, w[i].ConstraintText())
			}
		}
	}
	check("inputs", got.Inputs, want.Inputs)
	check("outputs", got.Outputs, want.Outputs)
}

func TestDemosRecovered(t *testing.T) {
	rt := roundTrips[7] // typed demos
	msgs, _ := adapter.Chat{}.Format(rt.request())
	r := Parse(msgs)
	// Incomplete demos come first, and their missing fields stay missing.
	want := []*sig.Map{rt.demos[1], rt.demos[0]}
	for i := range want {
		if !r.Demos[i].Equal(want[i]) {
			t.Errorf("demo %d: %s, want %s", i, py.CompactJSON(r.Demos[i]), py.CompactJSON(want[i]))
		}
	}
}

func TestOutputs(t *testing.T) {
	s := signatures["typed"]
	for _, ad := range []adapter.Adapter{adapter.Chat{}, adapter.JSON{}} {
		msgs, _ := ad.Format(adapter.Request{Signature: s, Inputs: sig.NewMap("n", int64(1))})
		r := Parse(msgs)
		want := sig.NewMap("score", 0.5, "ok", true, "tags", []any{"a"}, "level", "high", "note", nil, "count", int64(3), "summary", "fine")
		var completion string
		if ad.Name() == "chat" {
			completion = adapter.AssistantContent(s, want, nil)
		} else {
			completion = adapter.JSON{}.AssistantContent(s, want, nil)
		}
		if ad.Name() == "chat" {
			want.Set("note", "None") // DSPy: a str | None output keeps the text None
		}
		got, err := r.Outputs(completion)
		if err != nil {
			t.Fatalf("%s: %v", ad.Name(), err)
		}
		if !got.Equal(want) {
			t.Errorf("%s: outputs %s, want %s", ad.Name(), py.CompactJSON(got), py.CompactJSON(want))
		}
		if _, err := r.Outputs("no sections at all"); err == nil {
			t.Errorf("%s: a completion without the outputs parsed", ad.Name())
		}
	}
}

func TestNotRecognised(t *testing.T) {
	chat, _ := adapter.Chat{}.Format(roundTrips[0].request())
	cases := []struct {
		name   string
		msgs   []lm.Message
		reason string
	}{
		{"plain chat", []lm.Message{{Role: "user", Content: "hello"}}, "1 message"},
		{"plain system prompt", []lm.Message{{Role: "system", Content: "You are helpful."}, {Role: "user", Content: "hi"}}, "does not start with"},
		{"ends with assistant", append(append([]lm.Message(nil), chat...), lm.Message{Role: "assistant", Content: "x"}), "last message"},
		{"user message edited", []lm.Message{chat[0], {Role: "user", Content: "What is 2+2?"}}, "requirements line"},
		{"no structure", []lm.Message{{Role: "system", Content: "Your input fields are:\n1. `a` (str):\nYour output fields are:\n1. `b` (str):"}, chat[1]}, "field structure"},
		{"stray turn without history field", []lm.Message{chat[0], {Role: "user", Content: "[[ ## question ## ]]\nq"}, chat[1]}, "neither a demo nor history"},
	}
	for _, c := range cases {
		r := Parse(c.msgs)
		if r.Adapter != "" || !strings.Contains(r.Reason, c.reason) {
			t.Errorf("%s: adapter %q reason %q, want unrecognised with %q", c.name, r.Adapter, r.Reason, c.reason)
		}
		if _, err := r.Outputs("x"); err == nil {
			t.Errorf("%s: Outputs of an unrecognised request succeeded", c.name)
		}
	}
}

// TestInexact covers requests that are recognised but do not re-format exactly: a type
// sessionbench cannot express, and a system message changed by hand.
func TestInexact(t *testing.T) {
	msgs, _ := adapter.Chat{}.Format(adapter.Request{Signature: signatures["simple"], Inputs: sig.NewMap("question", "q")})
	enum := append([]lm.Message(nil), msgs...)
	enum[0].Content = strings.Replace(enum[0].Content, "`answer` (str)", "`answer` (Sentiment)", 1)
	edited := append([]lm.Message(nil), msgs...)
	edited[0].Content = strings.Replace(edited[0].Content, "Your output fields are:\n1. `answer` (str):", "Your output fields are:\n1. `answer` (str):  ", 1)
	for name, m := range map[string][]lm.Message{"enum type": enum, "edited": edited} {
		r := Parse(m)
		if r.Adapter != "chat" || r.Exact || !strings.HasPrefix(r.Mismatch, "message 1 (system) differs at byte") {
			t.Errorf("%s: adapter %q exact %v mismatch %q (reason %q)", name, r.Adapter, r.Exact, r.Mismatch, r.Reason)
		}
	}
}

func TestMarkersMatchAdapter(t *testing.T) {
	s := signatures["simple"]
	for _, text := range []string{adapter.SystemMessage(s), adapter.JSON{}.SystemMessage(s)} {
		for _, m := range []string{inputsHead, outputsHead, structureIntro, objectiveHead + "\n" + instrIndent} {
			if !strings.Contains(text, m) {
				t.Errorf("the adapter no longer writes %q", m)
			}
		}
	}
	js := adapter.JSON{}.SystemMessage(s)
	for _, m := range []string{jsonInputs, jsonOutputs} {
		if !strings.Contains(js, m) {
			t.Errorf("JSONAdapter no longer writes %q", m)
		}
	}
}

func TestParseTypeName(t *testing.T) {
	for _, name := range []string{"str", "list[str]", "dict[str, int]", "Union[int, NoneType]", "UnionType[str, NoneType]",
		"list[UnionType[int, NoneType]]", "Union[int, list[UnionType[int, NoneType]]]", "Literal['a', \"it's\"]", "History"} {
		ty, ok := parseTypeName(name)
		if !ok || ty.Name() != name {
			t.Errorf("%s: ok %v", name, ok)
		}
	}
	for _, name := range []string{"Sentiment", "list[Answer]", "Optional[int]"} { // Optional is never a name DSPy writes
		if _, ok := parseTypeName(name); ok {
			t.Errorf("%s parsed", name)
		}
	}
}
