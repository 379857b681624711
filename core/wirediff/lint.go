package wirediff

import (
	"fmt"
	"strings"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/template"
)

// Warning kinds.
const (
	MissingOutput         = "missing-output"         // a history reply shows None for an output the entry lacks
	DroppedUser           = "dropped-user"           // a history entry had no input field: its user turn is gone
	OmittedInput          = "omitted-input"          // a history entry lacks some inputs: their sections are left out
	DroppedAssistant      = "dropped-assistant"      // (template) an entry had no output field: its reply is gone
	ConsecutiveAssistant  = "consecutive-assistant"  // two assistant messages in a row
	UnresolvedPlaceholder = "unresolved-placeholder" // a {name} or {fn()} of the template reached the wire
	HistoryDropped        = "history-dropped"        // (template) no user message to insert the history before
	IgnoredDirectiveKey   = "ignored-directive-key"  // a directive has "user" or "assistant" but not both
	Truncated             = "truncated"              // turns cut by max_turns
)

// Warning is one finding. Message is the index into the rendered messages (-1 when the
// finding is not tied to one message); Field names the field or placeholder concerned.
type Warning struct {
	Kind    string
	Message int
	Field   string
	Text    string
}

func (w Warning) String() string {
	if w.Message < 0 {
		return w.Kind + ": " + w.Text
	}
	return fmt.Sprintf("%s at message %d: %s", w.Kind, w.Message, w.Text)
}

// Facts are what Lint needs to know about one rendering.
type Facts struct {
	Signature *sig.Signature  // the predictor's signature, history field included
	Adapter   adapter.Adapter // what rendered Messages (chat, json or a template)
	History   *sig.History    // the history the predictor received; nil when none
	Messages  []lm.Message    // the rendered messages
	Truncated int             // how many earlier turns max_turns cut off
	MaxTurns  int             // the max_turns in force (for the message)
}

// contentAdapter is ChatAdapter and JSONAdapter: their history turns are built from these.
type contentAdapter interface {
	UserContent(s *sig.Signature, values *sig.Map, prefix string, mainRequest bool) string
	AssistantContent(s *sig.Signature, values *sig.Map, missing any) string
}

type templated interface{ Spec() *template.Template }

// Lint checks a rendering and returns its warnings, in message order where they have one.
func Lint(f Facts) []Warning {
	var out []Warning
	if f.Truncated > 0 {
		out = append(out, Warning{Kind: Truncated, Message: -1,
			Text: fmt.Sprintf("%d earlier turn(s) not sent: max_turns=%d keeps the last %d", f.Truncated, f.MaxTurns, f.MaxTurns)})
	}
	if f.Signature != nil {
		switch ad := f.Adapter.(type) {
		case templated:
			out = append(out, lintTemplate(f, ad.Spec())...)
		case contentAdapter:
			out = append(out, lintChat(f, ad)...)
		}
	}
	for i := 1; i < len(f.Messages); i++ {
		if f.Messages[i].Role == "assistant" && f.Messages[i-1].Role == "assistant" {
			out = append(out, Warning{Kind: ConsecutiveAssistant, Message: i,
				Text: fmt.Sprintf("messages %d and %d are both assistant messages", i-1, i)})
		}
	}
	return out
}

// entryTurns is one history entry's expected messages.
type entryTurns struct {
	msgs    []lm.Message
	entries []int
}

// locate finds the expected history block in the rendering and returns, for each of its
// messages, the index in rendered (-1 everywhere when it is not found as a whole).
func locate(rendered []lm.Message, want entryTurns) []int {
	idx := make([]int, len(want.msgs))
	for k := range idx {
		idx[k] = -1
	}
	if len(want.msgs) == 0 {
		return idx
	}
	for start := len(rendered) - len(want.msgs); start >= 0; start-- {
		match := true
		for k, m := range want.msgs {
			if rendered[start+k] != m {
				match = false
				break
			}
		}
		if match {
			for k := range idx {
				idx[k] = start + k
			}
			break
		}
	}
	return idx
}

