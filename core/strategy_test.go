package core

import (
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/template"
)

// The seed's two scenarios (000 §6). Signatures get the history field a session appends
// (last, "Conversation history").
//
// Seed correction: CorrectText and TranslateText have no docstring in the seed's code, so
// real DSPy would use its default instructions; the seed's renderings show the
// instructions below, so the scenario signatures carry them explicitly.
var (
	classifySig = withHistory(sig.New("ClassifyIntent", "Classify the customer's intent.",
		[]sig.Field{{Name: "question"}},
		[]sig.Field{{Name: "intent", Desc: "One of: billing, technical, general"}}))
	respondSig = withHistory(sig.New("GenerateReply", "Generate a helpful support reply.",
		[]sig.Field{{Name: "question"}, {Name: "intent"}},
		[]sig.Field{{Name: "reply"}}))
	correctSig = withHistory(sig.New("CorrectText", "Correct grammar and spelling in the input sentence.",
		[]sig.Field{{Name: "text"}}, []sig.Field{{Name: "corrected"}}))
	translateSig = withHistory(sig.New("TranslateText", "Translate corrected text into the target language.",
		[]sig.Field{{Name: "corrected"}, {Name: "target_language"}}, []sig.Field{{Name: "translated"}}))

	outerA, _ = sig.Parse("question -> reply")
	outerB, _ = sig.Parse("text -> translated")
)

func withHistory(s *sig.Signature) *sig.Signature {
	return s.AppendInput(sig.Field{Name: "history", Type: sig.THistory, Desc: "Conversation history"})
}

func hist(msgs ...*sig.Map) sig.History { return sig.History{Messages: msgs} }

// Scenario A state after turn 0.
var (
	outerHistA    = hist(sig.NewMap("question", "I can't log in", "reply", "Try resetting your password.", "intent", "technical"))
	classifyOwnA  = hist(sig.NewMap("question", "I can't log in", "intent", "technical"))
	respondOwnA   = hist(sig.NewMap("question", "I can't log in", "intent", "technical", "reply", "Try resetting your password."))
	classifyNowA  = sig.NewMap("question", "The reset email never arrives")
	respondNowA   = sig.NewMap("question", "The reset email never arrives", "intent", "technical")
	outerHistB    = hist(sig.NewMap("text", "This plant is red", "corrected", "This plant is red.", "translated", "Cette plante est rouge."), sig.NewMap("text", "Can I have it?", "corrected", "Can I have it?", "translated", "Puis-je l'avoir ?"))
	correctOwnB   = hist(sig.NewMap("text", "This plant is red", "corrected", "This plant is red."), sig.NewMap("text", "Can I have it?", "corrected", "Can I have it?"))
	translateOwnB = hist(sig.NewMap("corrected", "This plant is red.", "target_language", "French", "translated", "Cette plante est rouge."), sig.NewMap("corrected", "Can I have it?", "target_language", "French", "translated", "Puis-je l'avoir ?"))
	correctNowB   = sig.NewMap("text", "No it to precious, I want to keep it.")
	translateNowB = sig.NewMap("corrected", "No, it's too precious. I want to keep it.", "target_language", "French")
)

func withHist(inputs *sig.Map, h sig.History) *sig.Map {
	m := inputs.Clone()
	m.Set("history", h)
	return m
}

func u(c string) lm.Message { return lm.Message{Role: "user", Content: c} }
func a(c string) lm.Message { return lm.Message{Role: "assistant", Content: c} }
func sy(c string) lm.Message {
	return lm.Message{Role: "system", Content: c}
}

func checkMessages(t *testing.T, got, want []lm.Message) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d messages, want %d:\n%s", len(got), len(want), dump(got))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("message %d:\n got %s %q\nwant %s %q\nall:\n%s", i, got[i].Role, got[i].Content, want[i].Role, want[i].Content, dump(got))
		}
	}
}

func dump(ms []lm.Message) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString("[" + m.Role + "] " + m.Content + "\n")
	}
	return b.String()
}

const (
	ctxA = "\n\n- turn: 1\n  question: I can't log in\n  reply: Try resetting your password.\n  intent: technical"
	ctxB = "\n\n- turn: 1\n  text: This plant is red\n  corrected: This plant is red.\n  translated: Cette plante est rouge.\n" +
		"- turn: 2\n  text: Can I have it?\n  corrected: Can I have it?\n  translated: Puis-je l'avoir ?"
)

