package template

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

// render is the state of one Format call.
type render struct {
	t        *Template
	s        *sig.Signature
	demos    []*sig.Map
	ctx      Context
	hist     *sig.History    // the predictor's history object (nil when none)
	histMsgs []lm.Message    // its default expansion (or the raw list, verbatim)
	lazyHist bool            // histMsgs still to be expanded from hist
	histStr  *py.FormatValue // str()/repr() of hist, computed on first use
}

// Format renders the request's messages (the reference's format()).
func (t *Template) Format(req adapter.Request) ([]lm.Message, error) {
	if req.Signature == nil {
		return nil, errors.New("template: request has no signature")
	}
	if len(t.Messages) == 0 {
		return nil, errors.New("template: at least one message template is required")
	}
	r := &render{t: t, s: req.Signature, demos: req.Demos}
	if err := r.prepare(req); err != nil {
		return nil, err
	}
	var out []lm.Message
	demosUsed, histUsed, histDirective := false, false, false
	for i, m := range t.Messages {
		switch m.Role {
		case RoleDemos:
			msgs, err := r.demosDirective(i, m)
			if err != nil {
				return nil, err
			}
			out = append(out, msgs...)
			demosUsed = true
			continue
		case RoleHistory:
			histDirective = true
			if m.Mapped() {
				msgs, err := r.mappedHistory(i, m)
				if err != nil {
					return nil, err
				}
				out = append(out, msgs...)
			} else {
				out = append(out, r.plainHistory()...)
			}
			continue
		}
		usedD, usedH := false, false
		eval := func(c call) (string, bool, error) { return r.call(c, &usedD, &usedH) }
		content, err := renderText(i, "content", m.Content, eval, r.lookup)
		if err != nil {
			return nil, err
		}
		demosUsed = demosUsed || usedD
		histUsed = histUsed || usedH
		out = append(out, msg(m.Role, content))
	}
	if len(r.demos) > 0 && !demosUsed {
		out = insertBeforeLastUser(out, r.demoMessages(), true)
	}
	if !histUsed && !histDirective {
		if h := r.plainHistory(); len(h) > 0 {
			out = insertBeforeLastUser(out, h, false)
		}
	}
	return out, nil
}

// insertBeforeLastUser puts extra before the last "user" message; without one, extra goes
// to the front when atFront is set (demos) and is dropped otherwise (history).
func insertBeforeLastUser(msgs, extra []lm.Message, atFront bool) []lm.Message {
	at := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			at = i
			break
		}
	}
	if at < 0 {
		if !atFront {
			return msgs
		}
		at = 0
	}
	out := make([]lm.Message, 0, len(msgs)+len(extra))
	out = append(out, msgs[:at]...)
	out = append(out, extra...)
	return append(out, msgs[at:]...)
}

// prepare pops the history input and builds the variables of pass 2.
func (r *render) prepare(req adapter.Request) error {
	inputs := req.Inputs
	hf := r.s.HistoryField()
	if hf != "" && inputs.Has(hf) {
		raw, _ := inputs.Get(hf)
		if err := r.takeHistory(hf, raw); err != nil {
			return err
		}
	}
	vars := make(map[string]string, len(r.s.Inputs)+1)
	for _, f := range r.s.Inputs {
		v, ok := inputs.Get(f.Name)
		if ok && f.Name != hf {
			vars[f.Name] = adapter.FormatFieldValue(f, v)
		} else {
			vars[f.Name] = ""
		}
	}
	vars["instruction"] = r.s.Instructions
	r.ctx = Context{Vars: vars, Inputs: inputs, History: r.hist, OuterHistory: req.OuterHistory, ParseMode: r.t.Mode()}
	return nil
}

