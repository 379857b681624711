package llm

import (
	"regexp"
	"strings"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

type formatKind int

const (
	formatPlain    formatKind = iota // an ordinary chat: answer in prose
	formatChat                       // [[ ## field ## ]] sections (ChatAdapter, template parse_mode chat)
	formatJSON                       // one JSON object (JSONAdapter, template parse_mode json)
	formatXML                        // <field>value</field> lines (template parse_mode xml)
	formatFullText                   // the single output's value as the whole text
)

// demoFormat is what the demo model must produce: a format and the output fields.
type demoFormat struct {
	kind    formatKind
	inputs  []string
	outputs []sig.Field
}

// detectFormat reads the answer format from Meta when the caller filled it in, and
// otherwise from the rendered messages (DSPy's system message lists the fields).
func detectFormat(meta lm.Meta, msgs []lm.Message) demoFormat {
	var f demoFormat
	if s := meta.Signature; s != nil {
		for _, in := range s.Inputs {
			f.inputs = append(f.inputs, in.Name)
		}
		f.outputs = append(f.outputs, s.Outputs...)
	} else {
		f.inputs, f.outputs = fieldsFromMessages(msgs)
	}
	switch meta.Adapter {
	case "chat":
		f.kind = formatChat
	case "json":
		f.kind = formatJSON
	case "template":
		switch meta.ParseMode {
		case "full_text":
			f.kind = formatFullText
		case "xml":
			f.kind = formatXML
		case "chat":
			f.kind = formatChat
		default:
			f.kind = formatJSON
		}
	default:
		switch {
		case anyContains(msgs, "Outputs will be a JSON object", "Respond with a JSON object"):
			f.kind = formatJSON
		case anyContains(msgs, "[[ ## completed ## ]]"):
			f.kind = formatChat
		case meta.Signature != nil:
			f.kind = formatChat // DSPy's default adapter
		}
	}
	if len(f.outputs) == 0 {
		f.kind = formatPlain
	}
	if f.kind == formatFullText && len(f.outputs) != 1 {
		f.kind = formatJSON
	}
	return f
}

// anyContains says whether a message contains one of subs (no joined copy of a long
// conversation: that made each demo call quadratic in the history's length).
func anyContains(msgs []lm.Message, subs ...string) bool {
	for _, m := range msgs {
		for _, sub := range subs {
			if strings.Contains(m.Content, sub) {
				return true
			}
		}
	}
	return false
}

var fieldLine = regexp.MustCompile("^\\d+\\. `([^`]+)` \\((.*)$")

// fieldsFromMessages parses DSPy's "Your input fields are:" / "Your output fields are:"
// numbered lists ("1. `intent` (Literal['a', 'b']): desc", optionally followed by a
// "Constraints: ..." line) from the first message that has them.
func fieldsFromMessages(msgs []lm.Message) (inputs []string, outputs []sig.Field) {
	for _, m := range msgs {
		if !strings.Contains(m.Content, "Your output fields are:") {
			continue
		}
		section := ""
		for _, line := range strings.Split(m.Content, "\n") {
			switch {
			case strings.HasPrefix(line, "Your input fields are:"):
				section = "in"
				continue
			case strings.HasPrefix(line, "Your output fields are:"):
				section = "out"
				continue
			case strings.HasPrefix(line, "Constraints: ") && section == "out" && len(outputs) > 0:
				outputs[len(outputs)-1].Constraints = parseConstraints(strings.TrimPrefix(line, "Constraints: "))
				continue
			}
			mm := fieldLine.FindStringSubmatch(line)
			if mm == nil {
				if section == "out" && !strings.HasPrefix(line, " ") && line != "" {
					section = "" // the list is over (descriptions may span lines; those are indented or plain text)
				}
				continue
			}
			typeText, desc := splitTypeDesc(mm[2])
			switch section {
			case "in":
				inputs = append(inputs, mm[1])
			case "out":
				outputs = append(outputs, sig.Field{Name: mm[1], Desc: desc, Type: typeFromName(typeText)})
			}
		}
		if len(outputs) > 0 {
			return inputs, outputs
		}
	}
	return nil, nil
}

// splitTypeDesc splits "list[str]): desc" at the parenthesis closing the type, minding
// brackets and quotes inside Literal values.
func splitTypeDesc(s string) (typ, desc string) {
	depth := 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '[' || c == '(':
			depth++
		case c == ']':
			depth--
		case c == ')':
			if depth == 0 {
				return s[:i], strings.TrimSpace(strings.TrimPrefix(s[i+1:], ":"))
			}
			depth--
		}
	}
	return s, ""
}

