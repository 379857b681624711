package wirediff

import (
	"strings"
	"testing"
)

// spans shows changed text in brackets.
func spans(ss []Span) string {
	var b strings.Builder
	for _, s := range ss {
		if s.Changed {
			b.WriteString("[" + s.Text + "]")
		} else {
			b.WriteString(s.Text)
		}
	}
	return b.String()
}

func TestDiffWords(t *testing.T) {
	cases := []struct{ a, b, left, right string }{
		{"same line", "same line", "same line", "same line"},
		{"the quick fox", "the slow fox", "the [quick] fox", "the [slow] fox"},
		{"history: None", "history: [1, 2]", "history: [None]", "history: [[1, 2]]"},
		{"", "added", "", "[added]"},
		{"a b", "a  b", "a[ ]b", "a[  ]b"},
		{"Your input fields are:", "Your output fields are:", "Your [input] fields are:", "Your [output] fields are:"},
		{"naïve café", "naïve cafe", "naïve [café]", "naïve [cafe]"},
	}
	for _, c := range cases {
		l, r := DiffWords(c.a, c.b)
		if spans(l) != c.left || spans(r) != c.right {
			t.Errorf("DiffWords(%q, %q) = %q, %q; want %q, %q", c.a, c.b, spans(l), spans(r), c.left, c.right)
		}
	}
}