// takeHistory reads the history input: a History expands through the signature, a bare
// list of {"role","content"} objects is inserted verbatim (other keys, such as "name",
// kept in Message.Extra), None means no history.
func (r *render) takeHistory(field string, raw any) error {
	switch v := raw.(type) {
	case nil:
		return nil
	case sig.History:
		r.hist = &v
	case *sig.History:
		if v == nil {
			return nil
		}
		r.hist = v
	case *sig.Map:
		h, err := sig.HistoryFromValue(v)
		if err != nil {
			return fmt.Errorf("template: input %q: %w", field, err)
		}
		r.hist = &h
	case []any:
		h := sig.History{Messages: make([]*sig.Map, len(v))}
		r.histMsgs = make([]lm.Message, len(v))
		for i, e := range v {
			m, ok := e.(*sig.Map)
			if !ok {
				return fmt.Errorf("template: input %q: raw history message %d is %s, want {\"role\":...,\"content\":...}", field, i, sig.KindName(e))
			}
			role, ok := m.Get("role")
			rs, isStr := role.(string)
			if !ok || !isStr {
				return fmt.Errorf("template: input %q: raw history message %d has no string \"role\"", field, i)
			}
			content, _ := m.Get("content")
			cs, isStr := content.(string)
			if content != nil && !isStr {
				return fmt.Errorf("template: input %q: raw history message %d: \"content\" is %s, want a string", field, i, sig.KindName(content))
			}
			h.Messages[i] = m
			r.histMsgs[i] = msg(rs, cs)
			// The reference passes the message dicts through: every other key goes too.
			if extra := m.Filter(func(k string) bool { return k != "role" && k != "content" }); extra.Len() > 0 {
				r.histMsgs[i].Extra = py.CompactJSON(extra)
			}
		}
		r.hist = &h
		return nil
	default:
		return nil // the reference ignores any other value
	}
	r.lazyHist = true // expanded on first use: inline and mapped renderings never need it
	return nil
}

// plainHistory is the default expansion of the history input (or the raw list).
func (r *render) plainHistory() []lm.Message {
	if r.lazyHist {
		r.histMsgs, r.lazyHist = r.expandHistory(r.hist), false
	}
	return r.histMsgs
}

// lookup resolves pass-2 variables: "history" (the History object, or ""), then
// "instruction", then input fields; anything else is missing and passes through.
func (r *render) lookup(key string) (py.FormatValue, bool) {
	if key == "history" {
		if r.hist == nil {
			return py.StrValue(""), true
		}
		if r.histStr == nil {
			v := py.ObjectValue(*r.hist)
			r.histStr = &v
		}
		return *r.histStr, true
	}
	v, ok := r.ctx.Vars[key]
	return py.StrValue(v), ok
}

// call evaluates one template function of pass 1.
func (r *render) call(c call, usedDemos, usedHist *bool) (string, bool, error) {
	kw := c.Kwargs
	style := kw["style"]
	switch c.Name {
	case "inputs":
		if err := dupArg("inputs", kw, "ctx", "signature"); err != nil {
			return "", false, err
		}
		return r.inputsFunc(style), true, nil
	case "outputs":
		if err := dupArg("outputs", kw, "signature"); err != nil {
			return "", false, err
		}
		return outputsFunc(r.s, style, kw["wrap"]), true, nil
	case "demos":
		if err := dupArg("demos", kw, "demos", "signature"); err != nil {
			return "", false, err
		}
		*usedDemos = true
		return r.demosInline(style), true, nil
	case "history":
		if err := dupArg("history", kw, "history", "signature"); err != nil {
			return "", false, err
		}
		*usedHist = true
		return historyInline(r.hist, style), true, nil
	}
	if h, ok := r.t.Helpers[c.Name]; ok {
		if err := dupArg(c.Name, kw, "ctx", "signature", "demos"); err != nil {
			return "", false, err
		}
		res, err := h(r.ctx, r.s, r.demos, kw)
		if err != nil {
			return "", false, fmt.Errorf("helper %s(): %w", c.Name, err)
		}
		return res, true, nil
	}
	if c.Name == "outer_history" {
		return historyInline(r.ctx.OuterHistory, style), true, nil
	}
	return "", false, nil
}

// expandHistory is the reference's _expand_history: per entry a user message of
// "name: value" lines (raw str values, History fields skipped, omitted when no input is
// present) and an assistant reply in the parse mode's form (omitted when no output is).
func (r *render) expandHistory(h *sig.History) []lm.Message {
	out := make([]lm.Message, 0, 2*len(h.Messages))
	var b strings.Builder
	for _, e := range h.Messages {
		b.Reset()
		for _, f := range r.s.Inputs {
			if f.Type.IsHistory() {
				continue
			}
			if v, ok := e.Get(f.Name); ok {
				if b.Len() > 0 {
					b.WriteByte('\n')
				}
				b.WriteString(f.Name + ": " + py.Str(v))
			}
		}
		if b.Len() > 0 {
			out = append(out, msg("user", b.String()))
		}
		if reply, ok := r.reply(e); ok {
			out = append(out, msg("assistant", reply))
		}
	}
	return out
}

