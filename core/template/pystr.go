package template

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/sig"
)

// pyStr is Python's str() of a value as the reference writes it with f"{v}" (history and
// demo values are not DSPy-formatted there): strings verbatim, containers as repr(), so a
// list shows as ['a', 'b'] rather than JSON.
func pyStr(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case sig.History:
		return "messages=" + pyRepr(historyList(t))
	case *sig.History:
		if t == nil {
			return "None"
		}
		return pyStr(*t)
	case []any, *sig.Map:
		return pyRepr(v)
	}
	return sig.PyStr(v)
}

func historyList(h sig.History) []any {
	out := make([]any, len(h.Messages))
	for i, m := range h.Messages {
		out[i] = m
	}
	return out
}

// pyRepr is Python's repr() for the value kinds of package sig.
func pyRepr(v any) string {
	var b strings.Builder
	writeRepr(&b, v)
	return b.String()
}

func writeRepr(b *strings.Builder, v any) {
	switch t := v.(type) {
	case string:
		b.WriteString(reprString(t, false))
	case *sig.Map:
		if t == nil {
			b.WriteString("None")
			return
		}
		b.WriteByte('{')
		for i, k := range t.Keys() {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(reprString(k, false))
			b.WriteString(": ")
			val, _ := t.Get(k)
			writeRepr(b, val)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, e)
		}
		b.WriteByte(']')
	case sig.History:
		b.WriteString("History(messages=")
		writeRepr(b, historyList(t))
		b.WriteByte(')')
	case *sig.History:
		if t == nil {
			b.WriteString("None")
			return
		}
		writeRepr(b, *t)
	default:
		b.WriteString(sig.PyStr(v))
	}
}

// reprString is Python's repr(str) (ascii() when ascii is set): single quotes unless the
// text has ' and no ", backslash escapes for the quote, \\ and non-printable characters.
func reprString(s string, ascii bool) string {
	quote := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	var b strings.Builder
	b.WriteByte(quote)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			// Python strings cannot hold a stray byte; show it as a surrogate escape would.
			fmt.Fprintf(&b, `\udc%02x`, s[i])
			i++
			continue
		}
		i += size
		switch {
		case r == rune(quote) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x7f:
			b.WriteRune(r)
		case ascii || !isPyPrintable(r):
			switch {
			case r < 0x100:
				fmt.Fprintf(&b, `\x%02x`, r)
			case r < 0x10000:
				fmt.Fprintf(&b, `\u%04x`, r)
			default:
				fmt.Fprintf(&b, `\U%08x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(quote)
	return b.String()
}

// isPyPrintable approximates Python's str.isprintable for one character: everything but
// other (C*) and separator (Z*) categories, with the ASCII space allowed.
func isPyPrintable(r rune) bool {
	if r == ' ' {
		return true
	}
	return unicode.IsPrint(r) && !unicode.Is(unicode.Zs, r)
}

// formatFieldValue is DSPy's format_field_value (the ChatAdapter's implementation): a
// list under a str annotation becomes a numbered «» list, anything else str() of its
// JSON form.
func formatFieldValue(f sig.Field, v any) string { return adapter.FormatFieldValue(f, v) }
