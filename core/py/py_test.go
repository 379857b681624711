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
	got := py.SplitLines("a\r\nb\rc\nd\u2028e\x0bf\n")
	if strings.Join(got, "|") != "a|b|c|d|e|f" {
		t.Errorf("PySplitLines = %q", got)
	}
	if got := py.SplitLines("x\n\n"); len(got) != 2 || got[1] != "" {
		t.Errorf("PySplitLines keeps inner empty lines: %q", got)
	}
}
