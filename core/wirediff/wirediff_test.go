package wirediff

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/template"
)

func msg(role, content string) lm.Message { return lm.Message{Role: role, Content: content} }

func ops(ls []Line) string {
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(map[Op]string{Same: " ", Added: "+", Removed: "-"}[l.Op] + l.Text + "\n")
	}
	return b.String()
}

func TestDiffLines(t *testing.T) {
	cases := []struct{ a, b, want string }{
		{"x\ny\nz", "x\ny\nz", " x\n y\n z\n"},
		{"a\nb\nc", "a\nc", " a\n-b\n c\n"},
		{"a\nc", "a\nb\nc", " a\n+b\n c\n"},
		{"one\ntwo", "uno\ntwo", "-one\n+uno\n two\n"},
		{"", "new", "-\n+new\n"},
		{"p\nq\nr\ns", "q\nx\ns\np", "-p\n q\n-r\n+x\n s\n+p\n"},
	}
	for _, c := range cases {
		if got := ops(DiffLines(c.a, c.b)); got != c.want {
			t.Errorf("DiffLines(%q, %q):\n%s\nwant\n%s", c.a, c.b, got, c.want)
		}
	}
	// Line numbers point into each side.
	ls := DiffLines("a\nb\nc", "a\nX\nc")
	if ls[1].Op != Removed || ls[1].A != 1 || ls[1].B != -1 || ls[2].Op != Added || ls[2].B != 1 || ls[3].A != 2 || ls[3].B != 2 {
		t.Errorf("line numbers: %+v", ls)
	}
}

func TestDiffLinesLarge(t *testing.T) {
	var a, b []string
	for i := 0; i < 3000; i++ {
		a = append(a, fmt.Sprint("a", i))
		b = append(b, fmt.Sprint("b", i))
	}
	ls := DiffLines("head\n"+strings.Join(a, "\n")+"\ntail", "head\n"+strings.Join(b, "\n")+"\ntail")
	if len(ls) != 6002 || ls[0].Op != Same || ls[1].Op != Removed || ls[3001].Op != Added || ls[6001].Op != Same {
		t.Errorf("fallback diff: %d lines, first ops %v %v", len(ls), ls[0].Op, ls[1].Op)
	}
}

