package sig

import (
	"unicode/utf16"
	"unicode/utf8"
)

// Most JSON a store reads back is a flat object of scalars: a call's inputs and outputs,
// a history entry ({"question": "...", "answer": "..."}). Restoring a long branch decodes
// thousands of them, and encoding/json's token reader (decodeTokens, DecodeJSON's general
// path) spends most of that on bookkeeping. decodeFlat reads such an object directly;
// anything else (a nested value, invalid UTF-8, a malformed text) is left to the general
// path, so what it returns is what that path would, and errors are always that path's.

// decodeFlat decodes data when it is an object whose values are strings, numbers,
// booleans or null; ok is false otherwise.
func decodeFlat(data []byte) (m *Map, ok bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, false
	}
	m = NewMap()
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return m, skipSpace(data, i+1) == len(data)
	}
	for {
		k, j, ok := jsonString(data, i)
		if !ok {
			return nil, false
		}
		i = skipSpace(data, j)
		if i >= len(data) || data[i] != ':' {
			return nil, false
		}
		i = skipSpace(data, i+1)
		if i >= len(data) {
			return nil, false
		}
		var v any
		switch c := data[i]; {
		case c == '"':
			v, j, ok = jsonString(data, i)
		case c == 't':
			v, j, ok = true, i+4, hasWord(data, i, "true")
		case c == 'f':
			v, j, ok = false, i+5, hasWord(data, i, "false")
		case c == 'n':
			v, j, ok = nil, i+4, hasWord(data, i, "null")
		case c == '-' || c >= '0' && c <= '9':
			j = numberEnd(data, i)
			v, ok = numberValue(string(data[i:j])), j > i
		default:
			return nil, false
		}
		if !ok {
			return nil, false
		}
		m.Set(k, v)
		i = skipSpace(data, j)
		if i >= len(data) {
			return nil, false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return m, skipSpace(data, i+1) == len(data)
		default:
			return nil, false
		}
	}
}

// jsonString reads the string starting at data[i] (a quote) as encoding/json does, and
// returns it and the index after its closing quote; ok is false for a malformed string
// and for invalid UTF-8 (which encoding/json replaces: the general path does that).
func jsonString(data []byte, i int) (string, int, bool) {
	if i >= len(data) || data[i] != '"' {
		return "", 0, false
	}
	start := i + 1
	j := start
	for j < len(data) && data[j] != '"' && data[j] != '\\' && data[j] >= 0x20 {
		j++
	}
	if j < len(data) && data[j] == '"' { // no escape: the text as it stands
		s := data[start:j]
		return string(s), j + 1, utf8.Valid(s)
	}
	b := append(make([]byte, 0, j-start+16), data[start:j]...)
	for j < len(data) {
		c := data[j]
		switch {
		case c == '"':
			return string(b), j + 1, utf8.Valid(b)
		case c < 0x20:
			return "", 0, false
		case c != '\\':
			b = append(b, c)
			j++
			continue
		}
		if j+1 >= len(data) {
			return "", 0, false
		}
		switch e := data[j+1]; e {
		case '"', '\\', '/':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r := hex4(data, j+2)
			if r < 0 {
				return "", 0, false
			}
			j += 6
			if utf16.IsSurrogate(r) {
				// a pair makes one rune; a lone half is the replacement character
				if j+1 < len(data) && data[j] == '\\' && data[j+1] == 'u' {
					if r2 := hex4(data, j+2); r2 >= 0 {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							b = utf8.AppendRune(b, d)
							j += 6
							continue
						}
					}
				}
				r = utf8.RuneError
			}
			b = utf8.AppendRune(b, r)
			continue
		default:
			return "", 0, false
		}
		j += 2
	}
	return "", 0, false
}

// hex4 is the value of the four hex digits at data[i:], -1 when they are not.
func hex4(data []byte, i int) rune {
	if i+4 > len(data) {
		return -1
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// numberEnd is the index after the JSON number starting at data[i], or i when what
// starts there is not one (-?(0|[1-9]d*)(.d+)?([eE][+-]?d+)?).
func numberEnd(data []byte, i int) int {
	digits := func(j int) int {
		for j < len(data) && data[j] >= '0' && data[j] <= '9' {
			j++
		}
		return j
	}
	j := i
	if j < len(data) && data[j] == '-' {
		j++
	}
	switch {
	case j < len(data) && data[j] == '0':
		j++
	case j < len(data) && data[j] >= '1' && data[j] <= '9':
		j = digits(j)
	default:
		return i
	}
	if j < len(data) && data[j] == '.' {
		k := digits(j + 1)
		if k == j+1 {
			return i
		}
		j = k
	}
	if j < len(data) && (data[j] == 'e' || data[j] == 'E') {
		j++
		if j < len(data) && (data[j] == '+' || data[j] == '-') {
			j++
		}
		k := digits(j)
		if k == j {
			return i
		}
		j = k
	}
	return j
}

func hasWord(data []byte, i int, w string) bool {
	return len(data)-i >= len(w) && string(data[i:i+len(w)]) == w
}

// skipSpace is the index of the first byte from i on that is not JSON white space.
func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}
