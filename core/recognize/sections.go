package recognize

import (
	"fmt"
	"strings"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/sig"
)

// style is what differs between reading ChatAdapter and JSONAdapter messages.
type style interface {
	label() string
	requirements(s *sig.Signature) string
	parseAssistant(s *sig.Signature, content string) (*sig.Map, error)
}

func styleOf(name string) style {
	if name == AdapterJSON {
		return jsonStyle{}
	}
	return chatStyle{}
}

type chatStyle struct{}

func (chatStyle) label() string                        { return "ChatAdapter" }
func (chatStyle) requirements(s *sig.Signature) string { return adapter.OutputRequirements(s) }

const completedTail = "\n\n[[ ## completed ## ]]\n"

// parseAssistant reads "[[ ## o ## ]]⏎value" sections for every output, then the
// completed marker (§5 of the wire rules).
func (chatStyle) parseAssistant(s *sig.Signature, content string) (*sig.Map, error) {
	body, ok := strings.CutSuffix(content, completedTail)
	if !ok {
		return nil, fmt.Errorf("it does not end with the [[ ## completed ## ]] marker")
	}
	out, err := parseSections(s.Outputs, body)
	if err != nil {
		return nil, err
	}
	if out.Len() != len(s.Outputs) {
		return nil, fmt.Errorf("it has %d of the %d output sections (%s)", out.Len(), len(s.Outputs), fieldNames(s.Outputs))
	}
	return out, nil
}

type jsonStyle struct{}

func (jsonStyle) label() string                        { return "JSONAdapter" }
func (jsonStyle) requirements(s *sig.Signature) string { return adapter.JSON{}.OutputRequirements(s) }

// parseAssistant reads the outputs written as a JSON object (2-space indent).
func (jsonStyle) parseAssistant(s *sig.Signature, content string) (*sig.Map, error) {
	v, err := sig.DecodeJSON([]byte(content))
	if err != nil {
		return nil, fmt.Errorf("it is not the JSON object JSONAdapter writes: %w", err)
	}
	m, ok := v.(*sig.Map)
	if !ok {
		return nil, fmt.Errorf("it is JSON %s, not the object JSONAdapter writes", sig.KindName(v))
	}
	out := sig.NewMap()
	for _, f := range s.Outputs {
		val, ok := m.Get(f.Name)
		if !ok {
			return nil, fmt.Errorf("its JSON object has no %q key", f.Name)
		}
		out.Set(f.Name, val)
	}
	if m.Len() != len(s.Outputs) {
		return nil, fmt.Errorf("its JSON object has keys other than the outputs (%s)", fieldNames(s.Outputs))
	}
	return out, nil
}

func header(name string) string { return "[[ ## " + name + " ## ]]" }

// hasSection reports whether content has a section for the field at the start of a
// line where DSPy would put one.
func hasSection(content, name string) bool {
	h := header(name) + "\n"
	return strings.HasPrefix(content, h) || strings.Contains(content, "\n\n"+h)
}

// parseSections reads text made of "[[ ## f ## ]]⏎value" sections joined by "⏎⏎", for
// fields in the order of fs, each at most once (absent fields have no section). A value
// runs until the next header of a later field, so values may hold blank lines and even
// headers of fields that come before them. Values are decoded by the field's type.
func parseSections(fs []sig.Field, text string) (*sig.Map, error) {
	out := sig.NewMap()
	pos, next := 0, 0
	for pos < len(text) {
		j := -1
		for k := next; k < len(fs); k++ {
			if strings.HasPrefix(text[pos:], header(fs[k].Name)) {
				j = k
				break
			}
		}
		if j < 0 {
			return nil, fmt.Errorf("expected a section header for one of the fields %s at byte %d, found %s",
				fieldNames(fs[next:]), pos, excerpt(text, pos))
		}
		start := pos + len(header(fs[j].Name))
		if start < len(text) && text[start] != '\n' {
			return nil, fmt.Errorf("section %s at byte %d is not followed by a line break", header(fs[j].Name), pos)
		}
		if start < len(text) {
			start++
		}
		end := len(text)
		for k := j + 1; k < len(fs); k++ {
			if at := findHeader(text, start, fs[k].Name); at >= 0 && at < end {
				end = at
			}
		}
		out.Set(fs[j].Name, decodeValue(fs[j], text[start:end]))
		pos, next = end, j+1
		if pos < len(text) {
			pos += 2 // the "⏎⏎" before the next header
		}
	}
	return out, nil
}

// findHeader finds "⏎⏎[[ ## name ## ]]" at or after from, followed by a line break or
// the end of text; it returns the index of the "⏎⏎" or -1.
func findHeader(text string, from int, name string) int {
	h := "\n\n" + header(name)
	for from <= len(text) {
		i := strings.Index(text[from:], h)
		if i < 0 {
			return -1
		}
		at := from + i
		if after := at + len(h); after == len(text) || text[after] == '\n' {
			return at
		}
		from = at + 1
	}
	return -1
}

// decodeValue turns a rendered field value (§3 of the wire rules) back into a value that
// renders the same: Python scalars (True, None, 3, 0.5), JSON for lists and dicts, a
// History for a history field; anything else, and every str field, stays the text.
func decodeValue(f sig.Field, text string) any {
	if f.Type.IsStr() {
		return text
	}
	var v any
	switch text {
	case "True":
		v = true
	case "False":
		v = false
	case "None":
		v = nil
	default:
		d, err := sig.DecodeJSON([]byte(text))
		if err != nil {
			return text
		}
		if _, isString := d.(string); isString {
			return text // a JSON string literal renders verbatim, quotes and all
		}
		v = d
		if f.Type.IsHistory() {
			h, err := sig.HistoryFromValue(d)
			if err != nil {
				return text
			}
			v = h
		}
	}
	if adapter.FormatFieldValue(f, v) != text {
		return text
	}
	return v
}
