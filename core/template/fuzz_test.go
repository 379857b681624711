package template

import (
	"errors"
	"testing"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

// FuzzRender: any content, any value: an error or messages, never a panic; a failure of
// the template itself is always a *TemplateError with a position inside the text.
func FuzzRender(f *testing.F) {
	for _, s := range []string{"{instruction}", "{{x}}", "{inputs(style='json')}", "{history(style='xml')}", "a {", "}",
		"{question!r:>9}", "{question[3]}", "{outer_history(style='yaml')}", "{demos()}", "{q:{}}", "{x.y}", "{{{q}}}"} {
		f.Add(s, "va{l}ue", "{question}")
	}
	f.Fuzz(func(t *testing.T, content, value, directive string) {
		s := withHistory(sig.New("", "", []sig.Field{{Name: "question"}}, []sig.Field{{Name: "answer"}}))
		h := hist(sig.NewMap("question", value, "answer", value), sig.NewMap("other", value))
		tpl := &Template{Messages: []MessageTemplate{
			{Role: "system", Content: content},
			{Role: RoleHistory, User: Str(directive), Assistant: Str(content)},
			{Role: RoleDemos},
			{Role: "user", Content: content},
		}}
		_ = tpl.Validate()
		_, err := tpl.Format(adapter.Request{Signature: s, Inputs: sig.NewMap("question", value, "history", h),
			Demos: []*sig.Map{sig.NewMap("question", value, "answer", value)}, OuterHistory: &h})
		var te *TemplateError
		if err != nil && errors.As(err, &te) && (te.Line < 1 || te.Column < 1) {
			t.Fatalf("bad position %+v", te)
		}
	})
}

// FuzzParse: every parse mode returns outputs or an error for any completion.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"answer": "x", "score": 1}`, "```json\n{", "<answer>a</answer><score>", "[[ ## answer ## ]]\n", "{{{{", "}}}{", "```"} {
		f.Add(uint8(0), s)
	}
	modes := []string{ParseJSON, ParseFullText, ParseXML, ParseChat}
	f.Fuzz(func(t *testing.T, m uint8, completion string) {
		for _, s := range []*sig.Signature{twoOut, oneOut} {
			tpl := &Template{ParseMode: modes[int(m)%len(modes)]}
			out, err := tpl.Parse(s, completion)
			if err == nil && out.Len() != len(s.Outputs) {
				t.Fatalf("parsed %s without error but not every field", py.CompactJSON(out))
			}
			_ = tpl.StreamField(s, completion)
		}
	})
}

// FuzzLoad: any bytes load or fail cleanly.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(`{"messages":[{"role":"user","content":"{q}"}],"parse_mode":"xml"}`))
	f.Add([]byte(`{"messages":[{"role":"history","user":"{","assistant":"x"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tpl, err := Load(data)
		if err == nil {
			if _, err := tpl.MarshalJSON(); err != nil {
				t.Fatal(err)
			}
		}
	})
}
