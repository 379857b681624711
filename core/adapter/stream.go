package adapter

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

// StreamField names the output field a growing ChatAdapter completion is writing now: the
// last complete "[[ ## name ## ]]" header line naming an output ("" before any header,
// and after [[ ## completed ## ]]). A header still being typed does not count.
func (Chat) StreamField(s *sig.Signature, partial string) string {
	current := ""
	lines := py.SplitLines(partial)
	for _, line := range lines {
		name, _, ok := matchHeader(py.Strip(line))
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

// json scanner states at depth 1.
const (
	jsBefore   = iota // before the opening brace
	jsKey             // expecting a key
	jsInKey           // inside a quoted key
	jsBareKey         // inside an unquoted key
	jsColon           // after a key, expecting ':'
	jsValue           // inside the value of the current key
	jsFinished        // the top-level object closed
)

// StreamField names the output field a growing JSONAdapter completion is writing now: the
// key at depth 1 of the first JSON object whose value was begun last ("" before any value
// and after the object closes; while the next key is being written the previous field
// stays). Strings (with escapes) and nesting are tracked so that braces and commas inside
// values do not end the current key; keys may be unquoted, as json_repair reads them.
// Without a signature every key counts. The template adapter's json mode uses it too.
func (JSON) StreamField(s *sig.Signature, partial string) string {
	state, depth := jsBefore, 0
	inStr, esc := false, false
	var key strings.Builder
	cur, next := "", "" // the key whose value was begun last; the key being read
	for _, r := range partial {
		switch state {
		case jsBefore:
			if r == '{' {
				state, depth = jsKey, 1
			}
		case jsKey:
			switch {
			case r == '"':
				key.Reset()
				state = jsInKey
			case r == '}':
				state = jsFinished
			case r == '_' || unicode.IsLetter(r):
				key.Reset()
				key.WriteRune(r)
				state = jsBareKey
			}
		case jsInKey:
			switch {
			case esc:
				esc = false
				key.WriteRune(r)
			case r == '\\':
				esc = true
			case r == '"':
				next, state = key.String(), jsColon
			default:
				key.WriteRune(r)
			}
		case jsBareKey:
			switch {
			case r == ':':
				cur, state = key.String(), jsValue
			case unicode.IsSpace(r):
				next, state = key.String(), jsColon
			default:
				key.WriteRune(r)
			}
		case jsColon:
			if r == ':' {
				cur, state = next, jsValue
			}
		case jsValue:
			switch {
			case inStr:
				switch {
				case esc:
					esc = false
				case r == '\\':
					esc = true
				case r == '"':
					inStr = false
				}
			case r == '"':
				inStr = true
			case r == '{' || r == '[':
				depth++
			case r == '}' || r == ']':
				depth--
				if depth == 0 {
					state = jsFinished
				}
			case r == ',' && depth == 1:
				state = jsKey
			}
		case jsFinished:
			return ""
		}
	}
	if state == jsFinished {
		return ""
	}
	if s == nil {
		return cur
	}
	if _, ok := s.Output(cur); ok {
		return cur
	}
	return ""
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
