package adapter

import (
	"strings"
	"unicode/utf8"

	"github.com/sessionbench/sessionbench/core/sig"
)

// StreamField names the output field a growing ChatAdapter completion is writing now: the
// last complete "[[ ## name ## ]]" header line naming an output ("" before any header,
// and after [[ ## completed ## ]]). A header still being typed does not count.
func (Chat) StreamField(s *sig.Signature, partial string) string {
	current := ""
	lines := sig.PySplitLines(partial)
	for _, line := range lines {
		name, _, ok := matchHeader(sig.PyStrip(line))
		if !ok {
			continue
		}
		switch {
		case name == "completed":
			current = ""
		case s != nil:
			if _, isOut := s.Output(name); isOut {
				current = name
			}
		}
	}
	return current
}

// StreamField names the output field a growing JSONAdapter completion is writing now:
// the last top-level key of the first JSON object whose value has begun ("" before any,
// and after the object closes).
func (JSON) StreamField(s *sig.Signature, partial string) string {
	depth := 0
	inStr, esc := false, false
	var key strings.Builder
	lastStr, current := "", ""
	expectKey := false
	for _, r := range partial {
		if inStr {
			switch {
			case esc:
				esc = false
				key.WriteRune(r)
			case r == '\\':
				esc = true
			case r == '"':
				inStr = false
				lastStr = key.String()
			default:
				key.WriteRune(r)
			}
			continue
		}
		switch r {
		case '"':
			inStr = true
			key.Reset()
		case '{', '[':
			depth++
			if depth == 1 {
				expectKey = true
			}
		case '}', ']':
			if depth == 0 {
				continue // stray closer before the object
			}
			depth--
			if depth == 0 {
				return ""
			}
		case ':':
			if depth == 1 && expectKey {
				current = ""
				if s == nil {
					current = lastStr
				} else if _, ok := s.Output(lastStr); ok {
					current = lastStr
				}
				expectKey = false
			}
		case ',':
			if depth == 1 {
				expectKey = true
			}
		}
	}
	return current
}

// FieldText is what one output field has received so far in a growing completion.
type FieldText struct {
	Name string // "" for text that is not in any field (before the first header)
	Text string
}

// StreamFields splits a growing ChatAdapter completion the way ParseChat splits a whole
// one: into the sections written so far, in order, each with its text (header lines
// removed). Sections of names that are not outputs (e.g. [[ ## completed ## ]]) are left
// out, and so is a last line that is still becoming a header, so no markup is ever
// shown as a field's text. Text before the first header is kept, unnamed, when it is
// more than blank.
func (Chat) StreamFields(s *sig.Signature, partial string) []FieldText {
	if i := strings.LastIndexAny(partial, "\n\r"); isHeaderPrefix(strings.TrimLeft(partial[i+1:], " \t")) {
		partial = partial[:i+1]
	}
	var out []FieldText
	for _, sec := range chatSections(partial) {
		text := strings.Join(sec.lines, "\n")
		switch {
		case sec.name == "":
			if strings.TrimSpace(text) == "" {
				continue
			}
		case s == nil:
		default:
			if _, ok := s.Output(sec.name); !ok {
				continue
			}
		}
		out = append(out, FieldText{Name: sec.name, Text: text})
	}
	return out
}

// isHeaderPrefix reports a non-empty line that could still grow into a header
// "[[ ## name ## ]]" but is not one yet.
func isHeaderPrefix(line string) bool {
	const open, closeTag = "[[ ## ", " ## ]]"
	if line == "" {
		return false
	}
	if len(line) <= len(open) {
		return strings.HasPrefix(open, line)
	}
	if !strings.HasPrefix(line, open) {
		return false
	}
	rest := line[len(open):]
	n := 0
	for n < len(rest) {
		r, size := utf8.DecodeRuneInString(rest[n:])
		if !isWordRune(r) {
			break
		}
		n += size
	}
	if n == len(rest) {
		return true // the name is still being written
	}
	tail := rest[n:]
	return n > 0 && len(tail) < len(closeTag) && strings.HasPrefix(closeTag, tail)
}