// typeFromName parses a DSPy type name back into a type; unknown names (enums, models)
// are treated as str.
func typeFromName(name string) *sig.Type {
	name = strings.ReplaceAll(name, "UnionType[", "Union[")
	if t, err := sig.ParseType(name); err == nil {
		return t
	}
	return sig.TStr
}

var constraintKeys = map[string]string{
	"minimum length": "min_length", "maximum length": "max_length", "greater than": "gt",
	"greater than or equal to": "ge", "less than": "lt", "less than or equal to": "le",
}

func parseConstraints(s string) *sig.Map {
	m := sig.NewMap()
	for _, part := range strings.Split(s, ", ") {
		k, v, ok := strings.Cut(part, ": ")
		if key, known := constraintKeys[k]; ok && known {
			if val, err := sig.DecodeJSON([]byte(v)); err == nil {
				m.Set(key, val)
			}
		}
	}
	if m.Len() == 0 {
		return nil
	}
	return m
}

var sectionHeader = regexp.MustCompile(`^\[\[ ## (\w+) ## \]\]`)

// inputsFromMessages recovers the call's inputs from the last user message: its
// [[ ## field ## ]] sections, else "name: value" lines for known inputs, else the
// whole text as "text".
func inputsFromMessages(msgs []lm.Message, f demoFormat) *sig.Map {
	last := ""
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			last = msgs[i].Content
			break
		}
	}
	if i := strings.Index(last, "\n\nRespond with "); i >= 0 {
		last = last[:i]
	}
	out := sig.NewMap()
	name := ""
	var buf []string
	flush := func() {
		if name != "" && name != "completed" {
			out.Set(name, py.Strip(strings.Join(buf, "\n")))
		}
	}
	for _, line := range strings.Split(last, "\n") {
		if m := sectionHeader.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			flush()
			name, buf = m[1], nil
			continue
		}
		buf = append(buf, line)
	}
	flush()
	if out.Len() > 0 {
		return out
	}
	for _, line := range strings.Split(last, "\n") {
		for _, in := range f.inputs {
			if v, ok := strings.CutPrefix(line, in+": "); ok && !out.Has(in) {
				out.Set(in, v)
			}
		}
	}
	if out.Len() == 0 && strings.TrimSpace(last) != "" {
		out.Set("text", strings.TrimSpace(last))
	}
	return out
}

// render writes the outputs in the format's syntax.
func render(f demoFormat, outputs *sig.Map) string {
	text := func(v any) string { return py.Text(v) }
	switch f.kind {
	case formatJSON:
		return py.JSONIndent(outputs, 2)
	case formatXML:
		var lines []string
		outputs.Range(func(k string, v any) bool {
			lines = append(lines, "<"+k+">"+text(v)+"</"+k+">")
			return true
		})
		return strings.Join(lines, "\n")
	case formatFullText:
		v, _ := outputs.Get(f.outputs[0].Name)
		return text(v)
	}
	var parts []string
	outputs.Range(func(k string, v any) bool {
		parts = append(parts, "[[ ## "+k+" ## ]]\n"+text(v))
		return true
	})
	return strings.Join(parts, "\n\n") + "\n\n[[ ## completed ## ]]"
}
