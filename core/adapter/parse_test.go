package adapter

import (
	"errors"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

func TestChatParse(t *testing.T) {
	s := sig.New("S", "x", []sig.Field{field("question", "str", "")}, []sig.Field{field("intent", "str", ""), field("n", "int", "")})
	cases := []struct {
		name, completion string
		want             string // sig.JSON of the result
	}{
		{"canonical", "[[ ## intent ## ]]\ntechnical\n\n[[ ## n ## ]]\n3\n\n[[ ## completed ## ]]", `{"intent":"technical","n":3}`},
		{"signature order", "[[ ## n ## ]]\n3\n[[ ## intent ## ]]\nx", `{"intent":"x","n":3}`},
		{"first occurrence wins", "[[ ## intent ## ]]\nfirst\n[[ ## n ## ]]\n1\n[[ ## intent ## ]]\nsecond", `{"intent":"first","n":1}`},
		{"same-line remainder", "[[ ## intent ## ]]  billing  \n[[ ## n ## ]] 2", `{"intent":"billing","n":2}`},
		{"indented header leaks", "  [[ ## intent ## ]]\ntechnical\n[[ ## n ## ]]\n1", `{"intent":"]]\ntechnical","n":1}`},
		{"indented header same line", "   [[ ## intent ## ]] technical\n[[ ## n ## ]]\n1", `{"intent":"]] technical","n":1}`},
		{"text after completed dropped", "[[ ## intent ## ]]\na\n[[ ## n ## ]]\n1\n[[ ## completed ## ]]\nmore [[ ## intent ## ]]", `{"intent":"a","n":1}`},
		{"bad spacing is text", "[[ ## intent ## ]]\na\n[[## n ##]]\n[[ ## n ## ]]\n5", `{"intent":"a\n[[## n ##]]","n":5}`},
		{"marker mid-line is text", "[[ ## intent ## ]]\nsee [[ ## n ## ]] here\n[[ ## n ## ]]\n7", `{"intent":"see [[ ## n ## ]] here","n":7}`},
		{"crlf", "[[ ## intent ## ]]\r\nline1\r\nline2\r\n[[ ## n ## ]]\r\n8\r\n", `{"intent":"line1\nline2","n":8}`},
		{"inputs and unknown ignored", "pre\n[[ ## question ## ]]\nq\n[[ ## other ## ]]\no\n[[ ## intent ## ]]\ni\n[[ ## n ## ]]\n1", `{"intent":"i","n":1}`},
		{"unicode name", "[[ ## intent ## ]]\nx\n[[ ## n ## ]]\n1\n[[ ## ñame ## ]]\nz", `{"intent":"x","n":1}`},
	}
	for _, c := range cases {
		got, err := ParseChat(s, c.completion)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if py.CompactJSON(got) != c.want {
			t.Errorf("%s: got %s, want %s", c.name, py.CompactJSON(got), c.want)
		}
	}
}

func TestChatParseErrors(t *testing.T) {
	s := sig.New("S", "x", nil, []sig.Field{field("a", "str", ""), field("b", "int", "")})
	completion := "[[ ## b ## ]]\n2\n\n[[ ## completed ## ]]"
	_, err := ParseChat(s, completion)
	want := "Adapter ChatAdapter failed to parse the LM response. \n\nLM Response: " + completion +
		" \n\nExpected to find output fields in the LM response: [a, b] \n\nActual output fields parsed from the LM response: [b] \n\n"
	var pe *ParseError
	if !errors.As(err, &pe) || err.Error() != want {
		t.Fatalf("got %q\nwant %q", err, want)
	}

	completion = "[[ ## a ## ]]\nx\n[[ ## b ## ]]\nforty-two"
	_, err = ParseChat(s, completion)
	prefix := "Failed to parse field b with value forty-two from the LM response. Error message: "
	suffix := "\n\nAdapter ChatAdapter failed to parse the LM response. \n\nLM Response: " + completion +
		" \n\nExpected to find output fields in the LM response: [a, b] \n\n"
	if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), prefix) || !strings.HasSuffix(err.Error(), suffix) || pe.Field != "b" {
		t.Fatalf("got %q", err)
	}
	if strings.Contains(err.Error(), "Actual output fields") {
		t.Error("conversion failures have no Actual line")
	}
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Errors[0].Kind != "int_parsing" {
		t.Errorf("want the wrapped pydantic-style error, got %#v", pe.Err)
	}
}

func TestChatParseDefaults(t *testing.T) {
	s := sig.New("S", "x", nil, []sig.Field{field("a", "str", ""), field("b", "Optional[int]", ""), field("c", "str | None", "")})
	got, err := ParseChat(s, "[[ ## c ## ]]\nNone\n[[ ## a ## ]]\nx")
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":"x","b":null,"c":"None"}`; py.CompactJSON(got) != want {
		t.Errorf("got %s, want %s", py.CompactJSON(got), want)
	}
}

