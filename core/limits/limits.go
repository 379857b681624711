// Package limits holds the bounds every decoder of outside data enforces: request and
// scenario JSON, save files, run scripts, agent files, the configuration and themes,
// recorded requests, and a model's replies read as JSON or Python literals. Input past
// them ends in a clear error saying what and where, never in a stack overflow or an
// exhausted machine.
package limits

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// Depth is the deepest nesting of lists, objects, dicts, tuples or tables any decoder
// accepts. Real data never comes near it; Python's own json module gives up near the
// same depth (its recursion limit is 1,000). Python literals in model replies stop at
// PythonDepth, as Python's parser does.
const Depth = 1000

// PythonDepth is how deep ast.literal_eval nests brackets before Python's parser
// refuses the text ("too many nested parentheses"); reading a reply as a Python
// literal stops there too, as DSPy's would.
const PythonDepth = 200

// DepthError is input nested deeper than Depth, at the bracket that went too deep.
type DepthError struct {
	Line, Column int   // 1-based; Column counts bytes
	Offset       int64 // byte offset of the bracket
}

func (e *DepthError) Error() string {
	return fmt.Sprintf("line %d, column %d: nested deeper than %d levels (the limit for any input)", e.Line, e.Column, Depth)
}

// UTF8Error is input that is not valid UTF-8, at its first bad byte.
type UTF8Error struct {
	Line, Column int // 1-based; Column counts bytes
	Offset       int64
	Byte         byte
}

func (e *UTF8Error) Error() string {
	return fmt.Sprintf("line %d, column %d: invalid UTF-8 (byte 0x%02x); the input must be UTF-8 text", e.Line, e.Column, e.Byte)
}

// SizeError is input larger than a command accepts.
type SizeError struct {
	What  string // "standard input", a file name
	Limit int64  // bytes
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("%s is larger than %s, the limit for it", e.What, Bytes(e.Limit))
}

// CheckJSON reports JSON text nested deeper than Depth (a *DepthError), without
// recursion and without decoding: brackets inside strings do not count. It does not
// check the syntax otherwise; the decoder that follows does.
func CheckJSON(data []byte) error {
	depth := 0
	inString, escaped := false, false
	for i, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > Depth {
				line, col := Position(data, i)
				return &DepthError{Line: line, Column: col, Offset: int64(i)}
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return nil
}

// CheckUTF8 reports the first byte of data that is not valid UTF-8 (a *UTF8Error).
func CheckUTF8(data []byte) error {
	if utf8.Valid(data) {
		return nil
	}
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			line, col := Position(data, i)
			return &UTF8Error{Line: line, Column: col, Offset: int64(i), Byte: data[i]}
		}
		i += size
	}
	return nil
}

// Position turns a byte offset into a 1-based line and column (in bytes).
func Position(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	before := data[:off]
	return bytes.Count(before, []byte("\n")) + 1, off - (bytes.LastIndexByte(before, '\n') + 1) + 1
}

// Excerpt is s when it is at most n bytes, else its first n bytes (cut at a rune
// boundary) followed by how much was left out: error messages quote model replies and
// files, and must not echo megabytes.
func Excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… [%s more, %s in all]", s[:cut], Bytes(int64(len(s)-cut)), Bytes(int64(len(s))))
}

// Bytes writes a byte count for people: 512 bytes, 3.2 KiB, 64 MiB.
func Bytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return trimZero(float64(n)/(1<<10)) + " KiB"
	case n < 1<<30:
		return trimZero(float64(n)/(1<<20)) + " MiB"
	}
	return trimZero(float64(n)/(1<<30)) + " GiB"
}

func trimZero(f float64) string {
	s := fmt.Sprintf("%.1f", f)
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		return s[:len(s)-2]
	}
	return s
}
