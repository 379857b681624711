package template

import (
	"strconv"
	"strings"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

// inputsFunc is {inputs(style=...)}: every non-History input field with its formatted
// value ("" when not given).
func (r *render) inputsFunc(style string) string {
	var parts []string
	for _, f := range r.s.Inputs {
		if f.Type.IsHistory() {
			continue
		}
		v := r.ctx.Vars[f.Name]
		switch style {
		case "xml":
			parts = append(parts, "<"+f.Name+">"+v+"</"+f.Name+">")
		case "json":
			parts = append(parts, `"`+f.Name+`": `+py.JSON(v))
		default: // "yaml" and the default are the same
			parts = append(parts, f.Name+": "+v)
		}
	}
	if style == "json" {
		return "{\n  " + strings.Join(parts, ",\n  ") + "\n}"
	}
	return strings.Join(parts, "\n")
}

// outputsFunc is {outputs(style=...)}: DSPy's numbered field descriptions by default,
// pydantic JSON schemas for "schema", <name>desc</name> tags for "xml".
func outputsFunc(s *sig.Signature, style, wrap string) string {
	switch style {
	case "schema":
		m := sig.NewMap()
		for _, f := range s.Outputs {
			m.Set(f.Name, adapter.PydanticJSONSchema(f.Type))
		}
		return py.JSONIndent(m, 2)
	case "xml":
		indent := ""
		if wrap != "" {
			indent = "  "
		}
		parts := make([]string, len(s.Outputs))
		for i, f := range s.Outputs {
			desc := f.Desc
			if desc == "" {
				desc = "${" + f.Name + "}" // DSPy's placeholder desc (the README is wrong here)
			}
			parts[i] = indent + "<" + f.Name + ">" + desc + "</" + f.Name + ">"
		}
		body := strings.Join(parts, "\n")
		if wrap != "" {
			return "<" + wrap + ">\n" + body + "\n</" + wrap + ">"
		}
		return body
	}
	return fieldDescriptions(s.Outputs)
}

// fieldDescriptions is DSPy's get_field_description_string: "1. `name` (type): desc"
// lines with an optional Constraints line; the whole text is stripped at the end only.
func fieldDescriptions(fields []sig.Field) string {
	parts := make([]string, len(fields))
	for i, f := range fields {
		desc := f.Desc
		if desc == "${"+f.Name+"}" {
			desc = "" // DSPy's placeholder counts as no description
		}
		p := strconv.Itoa(i+1) + ". `" + f.Name + "` (" + f.Type.Name() + "): " + desc
		if c := f.ConstraintText(); c != "" {
			p += "\nConstraints: " + c
		}
		parts[i] = p
	}
	return py.Strip(strings.Join(parts, "\n"))
}

// demosInline is {demos(style=...)}: each demo's fields (inputs then outputs, present
// ones only) with raw str() values; demos joined by a blank line.
func (r *render) demosInline(style string) string {
	if len(r.demos) == 0 {
		return ""
	}
	fields := make([]string, 0, len(r.s.Inputs)+len(r.s.Outputs))
	for _, f := range r.s.Inputs {
		fields = append(fields, f.Name)
	}
	for _, f := range r.s.Outputs {
		fields = append(fields, f.Name)
	}
	blocks := make([]string, len(r.demos))
	for i, d := range r.demos {
		var lines []string
		present := sig.NewMap()
		for _, k := range fields {
			v, ok := d.Get(k)
			if !ok {
				continue
			}
			present.Set(k, v)
			switch style {
			case "xml":
				lines = append(lines, "<"+k+">"+py.Str(v)+"</"+k+">")
			case "yaml":
				lines = append(lines, k+": "+py.Str(v))
			default:
				lines = append(lines, "  "+k+": "+py.Str(v))
			}
		}
		switch style {
		case "json":
			blocks[i] = py.JSONIndent(adapter.Jsonable(present), 2)
		case "xml", "yaml":
			blocks[i] = strings.Join(lines, "\n")
		default:
			blocks[i] = strings.Join(append([]string{"Example " + strconv.Itoa(i+1) + ":"}, lines...), "\n")
		}
	}
	return strings.Join(blocks, "\n\n")
}

// historyInline is {history(style=...)} (and {outer_history(...)}): every key of every
// message, not filtered by the signature.
func historyInline(h *sig.History, style string) string {
	if h == nil || len(h.Messages) == 0 {
		return ""
	}
	if style == "json" {
		return py.JSONIndent(adapter.Jsonable(sig.Normalize(h.Messages)), 2)
	}
	var b strings.Builder
	for i, m := range h.Messages {
		n := strconv.Itoa(i + 1)
		switch style {
		case "yaml":
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString("- turn: " + n)
			m.Range(func(k string, v any) bool {
				b.WriteString("\n  " + k + ": " + py.Str(v))
				return true
			})
		case "xml":
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString("<turn>\n")
			first := true
			m.Range(func(k string, v any) bool {
				if !first {
					b.WriteByte('\n')
				}
				first = false
				b.WriteString("  <" + k + ">" + py.Str(v) + "</" + k + ">")
				return true
			})
			b.WriteString("\n</turn>")
		default:
			if i > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString("Turn " + n + ":")
			m.Range(func(k string, v any) bool {
				b.WriteString("\n  " + k + ": " + py.Str(v))
				return true
			})
		}
	}
	return b.String()
}
