package adapter

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/sessionbench/sessionbench/core/sig"
)

// pyRepr renders a value as Python's repr() would (used in error texts and for str() of
// containers, which Python prints with repr of their elements).
func pyRepr(v any) string {
	switch t := v.(type) {
	case string:
		return pyReprString(t)
	case []any:
		parts := make([]string, len(t))
		for i, e := range t {
			parts[i] = pyRepr(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *sig.Map:
		var parts []string
		t.Range(func(k string, v any) bool {
			parts = append(parts, pyReprString(k)+": "+pyRepr(v))
			return true
		})
		return "{" + strings.Join(parts, ", ") + "}"
	case sig.History:
		return fmt.Sprintf("History(messages=%s)", pyRepr(sig.Normalize(t.Messages)))
	}
	return sig.PyStr(v)
}

// pyTupleRepr is repr() of a tuple: (1,) for one element.
func pyTupleRepr(items []any) string {
	parts := make([]string, len(items))
	for i, e := range items {
		parts[i] = pyRepr(e)
	}
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// pyReprString quotes like Python: single quotes unless the text has ' and no ".
func pyReprString(s string) string {
	q := byte('\'')
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r < 0xa0:
			fmt.Fprintf(&b, `\x%02x`, r)
		case !unicode.IsPrint(r) && r != ' ':
			if r > 0xffff {
				fmt.Fprintf(&b, `\U%08x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// pyEqual is Python's == for the scalar kinds a Literal can hold (1 == 1.0 == True).
func pyEqual(a, b any) bool {
	na, aNum := pyNumber(a)
	nb, bNum := pyNumber(b)
	if aNum && bNum {
		return na == nb
	}
	if aNum != bNum {
		return false
	}
	return sig.Equal(a, b)
}

func pyNumber(v any) (float64, bool) {
	switch t := v.(type) {
	case bool:
		if t {
			return 1, true
		}
		return 0, true
	case int64:
		return float64(t), true
	case float64:
		return t, true
	case json.Number:
		f, err := t.Float64()
		return f, err == nil
	}
	return 0, false
}