func hasInput(s *sig.Signature, e *sig.Map) bool {
	for _, f := range s.Inputs {
		if !f.Type.IsHistory() && e.Has(f.Name) {
			return true
		}
	}
	return false
}

// lintChat covers ChatAdapter/JSONAdapter history turns: each entry gives a user message
// (only when an input is present) and an assistant message whose missing outputs read None.
// The entries' messages are rendered again only when there is a warning to place: a
// long history that has none costs no second rendering.
func lintChat(f Facts, ad contentAdapter) []Warning {
	if f.History == nil || f.Signature.HistoryField() == "" {
		return nil
	}
	s := f.Signature.WithoutInput(f.Signature.HistoryField())
	var out []Warning
	var at entryAt
	for i, e := range f.History.Messages {
		if !hasInput(s, e) {
			out = append(out, Warning{Kind: DroppedUser, Message: at.place(i, "assistant"),
				Text: fmt.Sprintf("history turn %d has none of the input fields %s, so its user message is left out", i+1, names(s.Inputs))})
		} else {
			for _, in := range s.Inputs {
				if !in.Type.IsHistory() && !e.Has(in.Name) {
					out = append(out, Warning{Kind: OmittedInput, Message: at.place(i, "user"), Field: in.Name,
						Text: fmt.Sprintf("history turn %d has no %q: its section is left out of the user message", i+1, in.Name)})
				}
			}
		}
		for _, o := range s.Outputs {
			if !e.Has(o.Name) {
				out = append(out, Warning{Kind: MissingOutput, Message: at.place(i, "assistant"), Field: o.Name,
					Text: fmt.Sprintf("history turn %d has no %q: the reply shows None", i+1, o.Name)})
			}
		}
	}
	if len(out) > 0 {
		var want entryTurns
		for i, e := range f.History.Messages {
			if u := ad.UserContent(s, e, "", false); u != "" {
				want.msgs = append(want.msgs, lm.Message{Role: "user", Content: u})
				want.entries = append(want.entries, i)
			}
			want.msgs = append(want.msgs, lm.Message{Role: "assistant", Content: ad.AssistantContent(s, e, nil)})
			want.entries = append(want.entries, i)
		}
		at.resolve(out, f.Messages, want)
	}
	return out
}

// entryAt places warnings at the rendered message of a history entry once the entries'
// messages are known: place hands out a provisional Message (an index into its list of
// wanted places) and resolve replaces it by the message's index in the rendering.
type entryAt struct {
	places []entryPlace
}

type entryPlace struct {
	entry int
	role  string
}

func (a *entryAt) place(entry int, role string) int {
	a.places = append(a.places, entryPlace{entry, role})
	return len(a.places) - 1
}

// resolve sets each warning's Message from its provisional place (warnings that have
// none, with a negative Message, are left alone).
func (a *entryAt) resolve(ws []Warning, rendered []lm.Message, want entryTurns) {
	at := locate(rendered, want)
	first := map[entryPlace]int{}
	for k := len(want.msgs) - 1; k >= 0; k-- {
		first[entryPlace{want.entries[k], want.msgs[k].Role}] = at[k]
	}
	for i := range ws {
		if p := ws[i].Message; p >= 0 && p < len(a.places) {
			if idx, ok := first[a.places[p]]; ok {
				ws[i].Message = idx
			} else {
				ws[i].Message = -1
			}
		}
	}
}

