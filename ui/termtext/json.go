package termtext

import (
	"fmt"
	"unicode/utf8"
)

// EscapeJSON returns JSON text with every character a terminal could act on written
// as a \u escape: C1 controls, DEL, bidi formatting characters and U+2028/U+2029 (Go's
// encoder and json.dumps leave them raw), and invalid UTF-8 as \ufffd. In valid JSON
// these can only stand inside strings, so the value read back is the same: --json
// output stays exact JSON and is safe on a terminal.
func EscapeJSON(b []byte) []byte {
	i := 0
	for i < len(b) && b[i] < 0x7f {
		i++
	}
	if i == len(b) {
		return b
	}
	return appendJSON(append(make([]byte, 0, len(b)+16), b[:i]...), b[i:])
}

// appendJSON appends b to out with EscapeJSON's escapes.
func appendJSON(out, b []byte) []byte {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = append(out, `\ufffd`...)
		case r == 0x7f || r >= 0x80 && r <= 0x9f || isBidi(r) || r == 0x2028 || r == 0x2029:
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}
