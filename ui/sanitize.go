package ui

import (
	"strings"
	"unicode/utf8"
)

// Sanitize makes text from models, files and users safe to draw: no byte of it can act
// on the terminal. Escape sequences lose their ESC (CSI, OSC with its clipboard and title
// forms, DCS, APC, PM, SOS all start with ESC or a C1 control), and every other control
// character is replaced by its visible Unicode picture (ESC -> ␛, BEL -> ␇), so the user
// still sees that the text contained it. Newlines stay; tabs become spaces; CRLF becomes
// LF. Invalid UTF-8 becomes U+FFFD.
func Sanitize(s string) string {
	if isPlain(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case r == '\n':
			b.WriteByte('\n')
		case r == '\t':
			b.WriteString("    ")
		case r == '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				break // CRLF: the LF follows
			}
			b.WriteRune('␍')
		case r < 0x20:
			b.WriteRune(0x2400 + r) // control pictures: U+2400 + code
		case r == 0x7f:
			b.WriteRune('␡')
		case r >= 0x80 && r <= 0x9f:
			// C1 controls (8-bit CSI 0x9b, OSC 0x9d, DCS 0x90, ...) have no picture.
			b.WriteRune('�')
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isPlain reports whether s needs no change (the common case, checked without allocating).
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && c != '\n' || c == 0x7f {
			return false
		}
		if c >= 0x80 {
			return plainUTF8(s[i:])
		}
	}
	return true
}

func plainUTF8(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || r < 0x20 && r != '\n' || r >= 0x7f && r <= 0x9f {
			return false
		}
	}
	return true
}

// OneLine sanitises s and folds it to one line for lists and titles.
func OneLine(s string) string {
	s = Sanitize(s)
	if strings.IndexByte(s, '\n') >= 0 {
		s = strings.Join(strings.Fields(s), " ")
	}
	return s
}
