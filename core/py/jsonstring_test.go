package py

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// refJSONString is writeJSONString rune by rune, as it was before its fast path for
// runs that need no escaping: the bytes it must keep writing.
func refJSONString(s string) string {
	var b bytes.Buffer
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\ufffd`)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
	return b.String()
}

func TestWriteJSONString(t *testing.T) {
	cases := []string{"", "plain ascii", `quote " and \ backslash`, "tab\tnew\nline\r\b\f\x00\x1f\x7f",
		"café ünïcode 日本 😀", "literal \ufffd replacement", "bad \xff byte", "\xff", "cut \xe2\x82", "\xe2\x82",
		"\u2028\u2029<>&", "end\\"}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "Z", " ", "\"", "\\", "\n", "\x01", "é", "日", "😀", "\xff", "\xe2", "\x80", "\ufffd"}
	for range 2000 {
		var b bytes.Buffer
		for range rng.IntN(12) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		cases = append(cases, b.String())
	}
	for _, s := range cases {
		var b bytes.Buffer
		writeJSONString(&b, s)
		if got, want := b.String(), refJSONString(s); got != want {
			t.Fatalf("writeJSONString(%q) = %s, want %s", s, got, want)
		}
	}
}
