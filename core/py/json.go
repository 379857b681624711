package py

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Float renders a float exactly as Python's repr(): shortest round-trip digits, fixed
// notation when the decimal exponent is in [-4, 16), else scientific with a two-digit
// minimum exponent ("1e-05", "1e+16"); integral values keep ".0".
func Float(f float64) string {
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

// JSON is json.dumps(v, ensure_ascii=False): ", " / ": " separators, insertion order.
func JSON(v any) string {
	var b bytes.Buffer
	_ = writeJSON(&b, v, jsonPy)
	return b.String()
}

// JSONIndent is json.dumps(v, indent=n, ensure_ascii=False).
func JSONIndent(v any, n int) string {
	var b bytes.Buffer
	_ = writeJSONIndent(&b, v, n, 0)
	return b.String()
}

// CompactJSON is json.dumps(v, separators=(",", ":"), ensure_ascii=False): compact
// standard JSON in insertion order, floats in Python repr spelling (so 2.0 stays 2.0 when
// read back).
func CompactJSON(v any) string {
	var b bytes.Buffer
	_ = writeJSON(&b, v, jsonStd)
	return b.String()
}

// WriteCompactJSON writes what CompactJSON returns into b, for a caller reusing a buffer.
func WriteCompactJSON(b *bytes.Buffer, v any) { _ = writeJSON(b, v, jsonStd) }

func writeJSON(b *bytes.Buffer, v any, mode jsonMode) error {
	sep, kv := ",", ":"
	if mode.py {
		sep, kv = ", ", ": "
	}
	if isNil(v) {
		b.WriteString("null")
		return nil
	}
	switch t := v.(type) {
	case Model:
		_, fields := t.PyModel()
		return writeJSON(b, fields, mode)
	case Dict:
		b.WriteByte('{')
		first := true
		var err error
		t.Range(func(k string, e any) bool {
			if !first {
				b.WriteString(sep)
			}
			first = false
			writeJSONString(b, k)
			b.WriteString(kv)
			err = writeJSON(b, e, mode)
			return err == nil
		})
		if err != nil {
			return err
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
	case Model:
		if isNil(v) {
			b.WriteString("null")
			return nil
		}
		_, fields := t.PyModel()
		return writeJSONIndent(b, fields, n, depth)
	case Dict:
		if t.Len() == 0 { // a nil map too
			b.WriteString("{}")
			return nil
		}
		b.WriteByte('{')
		first := true
		t.Range(func(k string, e any) bool {
			if !first {
				b.WriteByte(',')
			}
			first = false
			nl(depth + 1)
			writeJSONString(b, k)
			b.WriteString(": ")
			_ = writeJSONIndent(b, e, n, depth+1)
			return true
		})
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
			b.WriteString(Float(t))
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
		// a run of what is written as it is, whole (most of any text): valid UTF-8 and
		// no quote, backslash or control character
		j := i
		for j < len(s) {
			if c := s[j]; c < utf8.RuneSelf {
				if c < 0x20 || c == '"' || c == '\\' {
					break
				}
				j++
				continue
			}
			r, size := utf8.DecodeRuneInString(s[j:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			j += size
		}
		if j > i {
			b.WriteString(s[i:j])
			i = j
			continue
		}
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

// EnsureASCII turns JSON text written with ensure_ascii=False into what json.dumps writes
// by default: non-ASCII characters as \uXXXX (surrogate pairs above U+FFFF); in JSON text
// they can only occur inside strings.
func EnsureASCII(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < 0x80:
			b.WriteRune(r)
		case r < 0x10000:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			r -= 0x10000
			fmt.Fprintf(&b, "\\u%04x\\u%04x", 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		}
	}
	return b.String()
}