func names(fs []sig.Field) string {
	parts := make([]string, 0, len(fs))
	for _, f := range fs {
		parts = append(parts, f.Name)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func lintTemplate(f Facts, t *template.Template) []Warning {
	var out []Warning
	directive, mapped, inline := false, false, false
	for i, m := range t.Messages {
		if m.IsDirective() && (m.User == nil) != (m.Assistant == nil) {
			out = append(out, Warning{Kind: IgnoredDirectiveKey, Message: -1,
				Text: fmt.Sprintf("template message %d (%q) has only one of \"user\"/\"assistant\"; both are needed, so it is ignored", i, m.Role)})
		}
		if m.Role == template.RoleHistory {
			directive = true
			mapped = mapped || m.Mapped()
		}
		if !m.IsDirective() && strings.Contains(m.Content, "{history(") {
			inline = true
		}
	}
	out = append(out, unresolved(f, t)...)
	if f.History == nil || len(f.History.Messages) == 0 {
		return out
	}
	plainUsed := (directive && !mapped) || (!directive && !inline)
	if !directive && !inline && !hasUser(f.Messages) {
		out = append(out, Warning{Kind: HistoryDropped, Message: -1,
			Text: "the template has no user message and no history directive, so the history is not sent"})
		return out
	}
	if !plainUsed {
		return out
	}
	var warned []Warning
	var at entryAt
	for i, e := range f.History.Messages {
		if !hasInput(f.Signature, e) {
			warned = append(warned, Warning{Kind: DroppedUser, Message: at.place(i, "assistant"),
				Text: fmt.Sprintf("history turn %d has none of the input fields %s, so its user message is left out", i+1, names(nonHistory(f.Signature.Inputs)))})
		}
		present := false
		for _, o := range f.Signature.Outputs {
			present = present || e.Has(o.Name)
		}
		if !present {
			warned = append(warned, Warning{Kind: DroppedAssistant, Message: at.place(i, "user"),
				Text: fmt.Sprintf("history turn %d has none of the output fields %s, so its reply is left out", i+1, names(f.Signature.Outputs))})
		}
	}
	if len(warned) > 0 {
		// rendered again only to place the warnings
		want := entryTurns{}
		want.msgs, want.entries = t.HistoryMessages(f.Signature, f.History)
		at.resolve(warned, f.Messages, want)
	}
	return append(out, warned...)
}

func nonHistory(fs []sig.Field) []sig.Field {
	var out []sig.Field
	for _, f := range fs {
		if !f.Type.IsHistory() {
			out = append(out, f)
		}
	}
	return out
}

func hasUser(ms []lm.Message) bool {
	for _, m := range ms {
		if m.Role == "user" {
			return true
		}
	}
	return false
}

// unresolved reports template placeholders that pass through to the wire: variables the
// context does not define (for a directive's templates: keys missing from a history
// entry) and calls of unknown functions, at each rendered message that contains them.
func unresolved(f Facts, t *template.Template) []Warning {
	known := map[string]bool{"instruction": true, "history": true}
	for _, fl := range f.Signature.Inputs {
		known[fl.Name] = true
	}
	var cands []template.Placeholder
	add := func(p template.Placeholder) {
		for _, c := range cands {
			if c.Text == p.Text {
				return
			}
		}
		cands = append(cands, p)
	}
	for _, m := range t.Messages {
		if !m.IsDirective() {
			for _, p := range template.Placeholders(m.Content, false) {
				if (p.Call && !t.Resolves(p.Name)) || (!p.Call && !known[p.Name]) {
					add(p)
				}
			}
			continue
		}
		if !m.Mapped() {
			continue
		}
		for _, text := range []string{*m.User, *m.Assistant} {
			for _, p := range template.Placeholders(text, true) {
				if !known[p.Name] && !isOutput(f.Signature, p.Name) && p.Name != "outputs_json" {
					add(p)
				}
			}
		}
	}
	var out []Warning
	for i, m := range f.Messages {
		for _, p := range cands {
			if strings.Contains(m.Content, p.Text) {
				what := "variable"
				if p.Call {
					what = "unknown template function"
				}
				out = append(out, Warning{Kind: UnresolvedPlaceholder, Message: i, Field: p.Name,
					Text: fmt.Sprintf("%s %s was sent as written", what, p.Text)})
			}
		}
	}
	return out
}

func isOutput(s *sig.Signature, name string) bool {
	_, ok := s.Output(name)
	return ok
}
