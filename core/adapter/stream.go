package adapter

import (
	"strings"

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
