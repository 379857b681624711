package llm

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/template"
)

type demoCase struct {
	name   string
	sig    *sig.Signature
	inputs *sig.Map
}

func demoCases(t *testing.T) []demoCase {
	t.Helper()
	mk := func(text string, instr string) *sig.Signature {
		s, err := sig.ParseWith(text, instr)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	classify := mk("question -> intent", "Classify the customer's intent.")
	classify.Outputs[0].Desc = "One of: billing, technical, general"
	rated := mk("text -> score: int, confidence: float", "")
	rated.Outputs[0].Constraints = sig.NewMap("ge", int64(1), "le", int64(5))
	withHistory := mk("question -> reply", "").AppendInput(sig.Field{Name: "history", Desc: "Conversation history", Type: sig.THistory})
	cot := mk("question -> answer", "").PrependOutput(sig.Field{Name: "reasoning", Desc: "${reasoning}"})
	return []demoCase{
		{"classify", classify, sig.NewMap("question", "I was charged twice and want a refund")},
		{"literal", mk("ticket -> priority: Literal['low', 'high'], urgent: bool", ""), sig.NewMap("ticket", "The server is down!")},
		{"numbers", rated, sig.NewMap("text", "Great product, fast shipping")},
		{"collections", mk("topic -> queries: list[str], counts: dict[str, int], ids: list[int], maybe: Optional[int]", ""),
			sig.NewMap("topic", "solar panels on flat roofs")},
		{"correct", mk("text -> corrected", ""), sig.NewMap("text", "i cant log in to my acount")},
		{"translate", mk("corrected, target_language -> translated", ""), sig.NewMap("corrected", "Where is the station?", "target_language", "French")},
		{"history", withHistory, sig.NewMap("question", "And the reset email?", "history",
			sig.History{Messages: []*sig.Map{sig.NewMap("question", "I can't log in", "reply", "Try resetting your password.")}})},
		{"cot", cot, sig.NewMap("question", "What is the capital of France?")},
	}
}

func withoutHistory(m *sig.Map) *sig.Map {
	return m.Filter(func(k string) bool { return k != "history" })
}

func checkOutputs(t *testing.T, s *sig.Signature, got *sig.Map, completion string) {
	t.Helper()
	if got.Len() != len(s.Outputs) {
		t.Fatalf("parsed %v from\n%s", got.Keys(), completion)
	}
	for i, f := range s.Outputs {
		if got.Keys()[i] != f.Name {
			t.Errorf("output %d is %q, want %q", i, got.Keys()[i], f.Name)
		}
	}
}

// The demo answers in whatever format the calling adapter expects, whether Meta says
// which (as the engine does) or only the rendered messages do.
func TestDemoOutputsParseWithEveryAdapter(t *testing.T) {
	d := NewDemo(DemoOptions{})
	for _, c := range demoCases(t) {
		for _, a := range []adapter.Adapter{adapter.Chat{}, adapter.JSON{}} {
			msgs, err := a.Format(adapter.Request{Signature: c.sig, Inputs: c.inputs})
			if err != nil {
				t.Fatalf("%s/%s: format: %v", c.name, a.Name(), err)
			}
			metas := map[string]lm.Meta{
				"meta":     {Adapter: a.Name(), Signature: c.sig, Inputs: withoutHistory(c.inputs)},
				"messages": {},
			}
			for how, meta := range metas {
				t.Run(c.name+"/"+a.Name()+"/"+how, func(t *testing.T) {
					text, err := d.Complete(meta, msgs)
					if err != nil {
						t.Fatal(err)
					}
					got, err := a.Parse(c.sig, text)
					if err != nil {
						t.Fatalf("%v\ncompletion:\n%s", err, text)
					}
					checkOutputs(t, c.sig, got, text)
				})
			}
		}
		for _, mode := range []string{template.ParseJSON, template.ParseXML, template.ParseChat, template.ParseFullText} {
			if mode == template.ParseFullText && len(c.sig.Outputs) != 1 {
				continue
			}
			t.Run(c.name+"/template/"+mode, func(t *testing.T) {
				tpl, err := template.New([]template.MessageTemplate{
					{Role: "system", Content: "{instruction}\n\n{outputs()}"},
					{Role: "user", Content: "{inputs()}"},
				}, mode)
				if err != nil {
					t.Fatal(err)
				}
				msgs, err := tpl.Format(adapter.Request{Signature: c.sig, Inputs: c.inputs})
				if err != nil {
					t.Fatal(err)
				}
				text, err := d.Complete(lm.Meta{Adapter: "template", ParseMode: mode, Signature: c.sig, Inputs: withoutHistory(c.inputs)}, msgs)
				if err != nil {
					t.Fatal(err)
				}
				got, err := tpl.Parse(c.sig, text)
				if err != nil {
					t.Fatalf("%v\ncompletion:\n%s", err, text)
				}
				checkOutputs(t, c.sig, got, text)
			})
		}
	}
}

func TestDemoIsDeterministic(t *testing.T) {
	c := demoCases(t)[0]
	msgs, _ := adapter.Chat{}.Format(adapter.Request{Signature: c.sig, Inputs: c.inputs})
	a, _ := NewDemo(DemoOptions{}).Complete(lm.Meta{}, msgs)
	b, _ := NewDemo(DemoOptions{}).Complete(lm.Meta{}, msgs)
	if a != b {
		t.Fatalf("same request, different answers:\n%s\n---\n%s", a, b)
	}
	if a != "[[ ## intent ## ]]\nbilling\n\n[[ ## completed ## ]]" {
		t.Errorf("a refund question should classify as billing, got\n%s", a)
	}
	// Different inputs give different text (for a free-text output).
	s := sig.New("", "", []sig.Field{{Name: "question"}}, []sig.Field{{Name: "reply"}})
	seen := map[string]bool{}
	for _, q := range []string{"How do I reset my password?", "Where is my invoice for March?", "Can I export my data to CSV?"} {
		msgs, _ := adapter.Chat{}.Format(adapter.Request{Signature: s, Inputs: sig.NewMap("question", q)})
		text, _ := NewDemo(DemoOptions{}).Complete(lm.Meta{}, msgs)
		seen[text] = true
	}
	if len(seen) != 3 {
		t.Errorf("different questions got the same reply")
	}
}

func TestDemoScripts(t *testing.T) {
	s, _ := sig.Parse("question -> intent, confidence: float")
	script := ScriptFunc(func(meta lm.Meta, msgs []lm.Message) (*sig.Map, bool) {
		if meta.Path != "classify" {
			return nil, false
		}
		return sig.NewMap("intent", "technical"), true
	})
	d := NewDemo(DemoOptions{Scripts: []Script{script}})
	msgs, _ := adapter.Chat{}.Format(adapter.Request{Signature: s, Inputs: sig.NewMap("question", "hi")})
	text, _ := d.Complete(lm.Meta{Path: "classify", Adapter: "chat", Signature: s}, msgs)
	got, err := adapter.ParseChat(s, text)
	if err != nil {
		t.Fatal(err)
	}
	if got.String("intent") != "technical" {
		t.Errorf("script not followed: %s", text)
	}
	if _, ok := got.Get("confidence"); !ok {
		t.Errorf("missing field not filled: %s", text)
	}
	other, _ := d.Complete(lm.Meta{Path: "other", Adapter: "chat", Signature: s}, msgs)
	if strings.Contains(other, "technical") && other == text {
		t.Errorf("script answered a path it declined")
	}
}

func TestDemoStreamsAndCancels(t *testing.T) {
	d := NewDemo(DemoOptions{TokenRate: 2000})
	req := lm.Request{Messages: lm.ListOf([]lm.Message{{Role: "user", Content: "Tell me about streaming responses"}})}
	var deltas []string
	req.OnDelta = func(s string) { deltas = append(deltas, s) }
	resp, err := d.Call(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(deltas) < 5 || strings.Join(deltas, "") != resp.Text {
		t.Fatalf("%d deltas, joined %q, text %q", len(deltas), strings.Join(deltas, ""), resp.Text)
	}
	if !strings.Contains(resp.Text, "demo model") || !strings.Contains(resp.Text, "streaming") {
		t.Errorf("plain reply = %q", resp.Text)
	}
	if resp.Model != DemoName || resp.Usage.PromptTokens == 0 || resp.Usage.CompletionTokens == 0 || len(resp.Tries) != 1 {
		t.Errorf("response = %+v", resp)
	}

	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	req.OnDelta = func(string) {
		if n++; n == 3 {
			cancel()
		}
	}
	resp, err = d.Call(ctx, req)
	var pe *lm.PartialError
	if !lm.IsCancelled(err) || !errors.As(err, &pe) || pe.Partial == "" || resp.Text != "" {
		t.Fatalf("err %v text %q", err, resp.Text)
	}
}

func TestSplitTokens(t *testing.T) {
	text := "[[ ## reply ## ]]\nHello, wonderful world.\n\n[[ ## completed ## ]]"
	parts := splitTokens(text)
	if strings.Join(parts, "") != text {
		t.Fatalf("pieces do not rebuild the text: %q", parts)
	}
	for _, p := range parts {
		if len([]rune(strings.TrimSpace(p))) > 4 {
			t.Errorf("piece %q is longer than a token", p)
		}
	}
}

// A request that reaches the demo model as messages alone (through the proxy, or `ask`)
// is read back by core/recognize: the demo answers it exactly as it answers the engine,
// which says in Meta what the request holds, typed inputs included.
func TestDemoAnswersMessagesAsMeta(t *testing.T) {
	d := NewDemo(DemoOptions{})
	cases := demoCases(t)
	typed, _ := sig.Parse("n: int, items: list[str], flag: bool -> total: int, note")
	plain, _ := sig.Parse("question -> answer")
	cases = append(cases,
		demoCase{"typed", typed, sig.NewMap("n", int64(3), "items", []any{"a", "b"}, "flag", true)},
		demoCase{"padded", plain, sig.NewMap("question", "  padded question  \n")})
	for _, c := range cases {
		for _, a := range []adapter.Adapter{adapter.Chat{}, adapter.JSON{}} {
			t.Run(c.name+"/"+a.Name(), func(t *testing.T) {
				msgs, err := a.Format(adapter.Request{Signature: c.sig, Inputs: c.inputs})
				if err != nil {
					t.Fatal(err)
				}
				want, err := d.Complete(lm.Meta{Adapter: a.Name(), Signature: c.sig, Inputs: withoutHistory(c.inputs)}, msgs)
				if err != nil {
					t.Fatal(err)
				}
				got, err := d.Complete(lm.Meta{}, msgs)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("from the messages alone:\n%s\nwith Meta:\n%s", got, want)
				}
			})
		}
	}
	// no DSPy format: a plain chat, answered from the last user message
	msgs := []lm.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "  What is a session?  "}}
	got, err := d.Complete(lm.Meta{}, msgs)
	if err != nil || strings.Contains(got, "[[ ##") || strings.HasPrefix(got, "{") || got == "" {
		t.Fatalf("plain chat answered %q (%v)", got, err)
	}
}

func BenchmarkDemoComplete(b *testing.B) {
	s, _ := sig.ParseWith("question -> intent", "Classify the customer's intent.")
	msgs, _ := adapter.Chat{}.Format(adapter.Request{Signature: s, Inputs: sig.NewMap("question", "The reset email never arrives")})
	d := NewDemo(DemoOptions{})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := d.Complete(lm.Meta{}, msgs); err != nil {
			b.Fatal(err)
		}
	}
}
