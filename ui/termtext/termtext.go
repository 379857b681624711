// Package termtext makes text from models, files and servers safe to print on a
// terminal. It is the one sanitiser: the workbench draws through Sanitize and OneLine,
// the headless commands write through a Writer when their stream is a terminal.
//
// Nothing that passes through it can act on the terminal: escape sequences lose their
// ESC (CSI, OSC with its clipboard, title and hyperlink forms, DCS, APC, PM and SOS all
// start with ESC or a C1 control), every other control character becomes its visible
// Unicode picture (ESC -> ␛, BEL -> ␇), C1 controls and invalid UTF-8 become U+FFFD, and
// bidirectional overrides and isolates (U+202A-U+202E, U+2066-U+2069), which could make
// text read in another order than it is stored, are shown by name (⟨RLO⟩). The user
// still sees that the text contained them. Newlines stay, CRLF becomes LF.
package termtext

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Sanitize returns s safe to draw in the workbench: tabs become four spaces (the
// layout measures cells), every control as described in the package comment.
func Sanitize(s string) string {
	if isPlain(s) {
		return s
	}
	return string(appendSafe(make([]byte, 0, len(s)+8), s, "    "))
}

// OneLine sanitises s and folds it to one line for lists, titles and error messages.
func OneLine(s string) string {
	s = Sanitize(s)
	if strings.IndexByte(s, '\n') >= 0 {
		s = strings.Join(strings.Fields(s), " ")
	}
	return s
}

// bidiNames are the bidirectional formatting characters that reorder the text around
// them (embeddings, overrides, isolates), shown by their Unicode abbreviations.
var bidiNames = map[rune]string{
	0x202A: "⟨LRE⟩", 0x202B: "⟨RLE⟩", 0x202C: "⟨PDF⟩", 0x202D: "⟨LRO⟩", 0x202E: "⟨RLO⟩",
	0x2066: "⟨LRI⟩", 0x2067: "⟨RLI⟩", 0x2068: "⟨FSI⟩", 0x2069: "⟨PDI⟩",
}

func isBidi(r rune) bool { return r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069 }

// appendSafe appends the safe form of s to dst; tab is what a tab becomes.
func appendSafe(dst []byte, s string, tab string) []byte {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = utf8.AppendRune(dst, utf8.RuneError)
		case r == '\n':
			dst = append(dst, '\n')
		case r == '\t':
			dst = append(dst, tab...)
		case r == '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				break // CRLF: the LF follows
			}
			dst = append(dst, "␍"...)
		case r < 0x20:
			dst = utf8.AppendRune(dst, 0x2400+r) // control pictures: U+2400 + code
		case r == 0x7f:
			dst = append(dst, "␡"...)
		case r >= 0x80 && r <= 0x9f:
			// C1 controls (8-bit CSI 0x9b, OSC 0x9d, DCS 0x90, ...) have no picture.
			dst = utf8.AppendRune(dst, utf8.RuneError)
		case isBidi(r):
			dst = append(dst, bidiNames[r]...)
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return dst
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
		if r == utf8.RuneError || r < 0x20 && r != '\n' || r >= 0x7f && r <= 0x9f || isBidi(r) {
			return false
		}
	}
	return true
}

// Count is "1 turn", "2 turns": a number with its noun, pluralised the English way (the
// nouns shown are regular). The workbench and the CLI both word counts with it.
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