func TestSeedStrategies(t *testing.T) {
	mapB := &Mapping{User: "{text}", Assistant: "{translated}"}
	mapCorrected := &Mapping{User: "{text}", Assistant: "{corrected}"}
	cases := []struct {
		name     string
		strategy int
		s        *sig.Signature
		inputs   *sig.Map
		outer    *sig.History
		opts     PresetOptions
		want     []lm.Message
	}{
		// Strategy 1, template form. Seed correction (ARCHITECTURE.md): the {"role":"history"}
		// directive writes "name: value" lines for the user turn, so classify's history
		// shows "question: I can't log in", not the bare question.
		{"A1 classify", 1, classifySig, withHist(classifyNowA, classifyOwnA), nil, PresetOptions{TemplateForKeep: true}, []lm.Message{
			sy("Classify the customer's intent."),
			u("question: I can't log in"), a("technical"),
			u("The reset email never arrives"),
		}},
		{"A1 respond", 1, respondSig, withHist(respondNowA, respondOwnA), nil, PresetOptions{TemplateForKeep: true}, []lm.Message{
			sy("Generate a helpful support reply."),
			u("question: I can't log in\nintent: technical"), a("Try resetting your password."),
			u("question: The reset email never arrives\nintent: technical"),
		}},
		// Seed correction as above: the corrector's history turns read "text: ...".
		{"B1 corrector", 1, correctSig, withHist(correctNowB, correctOwnB), nil, PresetOptions{TemplateForKeep: true}, []lm.Message{
			sy("Correct grammar and spelling in the input sentence."),
			u("text: This plant is red"), a("This plant is red."),
			u("text: Can I have it?"), a("Can I have it?"),
			u("No it to precious, I want to keep it."),
		}},
		{"B1 translator", 1, translateSig, withHist(translateNowB, translateOwnB), nil, PresetOptions{TemplateForKeep: true}, []lm.Message{
			sy("Translate corrected text into the target language."),
			u("corrected: This plant is red.\ntarget_language: French"), a("Cette plante est rouge."),
			u("corrected: Can I have it?\ntarget_language: French"), a("Puis-je l'avoir ?"),
			u("corrected: No, it's too precious. I want to keep it.\ntarget_language: French"),
		}},
		{"A3 classify", 3, classifySig, withHist(classifyNowA, outerHistA), nil, PresetOptions{}, []lm.Message{
			sy("Classify the customer's intent.\n\nPrior conversation for context:" + ctxA[1:]),
			u("The reset email never arrives"),
		}},
		{"A3 respond", 3, respondSig, withHist(respondNowA, outerHistA), nil, PresetOptions{}, []lm.Message{
			sy("Generate a helpful support reply.\n\nPrior conversation for context:" + ctxA[1:]),
			u("question: The reset email never arrives\nintent: technical"),
		}},
		{"B3 corrector", 3, correctSig, withHist(correctNowB, outerHistB), nil, PresetOptions{}, []lm.Message{
			sy("Correct grammar and spelling in the input sentence.\n\nPrior conversation for context:" + ctxB[1:]),
			u("No it to precious, I want to keep it."),
		}},
		{"B3 translator", 3, translateSig, withHist(translateNowB, outerHistB), nil, PresetOptions{}, []lm.Message{
			sy("Translate corrected text into the target language.\n\nPrior conversation for context:" + ctxB[1:]),
			u("corrected: No, it's too precious. I want to keep it.\ntarget_language: French"),
		}},
		{"A4 classify", 4, classifySig, withHist(classifyNowA, outerHistA), nil, PresetOptions{Outer: outerA}, []lm.Message{
			sy("Classify the customer's intent."),
			u("I can't log in"), a("Try resetting your password."),
			u("The reset email never arrives"),
		}},
		{"A4 respond", 4, respondSig, withHist(respondNowA, outerHistA), nil, PresetOptions{Outer: outerA}, []lm.Message{
			sy("Generate a helpful support reply."),
			u("I can't log in"), a("Try resetting your password."),
			u("question: The reset email never arrives\nintent: technical"),
		}},
		{"B4 corrector text->translated", 4, correctSig, withHist(correctNowB, outerHistB), nil, PresetOptions{Mapping: mapB}, []lm.Message{
			sy("Correct grammar and spelling in the input sentence."),
			u("This plant is red"), a("Cette plante est rouge."),
			u("Can I have it?"), a("Puis-je l'avoir ?"),
			u("No it to precious, I want to keep it."),
		}},
		{"B4 corrector text->corrected", 4, correctSig, withHist(correctNowB, outerHistB), nil, PresetOptions{Mapping: mapCorrected}, []lm.Message{
			sy("Correct grammar and spelling in the input sentence."),
			u("This plant is red"), a("This plant is red."),
			u("Can I have it?"), a("Can I have it?"),
			u("No it to precious, I want to keep it."),
		}},
		{"B4 translator default mapping", 4, translateSig, withHist(translateNowB, outerHistB), nil, PresetOptions{Outer: outerB}, []lm.Message{
			sy("Translate corrected text into the target language."),
			u("This plant is red"), a("Cette plante est rouge."),
			u("Can I have it?"), a("Puis-je l'avoir ?"),
			u("corrected: No, it's too precious. I want to keep it.\ntarget_language: French"),
		}},
		// Strategy 5: seed correction as for strategy 1 (own turns as "name: value").
		{"A5 classify", 5, classifySig, withHist(classifyNowA, classifyOwnA), &outerHistA, PresetOptions{}, []lm.Message{
			sy("Classify the customer's intent.\n\nFull conversation context:" + ctxA[1:]),
			u("question: I can't log in"), a("technical"),
			u("The reset email never arrives"),
		}},
		{"B5 corrector", 5, correctSig, withHist(correctNowB, correctOwnB), &outerHistB, PresetOptions{}, []lm.Message{
			sy("Correct grammar and spelling in the input sentence.\n\nFull conversation context:" + ctxB[1:]),
			u("text: This plant is red"), a("This plant is red."),
			u("text: Can I have it?"), a("Can I have it?"),
			u("No it to precious, I want to keep it."),
		}},
		{"B5 translator", 5, translateSig, withHist(translateNowB, translateOwnB), &outerHistB, PresetOptions{}, []lm.Message{
			sy("Translate corrected text into the target language.\n\nFull conversation context:" + ctxB[1:]),
			u("corrected: This plant is red.\ntarget_language: French"), a("Cette plante est rouge."),
			u("corrected: Can I have it?\ntarget_language: French"), a("Puis-je l'avoir ?"),
			u("corrected: No, it's too precious. I want to keep it.\ntarget_language: French"),
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, err := Preset(c.strategy, c.s, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if st.Adapter.Name() != "template" {
				t.Fatalf("adapter %q, want template", st.Adapter.Name())
			}
			got, err := st.Adapter.Format(adapter.Request{Signature: c.s, Inputs: c.inputs, OuterHistory: c.outer})
			if err != nil {
				t.Fatal(err)
			}
			checkMessages(t, got, c.want)
		})
	}
}

// The seed's strategy-1 template as written, without a parse mode, is parsed as json; the
// history reply is then a JSON object (ARCHITECTURE.md), not the bare "technical" the seed draws.
func TestSeedTemplateDefaultJSONReply(t *testing.T) {
	tpl, err := template.Load([]byte(`{"messages":[{"role":"system","content":"{instruction}"},{"role":"history"},{"role":"user","content":"{question}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := tpl.Format(adapter.Request{Signature: classifySig, Inputs: withHist(classifyNowA, classifyOwnA)})
	if err != nil {
		t.Fatal(err)
	}
	checkMessages(t, got, []lm.Message{
		sy("Classify the customer's intent."),
		u("question: I can't log in"), a("{\n  \"intent\": \"technical\"\n}"),
		u("The reset email never arrives"),
	})
}

func TestPresetPolicies(t *testing.T) {
	want := []struct {
		policy  string
		adapter string
	}{{"keep", "chat"}, {"inherit", "chat"}, {"inherit", "template"}, {"inherit", "template"}, {"keep+outer", "template"}}
	all, err := Presets(classifySig, PresetOptions{Outer: outerA})
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range all {
		if st.Number != i+1 || st.Policy() != want[i].policy || st.Adapter.Name() != want[i].adapter {
			t.Errorf("strategy %d: got %d %s %s, want %s %s", i+1, st.Number, st.Policy(), st.Adapter.Name(), want[i].policy, want[i].adapter)
		}
	}
	if _, err := Preset(4, classifySig, PresetOptions{}); err == nil || !strings.Contains(err.Error(), "mapping") {
		t.Errorf("strategy 4 without outer signature: err = %v", err)
	}
	if _, err := Preset(6, classifySig, PresetOptions{}); err == nil {
		t.Error("strategy 6 accepted")
	}
	// Several outputs: json parse mode and the output list in the system message.
	multi := withHistory(sig.New("", "Do it.", []sig.Field{{Name: "q"}}, []sig.Field{{Name: "a"}, {Name: "b", Type: sig.TInt}}))
	st, err := Preset(3, multi, PresetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tpl := st.Adapter.(*template.Template)
	if tpl.Mode() != template.ParseJSON {
		t.Errorf("mode %q", tpl.Mode())
	}
	msgs, err := tpl.Format(adapter.Request{Signature: multi, Inputs: sig.NewMap("q", "x")})
	if err != nil {
		t.Fatal(err)
	}
	if want := "Do it.\n\nPrior conversation for context:\n\n\nRespond with a JSON object with these keys:\n1. `a` (str): \n2. `b` (int):"; msgs[0].Content != want {
		t.Errorf("system %q\nwant   %q", msgs[0].Content, want)
	}
}
