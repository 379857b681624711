package template

import (
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

// Spec returns the template itself; adapters that wrap a template (the wire factory's)
// expose it through this method.
func (t *Template) Spec() *Template { return t }

// HistoryMessages is the default expansion of a history (what a bare {"role":"history"}
// directive and auto-insertion write), with the history entry each message came from.
func (t *Template) HistoryMessages(s *sig.Signature, h *sig.History) (msgs []lm.Message, entries []int) {
	if s == nil || h == nil {
		return nil, nil
	}
	r := &render{t: t, s: s}
	for i, e := range h.Messages {
		for _, m := range r.expandHistory(&sig.History{Messages: []*sig.Map{e}}) {
			msgs = append(msgs, m)
			entries = append(entries, i)
		}
	}
	return msgs, entries
}

// Placeholder is a {name} variable or a {fn(...)} call found in a template text.
type Placeholder struct {
	Name string // the variable's key, or the function's name
	Call bool   // a template function call
	Text string // how it appears when left unresolved, e.g. "{reply}" or "{shout(x='1')}"
}

// Placeholders lists the variables and calls of a text. For message contents (plain is
// false) "{{"/"}}" escapes and template-function calls are recognised as the renderer
// does; directive templates (plain) only have variables. Only simple {name} variables
// are listed (with an index, conversion or spec they do not pass through verbatim).
func Placeholders(text string, plain bool) []Placeholder {
	var out []Placeholder
	t2 := text
	if !plain {
		t1, _ := escapeBraces(text)
		var calls []Placeholder
		t2, _, _ = evalFunctions(t1, func(c call) (string, bool, error) {
			calls = append(calls, Placeholder{Name: c.Name, Call: true, Text: restore.Replace(c.Text)})
			return "", true, nil
		})
		out = append(out, calls...)
	}
	for _, f := range py.FormatFields(t2) {
		if f.Conv == 0 && f.Spec == "" && f.Name != "" && isIdent(f.Name) {
			out = append(out, Placeholder{Name: f.Name, Text: "{" + f.Name + "}"})
		}
	}
	return out
}

func isIdent(s string) bool {
	for _, c := range s {
		if c == '.' || c == '[' || c == ']' || c == ' ' {
			return false
		}
	}
	return true
}

// Resolves reports whether a template function name is handled (built-in, registered
// helper or the outer_history extension).
func (t *Template) Resolves(fn string) bool {
	switch fn {
	case "inputs", "outputs", "demos", "history", "outer_history":
		return true
	}
	_, ok := t.Helpers[fn]
	return ok
}
