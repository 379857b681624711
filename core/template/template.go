// Package template is the TemplateAdapter: prompts written as message templates with
// {field} variables, template functions ({inputs()}, {outputs()}, {demos()}, {history()},
// registered helpers) and directives ({"role":"demos"}, {"role":"history"}), as in the
// dspy-template-adapter 0.2.2 reference, plus the project's extensions (see
// docs/wire/template-language.md): user/assistant mapping on the history directive, the
// built-in {outer_history()} helper, clear brace errors and streaming field detection.
package template

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sessionbench/sessionbench/core/limits"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

// Parse modes.
const (
	ParseJSON     = "json"
	ParseFullText = "full_text"
	ParseXML      = "xml"
	ParseChat     = "chat"
)

// Directive roles.
const (
	RoleDemos   = "demos"
	RoleHistory = "history"
)

// MessageTemplate is one entry of a template: a regular message (any role, Content a
// template) or a directive (Role "demos" or "history"). User and Assistant are the
// directive's per-entry templates; they apply only when both are set.
type MessageTemplate struct {
	Role      string
	Content   string
	User      *string
	Assistant *string
}

// IsDirective reports whether the entry expands to messages instead of being one.
func (m MessageTemplate) IsDirective() bool { return m.Role == RoleDemos || m.Role == RoleHistory }

// Mapped reports whether a directive carries both user and assistant templates.
func (m MessageTemplate) Mapped() bool { return m.User != nil && m.Assistant != nil }

// Context is what a helper sees: the variables of pass 2 and the history objects.
type Context struct {
	// Vars maps every signature input field to its DSPy-formatted value ("" when not
	// given) and "instruction" to the signature's instructions.
	Vars         map[string]string
	Inputs       *sig.Map
	History      *sig.History // the predictor's history input; nil when absent
	OuterHistory *sig.History // the enclosing session's history; nil when none
	ParseMode    string
}

// Helper is a registered template function, called for {name(k='v', ...)}; only quoted
// keyword arguments reach kwargs (the reference ignores unquoted ones).
type Helper func(ctx Context, s *sig.Signature, demos []*sig.Map, kwargs map[string]string) (string, error)

// ParseFunc is a custom parse mode (the reference's callable parse_mode).
type ParseFunc func(s *sig.Signature, completion string) (*sig.Map, error)

// Template is the TemplateAdapter. The zero ParseMode means "json".
type Template struct {
	Messages  []MessageTemplate
	ParseMode string
	// ParseFunc, when set, replaces the parse mode for parsing (formatting of demo and
	// history replies still follows ParseMode).
	ParseFunc ParseFunc
	Helpers   map[string]Helper
}

// New builds a template and checks it.
func New(messages []MessageTemplate, parseMode string) (*Template, error) {
	t := &Template{Messages: messages, ParseMode: parseMode}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return t, nil
}

// Name is the adapter name.
func (t *Template) Name() string { return "template" }

// Mode is the effective parse mode.
func (t *Template) Mode() string {
	if t.ParseMode == "" {
		return ParseJSON
	}
	return t.ParseMode
}

// ParseModeName is the effective parse mode ("json", "full_text", "xml" or "chat"); the
// engine records it in lm.Meta.ParseMode so that a model (the offline demo model, say)
// can answer in the form the parse mode reads. A custom ParseFunc does not change it:
// demo and history replies are still written in this mode.
func (t *Template) ParseModeName() string { return t.Mode() }

// RegisterHelper adds a template function callable as {name(...)}.
func (t *Template) RegisterHelper(name string, h Helper) {
	if t.Helpers == nil {
		t.Helpers = map[string]Helper{}
	}
	t.Helpers[name] = h
}

// Validate checks the parse mode and that every template's braces balance, reporting the
// message index, line and column of the first problem.
func (t *Template) Validate() error {
	if len(t.Messages) == 0 {
		return errors.New("template: at least one message template is required")
	}
	switch t.Mode() {
	case ParseJSON, ParseFullText, ParseXML, ParseChat:
	default:
		return fmt.Errorf("template: unknown parse_mode %q (want json, full_text, xml or chat)", t.ParseMode)
	}
	for i, m := range t.Messages {
		if !m.IsDirective() {
			if _, err := renderText(i, "content", m.Content, resolveAll, missingAll); err != nil {
				return err
			}
		} else if m.Mapped() {
			if err := checkPlain(i, "user", *m.User); err != nil {
				return err
			}
			if err := checkPlain(i, "assistant", *m.Assistant); err != nil {
				return err
			}
		}
	}
	return nil
}

// resolveAll and missingAll stand in for a real context when checking a template: every
// function resolves and every variable passes through, so only brace errors remain.
func resolveAll(call) (string, bool, error)    { return "", true, nil }
func missingAll(string) (py.FormatValue, bool) { return py.FormatValue{}, false }