// reply renders the output fields present in e the way the parse mode expects them:
// xml tags, the raw value (full_text with one present output) or indented JSON.
func (r *render) reply(e *sig.Map) (string, bool) {
	present := sig.NewMap()
	for _, f := range r.s.Outputs {
		if v, ok := e.Get(f.Name); ok {
			present.Set(f.Name, v)
		}
	}
	return replyText(r.t.Mode(), present)
}

func replyText(mode string, present *sig.Map) (string, bool) {
	switch {
	case present.Len() == 0:
		return "", false
	case mode == ParseXML:
		parts := make([]string, 0, present.Len())
		present.Range(func(k string, v any) bool {
			parts = append(parts, "<"+k+">"+py.Str(v)+"</"+k+">")
			return true
		})
		return strings.Join(parts, "\n"), true
	case mode == ParseFullText && present.Len() == 1:
		v, _ := present.Get(present.Keys()[0])
		return py.Str(v), true
	}
	return py.JSONIndent(adapter.Jsonable(present), 2), true
}

// mappedHistory is the EXTENSION {"role":"history","user":T,"assistant":T}: per history
// entry, T formatted with every key of the entry (str() values), then every signature
// field ("" when absent) and outputs_json, like the demos directive's templates.
func (r *render) mappedHistory(index int, m MessageTemplate) ([]lm.Message, error) {
	if r.hist == nil {
		return nil, nil
	}
	out := make([]lm.Message, 0, 2*len(r.hist.Messages))
	for _, e := range r.hist.Messages {
		lookup := func(k string) (py.FormatValue, bool) {
			if v, ok := e.Get(k); ok {
				return py.StrValue(py.Str(v)), true
			}
			return r.entryLookup(e, k)
		}
		u, a, err := formatPair(index, m, lookup)
		if err != nil {
			return nil, err
		}
		out = append(out, msg("user", u), msg("assistant", a))
	}
	return out, nil
}

// entryLookup is the demos directive context: outputs_json (json.dumps of the output
// fields, "" for absent ones), then str(entry.get(field, "")) for every signature field.
func (r *render) entryLookup(e *sig.Map, k string) (py.FormatValue, bool) {
	if k == "outputs_json" {
		outs := sig.NewMap()
		for _, f := range r.s.Outputs {
			v, ok := e.Get(f.Name)
			if !ok {
				v = ""
			}
			outs.Set(f.Name, v)
		}
		return py.StrValue(py.JSON(adapter.Jsonable(outs))), true
	}
	_, in := r.s.Input(k)
	_, out := r.s.Output(k)
	if !in && !out {
		return py.FormatValue{}, false
	}
	v, ok := e.Get(k)
	if !ok {
		return py.StrValue(""), true
	}
	return py.StrValue(py.Str(v)), true
}

func formatPair(index int, m MessageTemplate, lookup py.FormatLookup) (string, string, error) {
	u, err := py.FormatMap(*m.User, lookup)
	if err != nil {
		return "", "", newTemplateError(index, "user", *m.User, err.Offset, err.Msg)
	}
	a, err := py.FormatMap(*m.Assistant, lookup)
	if err != nil {
		return "", "", newTemplateError(index, "assistant", *m.Assistant, err.Offset, err.Msg)
	}
	return u, a, nil
}

// demosDirective expands {"role":"demos"}: per-demo user/assistant templates when both
// are given, the default demo messages otherwise.
func (r *render) demosDirective(index int, m MessageTemplate) ([]lm.Message, error) {
	if len(r.demos) == 0 {
		return nil, nil
	}
	if !m.Mapped() {
		return r.demoMessages(), nil
	}
	out := make([]lm.Message, 0, 2*len(r.demos))
	for _, d := range r.demos {
		u, a, err := formatPair(index, m, func(k string) (py.FormatValue, bool) { return r.entryLookup(d, k) })
		if err != nil {
			return nil, err
		}
		out = append(out, msg("user", u), msg("assistant", a))
	}
	return out, nil
}

// demoMessages is the default demo expansion: "name: value" lines with DSPy formatting
// for the inputs present (a demo without inputs is skipped), then the reply when any
// output is present.
func (r *render) demoMessages() []lm.Message {
	var out []lm.Message
	for _, d := range r.demos {
		var lines []string
		for _, f := range r.s.Inputs {
			if v, ok := d.Get(f.Name); ok {
				lines = append(lines, f.Name+": "+adapter.FormatFieldValue(f, v))
			}
		}
		if len(lines) == 0 {
			continue
		}
		out = append(out, msg("user", strings.Join(lines, "\n")))
		if reply, ok := r.reply(d); ok {
			out = append(out, msg("assistant", reply))
		}
	}
	return out
}
