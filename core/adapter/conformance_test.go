package adapter

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

// TestValidateLikePydantic: results checked against pydantic 2.13's
// TypeAdapter(T).validate_python in lax mode (the value DSPy's parse_value hands it).
func TestValidateLikePydantic(t *testing.T) {
	cases := []struct {
		typ  string
		in   any
		want any    // expected value when kind == ""
		kind string // expected pydantic error type
	}{
		{"int", "42", int64(42), ""},
		{"int", " 42 ", int64(42), ""},
		{"int", "42.00", int64(42), ""},
		{"int", "-0.0", int64(0), ""},
		{"int", "4_2", int64(42), ""},
		{"int", "+4_2", int64(42), ""},
		{"int", "4_2.0", int64(42), ""},
		{"int", "111111111111111111111111111111", json.Number("111111111111111111111111111111"), ""},
		{"int", "42.", nil, "int_parsing"},
		{"int", ".0", nil, "int_parsing"},
		{"int", "5.", nil, "int_parsing"},
		{"int", "_42", nil, "int_parsing"},
		{"int", "42_", nil, "int_parsing"},
		{"int", "4__2", nil, "int_parsing"},
		{"int", "-", nil, "int_parsing"},
		{"int", "1 2", nil, "int_parsing"},
		{"int", 42.0, int64(42), ""},
		{"int", 42.5, nil, "int_from_float"},
		{"int", 1e20, nil, "int_parsing_size"},
		{"int", -1e20, nil, "int_parsing_size"},
		{"int", math.Inf(1), nil, "finite_number"},
		{"int", true, int64(1), ""},
		{"float", "1_000.5", 1000.5, ""},
		{"float", "1e5_0", 1e50, ""},
		{"float", "1e400", math.Inf(1), ""},
		{"float", "Infinity", math.Inf(1), ""},
		{"float", "+inf", math.Inf(1), ""},
		{"float", "_1", nil, "float_parsing"},
		{"float", "1__0", nil, "float_parsing"},
		{"float", "0x1p3", nil, "float_parsing"},
		{"float", "infinit", nil, "float_parsing"},
		{"float", int64(3), 3.0, ""},
		{"bool", "yes", true, ""},
		{"bool", "OFF", false, ""},
		{"bool", "t", true, ""},
		{"bool", "True ", nil, "bool_parsing"},
		{"bool", " yes", nil, "bool_parsing"},
		{"bool", int64(2), nil, "bool_parsing"},
		{"bool", 42.0, nil, "bool_parsing"},
		{"bool", 42.5, nil, "bool_type"},
		{"bool", 1e20, nil, "bool_type"},
		{"bool", 1.0, true, ""},
		{"Union[int, float]", "4_2", int64(42), ""},
		{"Union[int, float]", "5.", 5.0, ""},
		{"Union[int, float]", "1e400", math.Inf(1), ""},
		{"Union[str, int]", int64(3), int64(3), ""},
		{"tuple[int, str]", []any{}, nil, "missing"},
		{"tuple[int, str]", []any{true}, nil, "missing"},
		{"tuple[int, str]", []any{int64(1), "a", "b"}, nil, "too_long"},
		{"list[int]", []any{"1", 2.0}, []any{int64(1), int64(2)}, ""},
	}
	for _, c := range cases {
		got, err := Validate(sig.MustType(c.typ), c.in)
		if c.kind != "" {
			var ve *ValidationError
			if err == nil {
				t.Errorf("%s %s: got %s, want a %s error", c.typ, py.Repr(c.in), py.Text(got), c.kind)
			} else if !asValidation(err, &ve) || ve.Errors[0].Kind != c.kind {
				t.Errorf("%s %s: error %v, want kind %s", c.typ, py.Repr(c.in), err, c.kind)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %s: %v", c.typ, py.Repr(c.in), err)
			continue
		}
		if !py.Same(got, c.want) || py.TypeName(got) != py.TypeName(c.want) {
			t.Errorf("%s %s: got %s %s, want %s %s", c.typ, py.Repr(c.in), py.TypeName(got), py.Text(got), py.TypeName(c.want), py.Text(c.want))
		}
	}
}

func asValidation(err error, target **ValidationError) bool {
	ve, ok := err.(*ValidationError)
	*target = ve
	return ok
}

// TestJSONSchemas: pydantic 2.13's TypeAdapter(T).json_schema(), in DSPy's type-first
// order (type notes) and in pydantic's own alphabetical order (template schema style).
func TestJSONSchemas(t *testing.T) {
	cases := []struct{ typ, dspy, pydantic string }{
		{"list[str]", `{"type": "array", "items": {"type": "string"}}`, `{"items": {"type": "string"}, "type": "array"}`},
		{"dict[str, Any]", `{"type": "object", "additionalProperties": true}`, `{"additionalProperties": true, "type": "object"}`},
		{"dict", `{"type": "object", "additionalProperties": true}`, `{"additionalProperties": true, "type": "object"}`},
		{"list", `{"type": "array", "items": {}}`, `{"items": {}, "type": "array"}`},
		{"tuple", `{"type": "array", "items": {}}`, `{"items": {}, "type": "array"}`},
		{"tuple[int, str]", `{"type": "array", "maxItems": 2, "minItems": 2, "prefixItems": [{"type": "integer"}, {"type": "string"}]}`,
			`{"maxItems": 2, "minItems": 2, "prefixItems": [{"type": "integer"}, {"type": "string"}], "type": "array"}`},
		{"set[str]", `{"type": "array", "items": {"type": "string"}, "uniqueItems": true}`, `{"items": {"type": "string"}, "type": "array", "uniqueItems": true}`},
		{"Literal['a']", `{"type": "string", "const": "a"}`, `{"const": "a", "type": "string"}`},
		{"Literal[1, 2]", `{"type": "integer", "enum": [1, 2]}`, `{"enum": [1, 2], "type": "integer"}`},
		{"Literal['a', 1]", `{"enum": ["a", 1]}`, `{"enum": ["a", 1]}`},
		{"Literal[True, False]", `{"type": "boolean", "enum": [true, false]}`, `{"enum": [true, false], "type": "boolean"}`},
		{"Literal['a', None]", `{"enum": ["a", null]}`, `{"enum": ["a", null]}`},
		{"Optional[Literal['x', 'y']]", `{"anyOf": [{"type": "string", "enum": ["x", "y"]}, {"type": "null"}]}`,
			`{"anyOf": [{"enum": ["x", "y"], "type": "string"}, {"type": "null"}]}`},
		{"list[Literal['é', 'b']]", `{"type": "array", "items": {"type": "string", "enum": ["é", "b"]}}`,
			`{"items": {"enum": ["é", "b"], "type": "string"}, "type": "array"}`},
		{"Any", `{}`, `{}`},
		{"dict[int, str]", `{"type": "object", "additionalProperties": {"type": "string"}}`, `{"additionalProperties": {"type": "string"}, "type": "object"}`},
		{"Optional[list[int]]", `{"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]}`,
			`{"anyOf": [{"items": {"type": "integer"}, "type": "array"}, {"type": "null"}]}`},
		{"list[dict[str, Any]]", `{"type": "array", "items": {"type": "object", "additionalProperties": true}}`,
			`{"items": {"additionalProperties": true, "type": "object"}, "type": "array"}`},
	}
	for _, c := range cases {
		typ := sig.MustType(c.typ)
		if got := py.JSON(JSONSchema(typ)); got != c.dspy {
			t.Errorf("%s DSPy order:\n got %s\nwant %s", c.typ, got, c.dspy)
		}
		if got := py.JSON(PydanticJSONSchema(typ)); got != c.pydantic {
			t.Errorf("%s pydantic order:\n got %s\nwant %s", c.typ, got, c.pydantic)
		}
	}
	// The type note carries the DSPy order.
	want := `{o}        # note: the value you produce must adhere to the JSON schema: {"type": "object", "additionalProperties": true}`
	if got := Placeholder(field("o", "dict[str, Any]", ""), true); got != want {
		t.Errorf("note: got %q, want %q", got, want)
	}
}

// TestNonFiniteFloats: pydantic's JSON mode turns NaN and infinities inside containers
// into None (null) but leaves a bare float alone, so str() prints nan / inf.
func TestNonFiniteFloats(t *testing.T) {
	str, flt := field("f", "str", ""), field("f", "float", "")
	cases := []struct {
		name string
		f    sig.Field
		v    any
		want string
	}{
		{"bare nan", flt, math.NaN(), "nan"},
		{"bare inf", flt, math.Inf(1), "inf"},
		{"bare -inf", str, math.Inf(-1), "-inf"},
		{"list", flt, []any{math.NaN(), math.Inf(-1), 1.0}, "[null, null, 1.0]"},
		{"dict", str, sig.NewMap("a", math.Inf(1), "b", 1e-05), `{"a": null, "b": 1e-05}`},
		{"nested", str, sig.NewMap("a", []any{sig.NewMap("x", math.NaN())}), `{"a": [{"x": null}]}`},
		{"str field list keeps repr", str, []any{"a", "b"}, "[1] «a»\n[2] «b»"},
	}
	for _, c := range cases {
		if got := FormatFieldValue(c.f, c.v); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
	s := sig.New("S", "x", []sig.Field{field("q", "str", "")}, []sig.Field{field("score", "float", ""), field("l", "list[float]", "")})
	got := JSON{}.AssistantContent(s, sig.NewMap("score", math.NaN(), "l", []any{math.Inf(1)}), nil)
	if want := "{\n  \"score\": null,\n  \"l\": [\n    null\n  ]\n}"; got != want {
		t.Errorf("JSON assistant: got %q, want %q", got, want)
	}
}

// TestJSONAdapterMessages checks a whole JSONAdapter rendering: the output part of the
// system message is a 2-space JSON object of placeholders (non-ASCII kept), the final
// user message ends with the JSON requirements line, demo replies are JSON objects.
func TestJSONAdapterMessages(t *testing.T) {
	s := sig.New("S", "Rate the café.", []sig.Field{field("text", "str", "Texte à noter")},
		[]sig.Field{field("score", "int", ""), field("tags", "list[str]", "")})
	demos := []*sig.Map{
		sig.NewMap("text", "bon", "score", int64(4), "tags", []any{"ok"}),
		sig.NewMap("text", "mauvais", "score", int64(1)),
	}
	msgs, err := JSON{}.Format(Request{Signature: s, Demos: demos, Inputs: sig.NewMap("text", "très bon")})
	if err != nil {
		t.Fatal(err)
	}
	wantSystem := "Your input fields are:\n1. `text` (str): Texte à noter\nYour output fields are:\n1. `score` (int): \n2. `tags` (list[str]):\n" +
		"All interactions will be structured in the following way, with the appropriate values filled in.\n\n" +
		"Inputs will have the following structure:\n\n[[ ## text ## ]]\n{text}\n\n" +
		"Outputs will be a JSON object with the following fields.\n\n{\n" +
		"  \"score\": \"{score}        # note: the value you produce must be a single int value\",\n" +
		"  \"tags\": \"{tags}        # note: the value you produce must adhere to the JSON schema: {\\\"type\\\": \\\"array\\\", \\\"items\\\": {\\\"type\\\": \\\"string\\\"}}\"\n}\n" +
		"In adhering to this structure, your objective is: \n        Rate the café."
	want := []struct{ role, content string }{
		{"system", wantSystem},
		{"user", IncompleteDemoPrefix + "\n\n[[ ## text ## ]]\nmauvais"},
		{"assistant", "{\n  \"score\": 1,\n  \"tags\": \"Not supplied for this particular example. \"\n}"},
		{"user", "[[ ## text ## ]]\nbon"},
		{"assistant", "{\n  \"score\": 4,\n  \"tags\": [\n    \"ok\"\n  ]\n}"},
		{"user", "[[ ## text ## ]]\ntrès bon\n\nRespond with a JSON object in the following order of fields: `score` (must be formatted as a valid Python int), then `tags` (must be formatted as a valid Python list[str])."},
	}
	if len(msgs) != len(want) {
		t.Fatalf("got %d messages, want %d: %+v", len(msgs), len(want), msgs)
	}
	for i, w := range want {
		if msgs[i].Role != w.role || msgs[i].Content != w.content {
			t.Errorf("message %d:\n got %s %q\nwant %s %q", i, msgs[i].Role, msgs[i].Content, w.role, w.content)
		}
	}
	if strings.Contains(msgs[0].Content, `\u00e9`) {
		t.Error("non-ASCII must be kept as is (ensure_ascii=False)")
	}
}

// TestHistoryValueKinds: history entry values are rendered by their runtime kind, never
// whitespace-normalised except by the message-level strip (§4, §5, §7).
func TestHistoryValueKinds(t *testing.T) {
	s := sig.New("S", "x", []sig.Field{field("q", "str", ""), field("ctx", "str", ""), field("history", "History", "")},
		[]sig.Field{field("a", "str", ""), field("n", "int", "")})
	cases := []struct {
		name      string
		entry     *sig.Map
		user, bot string // "" user means no user message
	}{
		{"newlines and unicode", sig.NewMap("q", "  ünï\ncödé  \n", "a", "line1\n\nline2\n", "n", int64(2)),
			"[[ ## q ## ]]\n  ünï\ncödé", "[[ ## a ## ]]\nline1\n\nline2\n\n\n[[ ## n ## ]]\n2\n\n[[ ## completed ## ]]\n"},
		{"empty string and None", sig.NewMap("q", "", "ctx", nil, "a", ""),
			"[[ ## q ## ]]\n\n\n[[ ## ctx ## ]]\nNone", "[[ ## a ## ]]\n\n\n[[ ## n ## ]]\nNone\n\n[[ ## completed ## ]]\n"},
		{"list and dict", sig.NewMap("q", []any{"x", "y"}, "ctx", sig.NewMap("k", []any{int64(1), 2.5}), "a", []any{}, "n", 3.0),
			"[[ ## q ## ]]\n[1] «x»\n[2] «y»\n\n[[ ## ctx ## ]]\n{\"k\": [1, 2.5]}", "[[ ## a ## ]]\nN/A\n\n[[ ## n ## ]]\n3.0\n\n[[ ## completed ## ]]\n"},
		{"no inputs", sig.NewMap("a", "only", "history", "ignored"),
			"", "[[ ## a ## ]]\nonly\n\n[[ ## n ## ]]\nNone\n\n[[ ## completed ## ]]\n"},
		{"floats", sig.NewMap("q", 1e16, "ctx", 1e-05, "a", true, "n", math.Copysign(0, -1)),
			"[[ ## q ## ]]\n1e+16\n\n[[ ## ctx ## ]]\n1e-05", "[[ ## a ## ]]\nTrue\n\n[[ ## n ## ]]\n-0.0\n\n[[ ## completed ## ]]\n"},
	}
	for _, c := range cases {
		msgs, err := Chat{}.Format(Request{Signature: s, Inputs: sig.NewMap("q", "now", "history", sig.History{Messages: []*sig.Map{c.entry}})})
		if err != nil {
			t.Fatal(err)
		}
		turn := msgs[1 : len(msgs)-1]
		var gotUser, gotBot string
		for _, m := range turn {
			if m.Role == "user" {
				gotUser = m.Content
			} else {
				gotBot = m.Content
			}
		}
		if len(turn) != map[bool]int{true: 2, false: 1}[c.user != ""] || gotUser != c.user || gotBot != c.bot {
			t.Errorf("%s:\n got %d msgs user %q bot %q\nwant user %q bot %q", c.name, len(turn), gotUser, gotBot, c.user, c.bot)
		}
	}
}