func TestParseValue(t *testing.T) {
	cases := []struct {
		typ, text string
		want      string // sig.JSON; "" means an error
	}{
		{"str", "  kept as is", `"  kept as is"`},
		{"bool", "True", "true"}, {"bool", "true", "true"}, {"bool", `"true"`, "true"}, {"bool", "yes", "true"},
		{"bool", "1", "true"}, {"bool", "False", "false"}, {"bool", "false", "false"}, {"bool", "no", "false"},
		{"bool", "0", "false"}, {"bool", "maybe", ""}, {"bool", "True.", ""}, {"bool", "2", ""},
		{"int", "42", "42"}, {"int", "42.0", "42"}, {"int", "42.5", ""}, {"int", "forty-two", ""}, {"int", "42 apples", ""},
		{"int", "-7", "-7"}, {"int", "1_000", "1000"}, {"int", "99999999999999999999", "99999999999999999999"},
		{"float", "0.5", "0.5"}, {"float", "3", "3.0"}, {"float", "1e-05", "1e-05"}, {"float", "abc", ""},
		{"list[str]", `["a", "b"]`, `["a","b"]`}, {"list[str]", "['a', 'b']", `["a","b"]`}, {"list[str]", "a, b", ""},
		{"list[str]", "1. a\n2. b", ""}, {"list[str]", "[1, 2]", ""}, {"list[int]", "```json\n[1, 2, 3\n```", "[1,2,3]"},
		{"list[int]", "(1, 2)", "[1,2]"}, {"set[int]", "[1, 1, 2]", "[1,2]"}, {"tuple[int, str]", "[1, 'x']", `[1,"x"]`},
		{"tuple[int, str]", "[1]", ""},
		{"dict[str, int]", "{'a': 1,}", `{"a":1}`}, {"dict[str, int]", `{"a": "2"}`, `{"a":2}`}, {"dict[str, int]", "[]", ""},
		{"Optional[int]", "None", "null"}, {"Optional[int]", "5", "5"}, {"Optional[int]", "x", ""},
		{"str | None", "None", `"None"`}, {"Union[str, None]", "null", `"null"`},
		{"Union[int, str]", "5", "5"}, {"Union[int, str]", "five", `"five"`},
		{"Literal['low', 'high']", "low", `"low"`}, {"Literal['low', 'high']", "  'high' ", `"high"`},
		{"Literal['low', 'high']", "Literal['low']", `"low"`}, {"Literal['low', 'high']", `str["high"]`, `"high"`},
		{"Literal['low', 'high']", "medium", ""}, {"Literal['low', 'high']", "Low", ""},
		{"Literal[1, 2]", "1", ""},                      // DSPy compares the text with the int values: never equal
		{"Any", "{'a': [1, None]}", `{"a":[1,"None"]}`}, // json_repair reads None as text, {"Any", "plain words", `"plain words"`},
		{"History", `{"messages": [{"q": "a"}]}`, `{"messages":[{"q":"a"}]}`},
	}
	for _, c := range cases {
		got, err := ParseValue(sig.MustType(c.typ), c.text)
		switch {
		case c.want == "" && err == nil:
			t.Errorf("%s %q: want an error, got %s", c.typ, c.text, py.CompactJSON(got))
		case c.want != "" && err != nil:
			t.Errorf("%s %q: %v", c.typ, c.text, err)
		case c.want != "" && py.CompactJSON(got) != c.want:
			t.Errorf("%s %q: got %s, want %s", c.typ, c.text, py.CompactJSON(got), c.want)
		}
	}
	_, err := ParseValue(sig.MustType("Literal['low', 'high']"), "mid")
	if err == nil || err.Error() != "'mid' is not one of ('low', 'high')" {
		t.Errorf("literal error text: %v", err)
	}
	_, err = ParseValue(sig.MustType("Literal['only']"), "x")
	if err == nil || err.Error() != "'x' is not one of ('only',)" {
		t.Errorf("one-element tuple repr: %v", err)
	}
}

func TestConvertValueNonString(t *testing.T) {
	cases := []struct {
		typ  string
		v    any
		want string
	}{
		{"str", sig.NewMap("a", int64(1)), `"{'a': 1}"`},
		{"str", []any{"x", true, nil}, `"['x', True, None]"`},
		{"str", 2.0, `"2.0"`},
		{"int", 3.0, "3"},
		{"bool", int64(1), "true"},
		{"list[str]", []any{"a"}, `["a"]`},
		{"Literal['a', 'b']", "b", `"b"`},
	}
	for _, c := range cases {
		got, err := ConvertValue(sig.MustType(c.typ), c.v)
		if err != nil || py.CompactJSON(got) != c.want {
			t.Errorf("%s %v: got %s, %v; want %s", c.typ, c.v, py.CompactJSON(got), err, c.want)
		}
	}
}

func TestLiteralEval(t *testing.T) {
	cases := []struct{ text, want string }{
		{"True", "true"}, {"None", "null"}, {"'a' \"b\"", `"ab"`}, {"r'\\n'", `"\\n"`}, {"'\\x41\\n'", `"A\n"`},
		{"-3", "-3"}, {"+2.5", "2.5"}, {"1e3", "1000.0"}, {"0x1f", "31"}, {"1_0", "10"},
		{"[1, (2, 3), {'k': None}]", `[1,[2,3],{"k":null}]`}, {"{1, 2, 2}", "[1,2]"}, {"{}", "{}"},
		{"(1)", "1"}, {"(1,)", "[1]"}, {"1, 2", "[1,2]"}, {"[\n 1,\n 2\n]", "[1,2]"}, {"  5  \n", "5"},
		{"'''tri\nple'''", `"tri\nple"`}, {"{True: 1}", `{"true":1}`},
	}
	for _, c := range cases {
		got, err := py.LiteralEval(c.text, newDict)
		if err != nil || py.CompactJSON(got) != c.want {
			t.Errorf("%q: got %s, %v; want %s", c.text, py.CompactJSON(got), err, c.want)
		}
	}
	for _, bad := range []string{"", "yes", "42 apples", "True.", "a, b", "1. a", "[1, 2", "'open", "f'x'", "007", "1__0", "{[1]: 2}", "x = 1", "1\n2", "--"} {
		if v, err := py.LiteralEval(bad, newDict); err == nil {
			t.Errorf("%q: want an error, got %s", bad, py.CompactJSON(v))
		}
	}
}
