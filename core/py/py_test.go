package py_test

import (
	"math"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

var tenth = 0.1 // a variable, so that 0.1+0.2 is float arithmetic, not exact constant folding

func TestFloat(t *testing.T) {
	cases := []struct {
		f    float64
		want string
	}{
		{0.5, "0.5"}, {1, "1.0"}, {2, "2.0"}, {-2, "-2.0"}, {0, "0.0"}, {math.Copysign(0, -1), "-0.0"},
		{1e-05, "1e-05"}, {0.0001, "0.0001"}, {0.00012345, "0.00012345"}, {1.5e-7, "1.5e-07"},
		{1e16, "1e+16"}, {1e15, "1000000000000000.0"}, {123456789012345678, "1.2345678901234568e+17"},
		{tenth + 2*tenth, "0.30000000000000004"}, {1e100, "1e+100"}, {5e-324, "5e-324"}, {1.7976931348623157e308, "1.7976931348623157e+308"},
		{math.Inf(1), "inf"}, {math.Inf(-1), "-inf"}, {math.NaN(), "nan"}, {3.14159, "3.14159"}, {-1e-10, "-1e-10"},
	}
	for _, c := range cases {
		if got := py.Float(c.f); got != c.want {
			t.Errorf("py.Float(%v) = %q, want %q", c.f, got, c.want)
		}
	}
}

func TestTextAndJSON(t *testing.T) {
	cases := []struct {
		v         any
		str, pyjs string
	}{
		{nil, "None", "null"},
		{true, "True", "true"},
		{int64(3), "3", "3"},
		{2.0, "2.0", "2.0"},
		{"ü \"q\"\n", "ü \"q\"\n", `"ü \"q\"\n"`},
		{[]any{"a", int64(1), nil, 1e-05}, `["a", 1, null, 1e-05]`, `["a", 1, null, 1e-05]`},
		{sig.NewMap("b", int64(1), "a", []any{}), `{"b": 1, "a": []}`, `{"b": 1, "a": []}`},
		{sig.NewMap(), "{}", "{}"},
		{sig.History{Messages: []*sig.Map{sig.NewMap("q", "x")}}, `{"messages": [{"q": "x"}]}`, `{"messages": [{"q": "x"}]}`},
		{"\x01\t<>&", "\x01\t<>&", `"\u0001\t<>&"`},
	}
	for _, c := range cases {
		if got := py.Text(c.v); got != c.str {
			t.Errorf("PyStr(%#v) = %q, want %q", c.v, got, c.str)
		}
		if got := py.JSON(c.v); got != c.pyjs {
			t.Errorf("PyJSON(%#v) = %q, want %q", c.v, got, c.pyjs)
		}
	}
	if got, want := py.JSONIndent(sig.NewMap("a", []any{int64(1), sig.NewMap()}, "b", []any{}), 2), "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": []\n}"; got != want {
		t.Errorf("PyJSONIndent = %q, want %q", got, want)
	}
	if got, want := py.CompactJSON(sig.NewMap("f", 2.0, "i", int64(2))), `{"f":2.0,"i":2}`; got != want {
		t.Errorf("JSON = %q, want %q", got, want)
	}
}

func TestStripAndSplitLines(t *testing.T) {
	if got := py.Strip("\x1c\u3000 x \u00a0\x1f"); got != "x" {
		t.Errorf("PyStrip = %q", got)
	}
	if got := py.Strip("\u200bx"); got != "\u200bx" {
		t.Errorf("zero-width space is not whitespace in Python: %q", got)
	}
	// Every edge: each character below U+3001 alone, around a letter and in a run with
	// ASCII blanks, stripped as Python's isspace() says.
	for r := rune(0); r <= 0x3000; r++ {
		c := string(r)
		for _, s := range []string{c, c + "x" + c, " \t" + c + "x" + c + "\n ", c + c + "x"} {
			want := strings.TrimFunc(s, py.IsSpace)
			if got := py.Strip(s); got != want {
				t.Fatalf("Strip(%q) = %q, want %q", s, got, want)
			}
			if got, want := py.LStrip(s), strings.TrimLeftFunc(s, py.IsSpace); got != want {
				t.Fatalf("LStrip(%q) = %q, want %q", s, got, want)
			}
			if got, want := py.RStrip(s), strings.TrimRightFunc(s, py.IsSpace); got != want {
				t.Fatalf("RStrip(%q) = %q, want %q", s, got, want)
			}
		}
	}
	got := py.SplitLines("a\r\nb\rc\nd\u2028e\x0bf\n")
	if strings.Join(got, "|") != "a|b|c|d|e|f" {
		t.Errorf("PySplitLines = %q", got)
	}
	if got := py.SplitLines("x\n\n"); len(got) != 2 || got[1] != "" {
		t.Errorf("PySplitLines keeps inner empty lines: %q", got)
	}
}

