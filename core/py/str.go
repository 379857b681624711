package py

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

type jsonNumber = json.Number

// Str is Python's str(): a string as it is, None/True/False, an int, a float's repr, and
// the repr of a container (a list shows as ['a', 'b']); a pydantic model as its fields,
// `messages=[...]`.
func Str(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case []any:
		return Repr(t)
	case Model:
		if isNil(v) {
			return "None"
		}
		var b strings.Builder
		_, fields := t.PyModel()
		first := true
		fields.Range(func(k string, fv any) bool {
			if !first {
				b.WriteByte(' ')
			}
			first = false
			b.WriteString(k + "=")
			writeRepr(&b, fv)
			return true
		})
		return b.String()
	case Dict:
		return Repr(t)
	}
	return scalar(v)
}

// Text is the text DSPy writes for a value (format_field_value, without its rule for
// lists under a str annotation): str() of a scalar, json.dumps(ensure_ascii=False) of a
// list, dict or model.
func Text(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case []any, Dict, Model:
		if isNil(v) {
			return "None"
		}
		return JSON(v)
	}
	return scalar(v)
}

// scalar is str() of None, a bool or a number (anything else: Go's default text).
func scalar(v any) string {
	switch t := v.(type) {
	case nil:
		return "None"
	case string:
		return t
	case bool:
		if t {
			return "True"
		}
		return "False"
	case int64:
		return strconv.FormatInt(t, 10)
	case int:
		return strconv.Itoa(t)
	case jsonNumber:
		return string(t)
	case float64:
		return Float(t)
	}
	if isNil(v) {
		return "None"
	}
	return fmt.Sprint(v)
}

// Repr is Python's repr().
func Repr(v any) string {
	var b strings.Builder
	writeRepr(&b, v)
	return b.String()
}

// TupleRepr is repr() of a tuple: (1,) for one element.
func TupleRepr(items []any) string {
	parts := make([]string, len(items))
	for i, e := range items {
		parts[i] = Repr(e)
	}
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func writeRepr(b *strings.Builder, v any) {
	if isNil(v) {
		b.WriteString("None")
		return
	}
	switch t := v.(type) {
	case string:
		b.WriteString(ReprString(t, false))
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, e)
		}
		b.WriteByte(']')
	case Model:
		class, fields := t.PyModel()
		b.WriteString(class + "(")
		first := true
		fields.Range(func(k string, fv any) bool {
			if !first {
				b.WriteString(", ")
			}
			first = false
			b.WriteString(k + "=")
			writeRepr(b, fv)
			return true
		})
		b.WriteByte(')')
	case Dict:
		b.WriteByte('{')
		first := true
		t.Range(func(k string, e any) bool {
			if !first {
				b.WriteString(", ")
			}
			first = false
			b.WriteString(ReprString(k, false))
			b.WriteString(": ")
			writeRepr(b, e)
			return true
		})
		b.WriteByte('}')
	default:
		b.WriteString(scalar(v))
	}
}

// ReprString is Python's repr(str) (ascii() when ascii is set): single quotes unless the
// text has ' and no ", backslash escapes for the quote, \\ and non-printable characters.
func ReprString(s string, ascii bool) string {
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
		case ascii || !isPrintable(r):
			writeEscape(&b, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(quote)
	return b.String()
}

// writeEscape writes a character as repr() escapes it: \xhh, \uhhhh or \Uhhhhhhhh.
func writeEscape(b *strings.Builder, r rune) {
	switch {
	case r < 0x100:
		fmt.Fprintf(b, `\x%02x`, r)
	case r < 0x10000:
		fmt.Fprintf(b, `\u%04x`, r)
	default:
		fmt.Fprintf(b, `\U%08x`, r)
	}
}

// isPrintable approximates Python's str.isprintable for one character: everything but
// other (C*) and separator (Z*) categories, with the ASCII space allowed.
func isPrintable(r rune) bool {
	if r == ' ' {
		return true
	}
	return unicode.IsPrint(r) && !unicode.Is(unicode.Zs, r)
}