func TestDiffMessages(t *testing.T) {
	a := []lm.Message{msg("system", "S"), msg("user", "q1"), msg("user", "now")}
	b := []lm.Message{msg("system", "S\nmore"), msg("user", "q1"), msg("assistant", "a1"), msg("user", "now")}
	d := Diff(a, b)
	var got []string
	for _, m := range d {
		got = append(got, fmt.Sprintf("%s %d/%d %s", m.Op, m.A, m.B, m.Role))
	}
	want := []string{"changed 0/0 system", "same 1/1 user", "added -1/2 assistant", "same 2/3 user"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
	if ops(d[0].Lines) != " S\n+more\n" || ops(d[2].Lines) != "+a1\n" {
		t.Errorf("lines: %q %q", ops(d[0].Lines), ops(d[2].Lines))
	}
	// Roles never pair: a role change is a removal and an addition.
	d = Diff([]lm.Message{msg("user", "x")}, []lm.Message{msg("assistant", "x")})
	if len(d) != 2 || d[0].Op != Removed || d[1].Op != Added {
		t.Errorf("role change: %+v", d)
	}
	if d := Diff(nil, nil); len(d) != 0 {
		t.Errorf("empty: %+v", d)
	}
}

// The seed's scenarios, rendered for real, then linted.
var (
	classify = sig.New("ClassifyIntent", "Classify the customer's intent.", []sig.Field{{Name: "question"}},
		[]sig.Field{{Name: "intent", Desc: "One of: billing, technical, general"}}).
		AppendInput(sig.Field{Name: "history", Type: sig.THistory, Desc: "Conversation history"})
	translator = sig.New("TranslateText", "", []sig.Field{{Name: "corrected"}, {Name: "target_language"}},
		[]sig.Field{{Name: "translated"}}).
		AppendInput(sig.Field{Name: "history", Type: sig.THistory, Desc: "Conversation history"})
)

func render(t *testing.T, ad adapter.Adapter, s *sig.Signature, in *sig.Map) []lm.Message {
	t.Helper()
	ms, err := ad.Format(adapter.Request{Signature: s, Inputs: in})
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func kinds(ws []Warning) string {
	var parts []string
	for _, w := range ws {
		parts = append(parts, fmt.Sprintf("%s@%d:%s", w.Kind, w.Message, w.Field))
	}
	return strings.Join(parts, " ")
}

func TestLintChatWorstCases(t *testing.T) {
	// Strategy 2, Scenario A worst case: the outer turn lacks "intent".
	h := &sig.History{Messages: []*sig.Map{sig.NewMap("question", "I can't log in", "reply", "Try resetting your password.")}}
	ms := render(t, adapter.Chat{}, classify, sig.NewMap("question", "The reset email never arrives", "history", *h))
	if !strings.Contains(ms[2].Content, "[[ ## intent ## ]]\nNone") {
		t.Fatalf("rendering changed: %q", ms[2].Content)
	}
	ws := Lint(Facts{Signature: classify, Adapter: adapter.Chat{}, History: h, Messages: ms})
	if got := kinds(ws); got != "missing-output@2:intent" {
		t.Errorf("got %s", got)
	}
	// Scenario B worst case for the translator: no input field in either outer turn.
	hb := &sig.History{Messages: []*sig.Map{
		sig.NewMap("text", "This plant is red", "translated", "Cette plante est rouge."),
		sig.NewMap("text", "Can I have it?", "translated", "Puis-je l'avoir ?")}}
	in := sig.NewMap("corrected", "No, it's too precious. I want to keep it.", "target_language", "French", "history", *hb)
	for _, ad := range []adapter.Adapter{adapter.Chat{}, adapter.JSON{}} {
		ms = render(t, ad, translator, in)
		ws = Lint(Facts{Signature: translator, Adapter: ad, History: hb, Messages: ms, Truncated: 3, MaxTurns: 2})
		if got, want := kinds(ws), "truncated@-1: dropped-user@1: dropped-user@2: consecutive-assistant@2:"; got != want {
			t.Errorf("%s: got  %s\nwant %s", ad.Name(), got, want)
		}
		if !strings.Contains(ws[0].Text, "3 earlier turn(s)") || !strings.Contains(ws[1].Text, "[corrected, target_language]") {
			t.Errorf("texts: %v", ws)
		}
	}
}

// An entry with some inputs keeps its user message without the missing sections.
func TestLintOmittedInput(t *testing.T) {
	h := &sig.History{Messages: []*sig.Map{
		sig.NewMap("corrected", "This plant is red.", "translated", "Cette plante est rouge."),
		sig.NewMap("corrected", "Can I have it?", "target_language", "French", "translated", "Puis-je l'avoir ?")}}
	in := sig.NewMap("corrected", "No.", "target_language", "French", "history", *h)
	ms := render(t, adapter.Chat{}, translator, in)
	if strings.Contains(ms[1].Content, "target_language") {
		t.Fatalf("rendering changed: %q", ms[1].Content)
	}
	ws := Lint(Facts{Signature: translator, Adapter: adapter.Chat{}, History: h, Messages: ms})
	if got := kinds(ws); got != "omitted-input@1:target_language" {
		t.Errorf("got %s", got)
	}
}

func TestLintTemplate(t *testing.T) {
	h := &sig.History{Messages: []*sig.Map{
		sig.NewMap("question", "q1", "reply", "r1"),
		sig.NewMap("question", "q2"),
		sig.NewMap("intent", "billing"),
	}}
	in := sig.NewMap("question", "now", "history", *h)
	cases := []struct {
		name string
		tpl  string
		want string
	}{
		{"mapped, reply missing", `{"messages":[{"role":"system","content":"{instruction}"},{"role":"history","user":"{question}","assistant":"{reply}"},{"role":"user","content":"{question}"}]}`,
			"unresolved-placeholder@4:reply unresolved-placeholder@6:reply"},
		{"plain directive", `{"messages":[{"role":"history"},{"role":"user","content":"{question} {intent} {shout(x='1')}"}],"parse_mode":"full_text"}`,
			"unresolved-placeholder@3:shout unresolved-placeholder@3:intent dropped-assistant@0: dropped-assistant@1: dropped-user@2:"},
		{"no user message", `{"messages":[{"role":"system","content":"{question}"}]}`, "history-dropped@-1:"},
		{"half directive", `{"messages":[{"role":"history","user":"{question}"},{"role":"user","content":"{history(style='yaml')}"}]}`,
			// The half-mapped directive acts as a bare one: the plain expansion is sent too.
			"ignored-directive-key@-1: dropped-assistant@0: dropped-assistant@1: dropped-user@2:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tpl, err := template.Load([]byte(c.tpl))
			if err != nil {
				t.Fatal(err)
			}
			ms := render(t, tpl, classify, in)
			if got := kinds(Lint(Facts{Signature: classify, Adapter: tpl, History: h, Messages: ms})); got != c.want {
				t.Errorf("got  %s\nwant %s\n%v", got, c.want, ms)
			}
		})
	}
	// A clean strategy-1 rendering has no warnings; the wire factory's adapter works too.
	clean := &sig.History{Messages: []*sig.Map{sig.NewMap("question", "q1", "intent", "technical")}}
	ad, err := adapter.New("template", []byte(`{"template":{"messages":[{"role":"history"},{"role":"user","content":"{question}"}],"parse_mode":"full_text"}}`))
	if err != nil {
		t.Fatal(err)
	}
	ms := render(t, ad, classify, sig.NewMap("question", "now", "history", *clean))
	if ws := Lint(Facts{Signature: classify, Adapter: ad, History: clean, Messages: ms}); len(ws) != 0 {
		t.Errorf("clean rendering: %v", ws)
	}
}
