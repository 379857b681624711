package sig

import (
	"errors"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/py"
)

func TestDecodeJSONKeepsKinds(t *testing.T) {
	v, err := DecodeJSON([]byte(`{"z": 2.0, "a": 2, "big": 123456789012345678901234, "e": 1e2, "l": [true, null]}`))
	if err != nil {
		t.Fatal(err)
	}
	m := v.(*Map)
	if got := strings.Join(m.Keys(), ","); got != "z,a,big,e,l" {
		t.Errorf("key order %s", got)
	}
	if z, _ := m.Get("z"); z != 2.0 {
		t.Errorf("2.0 should be float64, got %#v", z)
	}
	if a, _ := m.Get("a"); a != int64(2) {
		t.Errorf("2 should be int64, got %#v", a)
	}
	if got := py.Text(m); got != `{"z": 2.0, "a": 2, "big": 123456789012345678901234, "e": 100.0, "l": [true, null]}` {
		t.Errorf("round trip %s", got)
	}
	for _, bad := range []string{`{"a":`, `{"a": 1} x`, `[1,]`, ``} {
		if _, err := DecodeJSON([]byte(bad)); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func TestParseTypeNames(t *testing.T) {
	cases := []struct{ in, name string }{
		{"str", "str"}, {"int", "int"}, {"float", "float"}, {"bool", "bool"}, {"History", "History"},
		{"dspy.History", "History"}, {"Any", "Any"}, {"typing.Any", "Any"}, {"None", "NoneType"},
		{"list", "list"}, {"list[str]", "list[str]"}, {"List[int]", "list[int]"}, {"dict[str, int]", "dict[str, int]"},
		{"Dict[str, list[int]]", "dict[str, list[int]]"}, {"tuple[int, str]", "tuple[int, str]"}, {"set[str]", "set[str]"},
		{"Optional[int]", "Union[int, NoneType]"}, {"Union[int, None]", "Union[int, NoneType]"},
		{"Union[int, Union[str, None]]", "Union[int, str, NoneType]"}, {"Union[int, int]", "int"},
		{"int | None", "UnionType[int, NoneType]"}, {"str | None", "UnionType[str, NoneType]"},
		{"str | int | None", "UnionType[str, int, NoneType]"}, {"Optional[str] | int", "Union[str, NoneType, int]"},
		{"Literal['a'] | None", "Union[Literal['a'], NoneType]"},
		{"Literal['low', 'high']", "Literal['low', 'high']"}, {`Literal["it's"]`, `Literal["it's"]`},
		{`Literal['a\'b"c']`, `Literal['a\'b"c']`}, {`Literal["a\"b"]`, `Literal['a"b']`},
		{"Literal[1, -2, True, None]", "Literal[1, -2, True, None]"},
		{" list[ str ] ", "list[str]"},
	}
	for _, c := range cases {
		typ, err := ParseType(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if got := typ.Name(); got != c.name {
			t.Errorf("%q: Name() = %q, want %q", c.in, got, c.name)
		}
	}
}

func TestParseTypeErrors(t *testing.T) {
	cases := []struct {
		in  string
		col int
		msg string
	}{
		{"lst[str]", 1, `unknown type "lst"`},
		{"list[str", 9, "missing ']'"},
		{"list[str]]", 10, `unexpected "]"`},
		{"int[str]", 4, "int takes no type arguments"},
		{"dict[str]", 1, "dict takes two type arguments, got 1"},
		{"Optional[int, str]", 1, "Optional takes exactly one type, got 2"},
		{"Literal[x]", 9, "Literal values must be"},
		{"Literal['open", 9, "unterminated string"},
		{"Union", 6, "Union needs type arguments"},
		{"str |", 6, "expected a type name, found the end"},
		{"list[]", 6, `expected a type name, found "]"`},
		{"", 1, "expected a type name"},
	}
	for _, c := range cases {
		_, err := ParseType(c.in)
		var te *TypeError
		if !errors.As(err, &te) {
			t.Errorf("%q: want a *TypeError, got %v", c.in, err)
			continue
		}
		if te.Column != c.col || !strings.Contains(te.Msg, c.msg) {
			t.Errorf("%q: got column %d %q, want column %d containing %q", c.in, te.Column, te.Msg, c.col, c.msg)
		}
	}
}

func TestParseSignature(t *testing.T) {
	s, err := Parse("question, history: History -> intent: Literal['a', 'b'], score: float")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); got != "question, history: History -> intent: Literal['a', 'b'], score: float" {
		t.Errorf("String() = %q", got)
	}
	if s.Instructions != "Given the fields `question`, `history`, produce the fields `intent`, `score`." {
		t.Errorf("instructions %q", s.Instructions)
	}
	if s.HistoryField() != "history" || s.Outputs[1].Type.Kind != KindFloat {
		t.Errorf("fields %+v", s)
	}
}

func TestParseSignatureErrors(t *testing.T) {
	cases := []struct {
		in  string
		col int
		msg string
	}{
		{"question", 9, "missing '->'"},
		{"a -> b -> c", 8, "more than one '->'"},
		{"question -> ", 12, "no output fields"},
		{"a b -> c", 2, `"a b" is not a valid field name`},
		{"1a -> b", 1, "not a valid field name"},
		{"a, , b -> c", 3, "empty field name"},
		{"ab, b -> b", 10, `field "b" appears twice`},
		{"a: lst -> b", 4, `unknown type "lst"`},
		{"q: list[int -> a", 13, "missing ']'"},
		{"q: -> a", 4, `field "q" has ':' but no type`},
		{"q -> a: dict[str]", 9, "dict takes two type arguments"},
		{"q] -> a", 2, "unbalanced ']'"},
	}
	for _, c := range cases {
		_, err := Parse(c.in)
		var se *SignatureError
		if !errors.As(err, &se) {
			t.Errorf("%q: want a *SignatureError, got %v", c.in, err)
			continue
		}
		if se.Column != c.col || !strings.Contains(se.Msg, c.msg) {
			t.Errorf("%q: got column %d %q, want column %d containing %q", c.in, se.Column, se.Msg, c.col, c.msg)
		}
	}
}

func TestConstraints(t *testing.T) {
	f := Field{Name: "r", Constraints: NewMap("le", 5, "ge", 1, "max_length", 3)}
	if got, want := f.ConstraintText(), "maximum length: 3, greater than or equal to: 1, less than or equal to: 5"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if err := (Field{Name: "x", Constraints: NewMap("maxlen", 1)}).CheckConstraints(); err == nil || !strings.Contains(err.Error(), `unknown constraint "maxlen"`) {
		t.Errorf("unknown constraint: %v", err)
	}
}

func FuzzSignatureParse(f *testing.F) {
	for _, s := range []string{"question -> answer", "a: list[dict[str, int]], b: Literal['x', \"y\"] -> c: Optional[int]",
		"a: int | None -> b", "q] -> a", "a: Literal['\\'' -> b", "->", "a: tuple[] -> b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse(text)
		if err != nil {
			var se *SignatureError
			if !errors.As(err, &se) {
				t.Fatalf("error is %T, want *SignatureError: %v", err, err)
			}
			if se.Column < 1 || se.Column > len(text)+1 {
				t.Fatalf("column %d outside 1..%d for %q", se.Column, len(text)+1, text)
			}
			return
		}
		if len(s.Outputs) == 0 {
			t.Fatalf("parsed %q with no outputs", text)
		}
		// Whatever parses renders back to a signature that parses to the same names.
		again, err := Parse(s.String())
		if err != nil {
			t.Fatalf("%q rendered as %q does not parse: %v", text, s.String(), err)
		}
		for i, fl := range s.Outputs {
			if again.Outputs[i].Type.Name() != fl.Type.Name() {
				t.Fatalf("%q: output %d type %s became %s", text, i, fl.Type.Name(), again.Outputs[i].Type.Name())
			}
		}
	})
}

func TestParseConstraintText(t *testing.T) {
	cases := []struct {
		text string
		want *Map // nil: not a constraint line
	}{
		{"maximum length: 3, greater than or equal to: 1, less than or equal to: 5", NewMap("max_length", int64(3), "ge", int64(1), "le", int64(5))},
		{"greater than: 0.5", NewMap("gt", 0.5)},
		{"less than: 1e-05", NewMap("lt", 1e-05)},
		{"less than or equal to: 5, greater than or equal to: 1", nil}, // DSPy's order is ge before le
		{"maximum length: three", nil},
		{"maximum length: 03", nil},
		{"at most: 3", nil},
		{"", nil},
	}
	for _, c := range cases {
		got, ok := ParseConstraintText(c.text)
		if c.want == nil {
			if ok {
				t.Errorf("%q: parsed as %s, want refused", c.text, py.CompactJSON(got))
			}
			continue
		}
		if !ok || !got.Equal(c.want) {
			t.Errorf("%q: got %v %v, want %s", c.text, ok, got, py.CompactJSON(c.want))
			continue
		}
		if back := (Field{Constraints: got}).ConstraintText(); back != c.text {
			t.Errorf("%q: renders back as %q", c.text, back)
		}
	}
}