// Equal is Python's ==; Same is the deep equality that also tells kinds and key order
// apart. One comparison serves both, so they agree wherever Python's == is strict.
func TestEqualAndSame(t *testing.T) {
	hist := func(q string) sig.History { return sig.History{Messages: []*sig.Map{sig.NewMap("question", q)}} }
	var nilMap *sig.Map
	cases := []struct {
		name        string
		a, b        any
		equal, same bool
	}{
		{"int and float", int64(1), 1.0, true, false},
		{"True and 1", true, int64(1), true, false},
		{"the same int", int64(3), int64(3), true, true},
		{"strings", "a", "a", true, true},
		{"lists of equal numbers", []any{int64(1)}, []any{1.0}, true, false},
		{"lists of different lengths", []any{"a"}, []any{"a", "b"}, false, false},
		{"dicts in another key order", sig.NewMap("a", "1", "b", "2"), sig.NewMap("b", "2", "a", "1"), true, false},
		{"dicts alike", sig.NewMap("a", []any{"x"}), sig.NewMap("a", []any{"x"}), true, true},
		{"dicts with other values", sig.NewMap("a", "1"), sig.NewMap("a", "2"), false, false},
		{"a nil map is None", nilMap, nil, true, true},
		{"histories alike", hist("q"), hist("q"), true, true},
		{"histories apart", hist("q"), hist("r"), false, false},
		{"a history is no dict", hist("q"), sig.NewMap("messages", []any{sig.NewMap("question", "q")}), false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := py.Equal(tc.a, tc.b); got != tc.equal {
				t.Errorf("Equal = %v, want %v", got, tc.equal)
			}
			if got := py.Same(tc.a, tc.b); got != tc.same {
				t.Errorf("Same = %v, want %v", got, tc.same)
			}
			if got := py.Same(tc.b, tc.a); got != tc.same {
				t.Errorf("Same reversed = %v, want %v", got, tc.same)
			}
		})
	}
	// sig.Map.Equal is Same, with a nil map equal to an empty one
	if !nilMap.Equal(sig.NewMap()) || sig.NewMap("a", int64(1)).Equal(sig.NewMap("a", 1.0)) {
		t.Error("Map.Equal")
	}
}

// Keyword is the one reading of Python's constants, for literal_eval and for Literal[...]
// types alike.
func TestKeyword(t *testing.T) {
	for _, tc := range []struct {
		word string
		v    any
		ok   bool
	}{{"True", true, true}, {"False", false, true}, {"None", nil, true}, {"true", nil, false}, {"null", nil, false}, {"NoneType", nil, false}} {
		if v, ok := py.Keyword(tc.word); v != tc.v || ok != tc.ok {
			t.Errorf("Keyword(%q) = %v, %v; want %v, %v", tc.word, v, ok, tc.v, tc.ok)
		}
		lit, err := py.LiteralEval(tc.word, func() py.SetDict { return sig.NewMap() })
		if tc.ok && (err != nil || lit != tc.v) {
			t.Errorf("literal_eval(%q) = %v, %v", tc.word, lit, err)
		}
		typ, err := sig.ParseType("Literal[" + tc.word + "]")
		if tc.ok != (err == nil) {
			t.Errorf("Literal[%s]: %v", tc.word, err)
		} else if tc.ok && (len(typ.Lits) != 1 || typ.Lits[0] != tc.v) {
			t.Errorf("Literal[%s] values %v", tc.word, typ.Lits)
		}
	}
}
