package template

import (
	"strings"
	"unicode"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/sig"
)

// StreamField reports which output field a growing completion is writing at its end, so
// that streamed tokens can be routed to a field while they arrive. It returns "" before
// the first field starts, between fields and after the last one ends.
//   - full_text: the single output field, always;
//   - xml: the output tag opened last and not closed yet;
//   - chat: the output field of the last [[ ## f ## ]] header;
//   - json: the key at depth 1 whose value is being written.
func (t *Template) StreamField(s *sig.Signature, partial string) string {
	if s == nil {
		return ""
	}
	switch t.Mode() {
	case ParseFullText:
		if len(s.Outputs) == 1 {
			return s.Outputs[0].Name
		}
		return ""
	case ParseXML:
		return streamXML(s, partial)
	case ParseChat:
		return adapter.Chat{}.StreamField(s, partial)
	}
	return streamJSON(s, partial)
}

func isOutput(s *sig.Signature, name string) bool {
	_, ok := s.Output(name)
	return ok
}

func streamXML(s *sig.Signature, partial string) string {
	best, bestAt := "", -1
	for _, f := range s.Outputs {
		open := strings.LastIndex(partial, "<"+f.Name+">")
		if open < 0 || open <= bestAt {
			continue
		}
		if strings.Contains(partial[open:], "</"+f.Name+">") {
			continue
		}
		best, bestAt = f.Name, open
	}
	return best
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

// streamJSON scans the partial text incrementally: strings (with escapes) and nesting are
// tracked so that braces and commas inside values do not end the current key.
func streamJSON(s *sig.Signature, partial string) string {
	state, depth := jsBefore, 0
	inStr, esc := false, false
	var key strings.Builder
	cur := ""
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
				cur, state = key.String(), jsColon
			default:
				key.WriteRune(r)
			}
		case jsBareKey:
			switch {
			case r == ':':
				cur, state = key.String(), jsValue
			case unicode.IsSpace(r):
				cur, state = key.String(), jsColon
			default:
				key.WriteRune(r)
			}
		case jsColon:
			if r == ':' {
				state = jsValue
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
				cur, state = "", jsKey
			}
		case jsFinished:
			return ""
		}
	}
	if state == jsValue && isOutput(s, cur) {
		return cur
	}
	return ""
}
