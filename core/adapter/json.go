package adapter

import (
	"strings"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

// JSON is DSPy 3.3.1's JSONAdapter. It subclasses ChatAdapter: the field descriptions,
// the objective, the user sections and the demo/history layout are ChatAdapter's; the
// field structure, the requirements line and the assistant content are JSON.
// (Structured-output response_format is a request parameter, not message text, and is
// out of scope here.)
type JSON struct{}

var _ Adapter = JSON{}

// Name implements Adapter.
func (JSON) Name() string { return "json" }

// Format implements Adapter.
func (JSON) Format(req Request) ([]lm.Message, error) { return formatMessages(jsonStyle{}, req) }

// Parse implements Adapter.
func (JSON) Parse(s *sig.Signature, completion string) (*sig.Map, error) {
	return ParseJSON(s, completion)
}

// SystemMessage is JSONAdapter's system message for s.
func (JSON) SystemMessage(s *sig.Signature) string { return systemMessage(jsonStyle{}, s) }

// UserContent is format_user_message_content with JSONAdapter's requirements line.
func (JSON) UserContent(s *sig.Signature, values *sig.Map, prefix string, mainRequest bool) string {
	return userContent(jsonStyle{}, s, values, prefix, mainRequest)
}

// AssistantContent is JSONAdapter.format_assistant_message_content: the outputs as a
// JSON object with 2-space indentation (missing ones set to missing; nil is null).
func (JSON) AssistantContent(s *sig.Signature, values *sig.Map, missing any) string {
	return jsonStyle{}.assistant(s, values, missing)
}

// OutputRequirements is JSONAdapter's "Respond with a JSON object ..." line.
func (JSON) OutputRequirements(s *sig.Signature) string { return jsonStyle{}.requirements(s) }

// FieldStructure is JSONAdapter.format_field_structure.
func (JSON) FieldStructure(s *sig.Signature) string { return jsonStyle{}.fieldStructure(s) }

type jsonStyle struct{}

func (jsonStyle) name() string { return "json" }

func (jsonStyle) fieldStructure(s *sig.Signature) string {
	outs := sig.NewMap()
	for _, f := range s.Outputs {
		outs.Set(f.Name, Placeholder(f, true))
	}
	parts := []string{
		structureIntro,
		"Inputs will have the following structure:",
		placeholderBlock(s.Inputs, false),
		"Outputs will be a JSON object with the following fields.",
		py.JSONIndent(outs, 2),
	}
	return py.Strip(strings.Join(parts, "\n\n"))
}

func (jsonStyle) requirements(s *sig.Signature) string {
	items := make([]string, len(s.Outputs))
	for i, f := range s.Outputs {
		items[i] = "`" + f.Name + "`" + typeInfo(f)
	}
	return "Respond with a JSON object in the following order of fields: " + strings.Join(items, ", then ") + "."
}

func (jsonStyle) assistant(s *sig.Signature, values *sig.Map, missing any) string {
	out := sig.NewMap()
	for _, f := range s.Outputs {
		v, ok := values.Get(f.Name)
		if !ok {
			v = missing
		}
		out.Set(f.Name, sig.Normalize(v))
	}
	return py.JSONIndent(Jsonable(out), 2)
}

// ParseJSON is JSONAdapter.parse: the completion (or, failing that, its first balanced
// {...}) is read with json_repair; only output keys are kept; each value is converted
// with ConvertValue; a missing field whose annotation allows None is None
// (apply_output_field_defaults), any other missing field an AdapterParseError naming
// JSONAdapter.
func ParseJSON(s *sig.Signature, completion string) (*sig.Map, error) {
	parsed, err := repairLoads(completion)
	if _, ok := parsed.(*sig.Map); !ok && err == nil {
		if obj, found := FirstBalancedObject(completion); found {
			completion = obj
			parsed, err = repairLoads(completion)
		}
	}
	if err != nil {
		return nil, err
	}
	obj, ok := parsed.(*sig.Map)
	if !ok {
		return nil, &ParseError{Adapter: "JSONAdapter", Response: completion, Expected: outputNames(s),
			Message: "LM response cannot be serialized to a JSON object."}
	}
	fields := sig.NewMap()
	var convErr error
	obj.Range(func(k string, v any) bool {
		f, ok := s.Output(k)
		if !ok {
			return true
		}
		cv, err := ConvertValue(typ(f), v)
		if err != nil {
			convErr = &ParseError{Adapter: "JSONAdapter", Response: completion, Expected: outputNames(s),
				Field: k, Err: err, Bare: true}
			return false
		}
		fields.Set(k, cv)
		return true
	})
	if convErr != nil {
		return nil, convErr
	}
	return finishParse(s, fields, "JSONAdapter", completion, true)
}

// FirstBalancedObject finds what the recursive regex \{(?:[^{}]|(?R))*\} finds: the
// balanced {...} with the earliest start (braces inside strings count, as in DSPy and the
// template adapter's json parse mode, which shares it).
func FirstBalancedObject(s string) (string, bool) {
	var stack []int
	best, bestEnd := -1, -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{':
			stack = append(stack, i)
		case '}':
			if len(stack) == 0 {
				continue
			}
			start := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if best < 0 || start < best {
				best, bestEnd = start, i
			}
		}
	}
	if best < 0 {
		return "", false
	}
	return s[best : bestEnd+1], true
}
