package llm

import (
	"strings"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/recognize"
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
	outputs []sig.Field
}

// fromMessages fills in what Meta lacks from the messages alone (a request that reached
// the demo model through the proxy, or `ask`): a request DSPy's ChatAdapter or
// JSONAdapter wrote is read back by core/recognize into its adapter, signature and
// inputs; anything else is a plain chat whose input is the last user message.
func fromMessages(meta lm.Meta, msgs []lm.Message) lm.Meta {
	if meta.Signature != nil {
		return meta
	}
	if rq := recognize.Parse(msgs); rq.Adapter != "" {
		meta.Adapter, meta.Signature = rq.Adapter, rq.Signature
		if meta.Inputs == nil {
			meta.Inputs = rq.Inputs
		}
		return meta
	}
	if meta.Inputs == nil {
		meta.Inputs = sig.NewMap()
		for i := len(msgs) - 1; i >= 0; i-- {
			if msgs[i].Role == "user" {
				if text := strings.TrimSpace(msgs[i].Content); text != "" {
					meta.Inputs.Set("text", text)
				}
				break
			}
		}
	}
	return meta
}

// detectFormat reads the answer format from Meta (filled in by the engine, or by
// fromMessages).
func detectFormat(meta lm.Meta, msgs []lm.Message) demoFormat {
	var f demoFormat
	if s := meta.Signature; s != nil {
		f.outputs = append(f.outputs, s.Outputs...)
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
		default:
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
