package sig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// PyStr renders a value the way Python's str() renders its JSON-mode form, which is what
// DSPy writes into prompts: strings verbatim, True/False/None, Python float repr, and
// lists/dicts as json.dumps(..., ensure_ascii=False).
func PyStr(v any) string {
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
	case json.Number:
		return string(t)
	case float64:
		return PyFloat(t)
	case []any, *Map, History:
		return PyJSON(v)
	}
	return fmt.Sprint(v)
}

// PyFloat renders a float exactly as Python's repr(): shortest round-trip digits, fixed
// notation when the decimal exponent is in [-4, 16), else scientific with a two-digit
// minimum exponent ("1e-05", "1e+16"); integral values keep ".0".
func PyFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	mant, expS, _ := strings.Cut(s, "e")
	exp, _ := strconv.Atoi(expS)
	digits := strings.Replace(mant, ".", "", 1)
	decpt := exp + 1
	var out string
	if decpt > -4 && decpt <= 16 {
		switch {
		case decpt <= 0:
			out = "0." + strings.Repeat("0", -decpt) + digits
		case decpt >= len(digits):
			out = digits + strings.Repeat("0", decpt-len(digits)) + ".0"
		default:
			out = digits[:decpt] + "." + digits[decpt:]
		}
	} else {
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		e := decpt - 1
		sign := "+"
		if e < 0 {
			sign = "-"
			e = -e
		}
		out = fmt.Sprintf("%se%s%02d", m, sign, e)
	}
	if neg {
		out = "-" + out
	}
	return out
}

// jsonMode selects separators: jsonStd is Go/compact JSON, jsonPy is Python's default
// json.dumps (", " and ": "); indented output is writeJSONIndent.
type jsonMode struct {
	py bool
}

var (
	jsonStd = jsonMode{}
	jsonPy  = jsonMode{py: true}
)

// PyJSON is json.dumps(v, ensure_ascii=False): ", " / ": " separators, insertion order.
func PyJSON(v any) string {
	var b bytes.Buffer
	_ = writeJSON(&b, v, jsonPy)
	return b.String()
}

// PyJSONIndent is json.dumps(v, indent=n, ensure_ascii=False).
func PyJSONIndent(v any, n int) string {
	var b bytes.Buffer
	_ = writeJSONIndent(&b, v, n, 0)
	return b.String()
}

// JSON is compact standard JSON in insertion order, floats in Python repr spelling
// (so 2.0 stays 2.0 when read back).
func JSON(v any) string {
	var b bytes.Buffer
	_ = writeJSON(&b, v, jsonStd)
	return b.String()
}

func writeJSON(b *bytes.Buffer, v any, mode jsonMode) error {
	sep, kv := ",", ":"
	if mode.py {
		sep, kv = ", ", ": "
	}
	switch t := v.(type) {
	case *Map:
		if t == nil {
			b.WriteString("null")
			return nil
		}
		b.WriteByte('{')
		for i, k := range t.keys {
			if i > 0 {
				b.WriteString(sep)
			}
			writeJSONString(b, k)
			b.WriteString(kv)
			if err := writeJSON(b, t.vals[k], mode); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteString(sep)
			}
			if err := writeJSON(b, e, mode); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case History:
		msgs := make([]any, len(t.Messages))
		for i, m := range t.Messages {
			msgs[i] = m
		}
		return writeJSON(b, NewMap("messages", msgs), mode)
	default:
		writeJSONScalar(b, v)
	}
	return nil
}

func writeJSONIndent(b *bytes.Buffer, v any, n, depth int) error {
	nl := func(d int) {
		b.WriteByte('\n')
		b.WriteString(strings.Repeat(" ", n*d))
	}
	switch t := v.(type) {
	case *Map:
		if t.Len() == 0 {
			b.WriteString("{}")
			return nil
		}
		b.WriteByte('{')
		for i, k := range t.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			nl(depth + 1)
			writeJSONString(b, k)
			b.WriteString(": ")
			_ = writeJSONIndent(b, t.vals[k], n, depth+1)
		}
		nl(depth)
		b.WriteByte('}')
	case []any:
		if len(t) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			nl(depth + 1)
			_ = writeJSONIndent(b, e, n, depth+1)
		}
		nl(depth)
		b.WriteByte(']')
	case History:
		msgs := make([]any, len(t.Messages))
		for i, m := range t.Messages {
			msgs[i] = m
		}
		return writeJSONIndent(b, NewMap("messages", msgs), n, depth)
	default:
		writeJSONScalar(b, v)
	}
	return nil
}

func writeJSONScalar(b *bytes.Buffer, v any) {
	switch t := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if t {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case string:
		writeJSONString(b, t)
	case int64:
		b.WriteString(strconv.FormatInt(t, 10))
	case int:
		b.WriteString(strconv.Itoa(t))
	case json.Number:
		b.WriteString(string(t))
	case float64:
		switch {
		case math.IsNaN(t):
			b.WriteString("NaN")
		case math.IsInf(t, 1):
			b.WriteString("Infinity")
		case math.IsInf(t, -1):
			b.WriteString("-Infinity")
		default:
			b.WriteString(PyFloat(t))
		}
	default:
		writeJSONString(b, fmt.Sprint(v))
	}
}

// writeJSONString escapes like Python's json.dumps with ensure_ascii=False: only the quote,
// the backslash and control characters below U+0020 are escaped.
func writeJSONString(b *bytes.Buffer, s string) {
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
			fmt.Fprintf(b, `\u%04x`, r)
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\ufffd`)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
}

// PyStrip removes leading and trailing whitespace as Python's str.strip() does, which
// also treats U+001C..U+001F as whitespace (Go's strings.TrimSpace does not).
func PyStrip(s string) string {
	return strings.TrimFunc(s, IsPySpace)
}

// PyRStrip is Python's str.rstrip().
func PyRStrip(s string) string { return strings.TrimRightFunc(s, IsPySpace) }

// PyLStrip is Python's str.lstrip().
func PyLStrip(s string) string { return strings.TrimLeftFunc(s, IsPySpace) }

// IsPySpace reports whether Python's str.isspace() is true for r.
func IsPySpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\v', '\f', '\r', 0x1c, 0x1d, 0x1e, 0x1f, 0x85, 0xa0, 0x1680,
		0x2028, 0x2029, 0x202f, 0x205f, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

// PySplitLines splits like Python's str.splitlines(): on \n, \r\n, \r, \v, \f, \x1c-\x1e,
// \x85, U+2028 and U+2029, without keeping the separators and without a trailing empty line.
func PySplitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '\r':
			out = append(out, s[start:i])
			if i+1 < len(s) && s[i+1] == '\n' {
				size = 2
			}
			start = i + size
		case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			out = append(out, s[start:i])
			start = i + size
		}
		i += size
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
