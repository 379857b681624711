package template

import (
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

// Expected values were produced by the reference's _render pipeline (escape, format_map
// with a dict answering "{key}" for missing keys, restore) under CPython 3.11.
func TestFormatMapLikePython(t *testing.T) {
	vars := map[string]string{"question": "hi", "n": "x"}
	lookup := func(k string) (py.FormatValue, bool) { v, ok := vars[k]; return py.StrValue(v), ok }
	noFuncs := func(call) (string, bool, error) { return "", false, nil }
	cases := []struct{ in, want, err string }{
		{in: "{{{question}}}", want: "{{question}}"},
		{in: `{{"a": {question}}}`, want: `{"a": {question}}`},
		{in: "{question:>8}|", want: "      hi|"},
		{in: "{question!r}", want: "'hi'"},
		{in: "{question[0]}", want: "h"},
		{in: "{nope[0]}", want: "{"},
		{in: "{nope!r}", want: "'{nope}'"},
		{in: "{nope:>7}", want: " {nope}"},
		{in: "{ nope }", want: "{ nope }"},
		{in: "{question:05}", want: "hi000"},
		{in: "{question:^6}|", want: "  hi  |"},
		{in: "{question:.1}", want: "h"},
		{in: "{question:x<4}", want: "hixx"},
		{in: "{question!s:>3}", want: " hi"},
		{in: "a {", err: "Single '{' encountered in format string"},
		{in: "a } b", err: "Single '}' encountered in format string"},
		{in: "{}", err: "Format string contains positional fields"},
		{in: "{0}", err: "Format string contains positional fields"},
		{in: "{a{b}}", err: "unexpected '{' in field name"},
		{in: "{question:{n}}", err: "unmatched '{' in format spec"},
		{in: "{question:{}}", err: "unmatched '{' in format spec"},
		{in: "{question!x}", err: "Unknown conversion specifier x"},
		{in: "{question!rr}", err: "expected ':' after conversion specifier"},
		{in: "{question[a]}", err: "string indices must be integers, not 'str'"},
		{in: "{question[5]}", err: "string index out of range"},
		{in: "{question:d}", err: "Unknown format code 'd' for object of type 'str'"},
		{in: "{question:+}", err: "Sign not allowed in string format specifier"},
		{in: "{question:=5}", err: "'=' alignment not allowed in string format specifier"},
		{in: "{question:,}", err: "Cannot specify ',' with 's'."},
		{in: "{nope.x}", err: "attribute access"},
		{in: "{question", err: "expected '}' before end of string"},
	}
	for _, c := range cases {
		got, err := renderText(0, "content", c.in, noFuncs, lookup)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err = %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: got %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestTemplateErrorPosition(t *testing.T) {
	cases := []struct {
		content    string
		line, col  int
		msgContain string
	}{
		{"Hello {question", 1, 7, "expected '}'"},
		{"ab\ncd }", 2, 4, "Single '}'"},
		{"{{ok}} {inputs()} x {", 1, 21, "Single '{'"},
		{"{{ok}} {unknown(a='1')} }", 1, 25, "Single '}'"},
		{"é {", 1, 3, "Single '{'"},
	}
	for _, c := range cases {
		_, err := New([]MessageTemplate{{Role: "system", Content: "fine"}, {Role: "user", Content: c.content}}, "")
		te, ok := err.(*TemplateError)
		if !ok {
			t.Fatalf("%q: err = %v (%T), want *TemplateError", c.content, err, err)
		}
		if te.Message != 1 || te.Key != "content" || te.Line != c.line || te.Column != c.col || !strings.Contains(te.Msg, c.msgContain) {
			t.Errorf("%q: got %+v, want message 1 line %d column %d %q", c.content, *te, c.line, c.col, c.msgContain)
		}
		if !strings.Contains(te.Error(), "messages[1].content, line") {
			t.Errorf("error text %q", te.Error())
		}
	}
	// Directive templates are checked too.
	_, err := New([]MessageTemplate{{Role: RoleDemos, User: Str("{q"), Assistant: Str("{a}")}}, "")
	if te, ok := err.(*TemplateError); !ok || te.Key != "user" || te.Column != 1 {
		t.Errorf("demos directive: %v", err)
	}
}

func TestPyStrAndRepr(t *testing.T) {
	v := []any{"a", "it's", int64(1), nil, true, 2.0, sig.NewMap("k", []any{int64(1)})}
	if got, want := py.Str(v), `['a', "it's", 1, None, True, 2.0, {'k': [1]}]`; got != want {
		t.Errorf("pyStr = %s, want %s", got, want)
	}
	cases := map[string]string{
		"plain":        `'plain'`,
		`both ' and "`: `'both \' and "'`,
		"tab\tnl\n":    `'tab\tnl\n'`,
		"\x01é\u00a0":  `'\x01é\xa0'`,
		`back\slash`:   `'back\\slash'`,
	}
	for in, want := range cases {
		if got := py.ReprString(in, false); got != want {
			t.Errorf("repr(%q) = %s, want %s", in, got, want)
		}
	}
	if got := py.ReprString("é", true); got != `'\xe9'` {
		t.Errorf("ascii = %s", got)
	}
}