// checkPlain checks a directive template, which is formatted without pass 1.
func checkPlain(msg int, key, text string) error {
	if _, err := py.FormatMap(text, missingAll); err != nil {
		return newTemplateError(msg, key, text, err.Offset, err.Msg)
	}
	return nil
}

// TemplateError is a malformed template: which message (0-based index into Messages),
// which key of it, and where (1-based line and column, in characters).
type TemplateError struct {
	Message int
	Key     string // "content", "user" or "assistant"
	Line    int
	Column  int
	Msg     string
}

func (e *TemplateError) Error() string {
	return fmt.Sprintf("template messages[%d].%s, line %d, column %d: %s", e.Message, e.Key, e.Line, e.Column, e.Msg)
}

func newTemplateError(msg int, key, text string, offset int, m string) *TemplateError {
	line, col := lineCol(text, offset)
	return &TemplateError{Message: msg, Key: key, Line: line, Column: col, Msg: m}
}

func lineCol(text string, offset int) (int, int) {
	if offset > len(text) {
		offset = len(text)
	}
	line, col := 1, 1
	for _, r := range text[:max(offset, 0)] {
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// jsonTemplate is the wire form: {"messages":[...],"parse_mode":"json"}.
type jsonTemplate struct {
	Messages  []json.RawMessage `json:"messages"`
	ParseMode string            `json:"parse_mode"`
}

// Load reads a template from JSON: {"messages":[{"role":..,"content":..}, ...],
// "parse_mode":"json"}. Unknown keys are errors so that typos do not vanish.
func Load(data []byte) (*Template, error) {
	if err := limits.CheckJSON(data); err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	var jt jsonTemplate
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&jt); err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	if jt.Messages == nil {
		return nil, errors.New("template: missing \"messages\" list")
	}
	t := &Template{ParseMode: jt.ParseMode}
	for i, raw := range jt.Messages {
		m, err := loadMessage(raw)
		if err != nil {
			return nil, fmt.Errorf("template messages[%d]: %w", i, err)
		}
		t.Messages = append(t.Messages, m)
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return t, nil
}

func loadMessage(raw json.RawMessage) (MessageTemplate, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return MessageTemplate{}, fmt.Errorf("want an object like {\"role\":\"user\",\"content\":\"...\"}, got %s", bytes.TrimSpace(raw))
	}
	var m MessageTemplate
	str := func(key string) (*string, error) {
		v, ok := fields[key]
		if !ok {
			return nil, nil
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, fmt.Errorf("%q must be a string, got %s", key, bytes.TrimSpace(v))
		}
		return &s, nil
	}
	role, err := str("role")
	if err != nil {
		return m, err
	}
	if role != nil {
		m.Role = *role
	}
	// The reference ignores any other key on a directive ({"role":"history","style":…}
	// renders as a plain history directive); on a regular message an unknown key is most
	// likely a typo of "content", so it is reported.
	if !m.IsDirective() {
		for k := range fields {
			switch k {
			case "role", "content", "user", "assistant":
			default:
				return m, fmt.Errorf("unknown key %q (known: role, content, user, assistant)", k)
			}
		}
	}
	content, err := str("content")
	if err != nil {
		return m, err
	}
	if content != nil {
		m.Content = *content
	}
	if m.User, err = str("user"); err != nil {
		return m, err
	}
	if m.Assistant, err = str("assistant"); err != nil {
		return m, err
	}
	return m, nil
}

// MarshalJSON writes the wire form Load reads.
func (t *Template) MarshalJSON() ([]byte, error) {
	msgs := make([]*sig.Map, len(t.Messages))
	for i, m := range t.Messages {
		e := sig.NewMap("role", m.Role)
		if !m.IsDirective() || m.Content != "" {
			e.Set("content", m.Content)
		}
		if m.User != nil {
			e.Set("user", *m.User)
		}
		if m.Assistant != nil {
			e.Set("assistant", *m.Assistant)
		}
		msgs[i] = e
	}
	list := make([]any, len(msgs))
	for i, m := range msgs {
		list[i] = m
	}
	return []byte(py.CompactJSON(sig.NewMap("messages", list, "parse_mode", t.Mode()))), nil
}

// UnmarshalJSON reads the wire form.
func (t *Template) UnmarshalJSON(data []byte) error {
	lt, err := Load(data)
	if err != nil {
		return err
	}
	*t = *lt
	return nil
}

// msg is a shorthand for building rendered messages.
func msg(role, content string) lm.Message { return lm.Message{Role: role, Content: content} }

// Str is a helper for building MessageTemplate.User / Assistant.
func Str(s string) *string { return &s }
