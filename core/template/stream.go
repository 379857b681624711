package template

import (
	"strings"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/sig"
)

// StreamField reports which output field a growing completion is writing at its end, so
// that streamed tokens can be routed to a field while they arrive. It returns "" before
// the first field starts and after the last one ends.
//   - full_text: the single output field, always;
//   - xml: the output tag opened last and not closed yet;
//   - chat: the output field of the last [[ ## f ## ]] header;
//   - json: the JSONAdapter's (the key at depth 1 whose value was begun last).
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
	return adapter.JSON{}.StreamField(s, partial)
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
