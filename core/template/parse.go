package template

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

func outputNames(s *sig.Signature) []string {
	names := make([]string, len(s.Outputs))
	for i, f := range s.Outputs {
		names[i] = f.Name
	}
	return names
}

// parseErr builds DSPy's AdapterParseError as the reference raises it (adapter name
// "TemplateAdapter"); parsed non-nil adds the "Actual output fields" line.
func (t *Template) parseErr(s *sig.Signature, completion, message string, parsed *sig.Map, field string, err error) *adapter.ParseError {
	e := &adapter.ParseError{Adapter: "TemplateAdapter", Response: completion, Expected: outputNames(s), Message: message, Field: field, Err: err}
	if parsed != nil {
		e.Parsed = append([]string{}, parsed.Keys()...)
	}
	return e
}

// Parse turns a completion into output values according to the parse mode.
func (t *Template) Parse(s *sig.Signature, completion string) (*sig.Map, error) {
	if s == nil {
		return nil, fmt.Errorf("template: parse without a signature")
	}
	if t.ParseFunc != nil {
		return t.ParseFunc(s, completion)
	}
	switch t.Mode() {
	case ParseFullText:
		return t.parseFullText(s, completion)
	case ParseChat:
		// The reference delegates to ChatAdapter().parse, whose AdapterParseError (naming
		// ChatAdapter) reaches the caller unchanged.
		return adapter.Chat{}.Parse(s, completion)
	case ParseXML:
		return t.parseXML(s, StripFences(completion))
	case ParseJSON:
		return t.parseJSON(s, StripFences(completion))
	}
	return nil, fmt.Errorf("template: unknown parse_mode %q (want json, full_text, xml or chat)", t.ParseMode)
}

// StripFences removes a leading ``` line and a trailing ``` line when the trimmed text
// starts with ``` (the reference's _strip_markdown_code_fences); other text is returned
// unchanged, untrimmed.
func StripFences(text string) string {
	stripped := py.Strip(text)
	if !strings.HasPrefix(stripped, "```") {
		return text
	}
	lines := py.SplitLines(stripped)
	if len(lines) == 0 {
		return text
	}
	if strings.HasPrefix(lines[0], "```") {
		lines = lines[1:]
	}
	if len(lines) > 0 && strings.HasPrefix(py.Strip(lines[len(lines)-1]), "```") {
		lines = lines[:len(lines)-1]
	}
	return py.Strip(strings.Join(lines, "\n"))
}

func (t *Template) parseJSON(s *sig.Signature, completion string) (*sig.Map, error) {
	fields, ok := adapter.RepairLoads(completion).(*sig.Map)
	if !ok {
		if obj, found := adapter.FirstBalancedObject(completion); found {
			fields, ok = adapter.RepairLoads(obj).(*sig.Map)
		}
	}
	if !ok {
		return nil, t.parseErr(s, completion, "No JSON object found in LM response.", nil, "", nil)
	}
	parsed := sig.NewMap()
	for _, f := range s.Outputs {
		v, present := fields.Get(f.Name)
		if !present {
			continue
		}
		cv, err := adapter.ConvertValue(f.Type, v)
		if err != nil {
			return nil, t.parseErr(s, completion, fmt.Sprintf("Failed to parse field '%s': %v", f.Name, err), nil, f.Name, err)
		}
		parsed.Set(f.Name, cv)
	}
	if parsed.Len() != len(s.Outputs) {
		return nil, t.parseErr(s, completion, "", parsed, "", nil)
	}
	return parsed, nil
}

func (t *Template) parseFullText(s *sig.Signature, completion string) (*sig.Map, error) {
	if len(s.Outputs) != 1 {
		return nil, t.parseErr(s, completion, fmt.Sprintf("parse_mode='full_text' requires exactly 1 output field, got %d: %s",
			len(s.Outputs), py.Repr(stringList(outputNames(s)))), nil, "", nil)
	}
	f := s.Outputs[0]
	v, err := adapter.ParseValue(f.Type, py.Strip(completion))
	if err != nil {
		// The reference does not catch here: parse_value's own error reaches the caller.
		e := t.parseErr(s, completion, "", nil, f.Name, err)
		e.Bare = true
		return nil, e
	}
	return sig.NewMap(f.Name, v), nil
}

func stringList(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

var xmlRes sync.Map // field name -> *regexp.Regexp

func xmlRe(name string) *regexp.Regexp {
	if re, ok := xmlRes.Load(name); ok {
		return re.(*regexp.Regexp)
	}
	re := regexp.MustCompile(`(?s)<` + regexp.QuoteMeta(name) + `>(.*?)</` + regexp.QuoteMeta(name) + `>`)
	xmlRes.Store(name, re)
	return re
}

func (t *Template) parseXML(s *sig.Signature, completion string) (*sig.Map, error) {
	parsed := sig.NewMap()
	for _, f := range s.Outputs {
		m := xmlRe(f.Name).FindStringSubmatch(completion)
		if m == nil {
			continue
		}
		v, err := adapter.ParseValue(f.Type, py.Strip(m[1]))
		if err != nil {
			return nil, t.parseErr(s, completion, fmt.Sprintf("Failed to parse XML field '%s': %v", f.Name, err), nil, f.Name, err)
		}
		parsed.Set(f.Name, v)
	}
	if parsed.Len() != len(s.Outputs) {
		var missing []string
		for _, f := range s.Outputs {
			if !parsed.Has(f.Name) {
				missing = append(missing, py.ReprString(f.Name, false))
			}
		}
		return nil, t.parseErr(s, completion, "Missing XML tags for output fields: {"+strings.Join(missing, ", ")+"}", parsed, "", nil)
	}
	return parsed, nil
}

// FinetuneReply is the assistant message format_finetune_data appends: the raw value
// (full_text with one output field), <k>v</k> lines (xml) or indented JSON otherwise,
// over the given outputs in their own order.
func (t *Template) FinetuneReply(s *sig.Signature, outputs *sig.Map) string {
	switch {
	case t.Mode() == ParseFullText && len(s.Outputs) == 1:
		v, ok := outputs.Get(s.Outputs[0].Name)
		if !ok {
			return ""
		}
		return py.Str(v)
	case t.Mode() == ParseXML:
		var parts []string
		outputs.Range(func(k string, v any) bool {
			parts = append(parts, "<"+k+">"+py.Str(v)+"</"+k+">")
			return true
		})
		return strings.Join(parts, "\n")
	}
	// json.dumps here runs with the default ensure_ascii=True, over each value passed
	// through serialize_for_json on its own (a bare NaN stays NaN, nested ones are null).
	vals := sig.NewMap()
	outputs.Range(func(k string, v any) bool {
		vals.Set(k, adapter.Jsonable(v))
		return true
	})
	return py.EnsureASCII(py.JSONIndent(vals, 2))
}
