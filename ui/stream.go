package ui

import (
	"regexp"
	"strings"
)

var (
	// streamHeader is a complete ChatAdapter field header line.
	streamHeader = regexp.MustCompile(`^\[\[ ## (\w+) ## \]\]$`)
	// streamHeaderPrefix is a header line still being typed ("[", "[[ ## pl", "[[ ## plan ## ]").
	streamHeaderPrefix = regexp.MustCompile(`^\[(\[( (#(#( (\w*( (#(#( (\]\]?)?)?)?)?)?)?)?)?)?)?)?$`)
)

// streamSection is one output field of a completion being written.
type streamSection struct {
	field string // "" for text before any header
	text  string
}

// streamSections splits a growing raw completion into the fields written so far, so the
// pane shows "reply:" and the reply rather than the adapter's "[[ ## reply ## ]]" markup.
// Text after [[ ## completed ## ]] and a header line still arriving are left out; text
// in no header format (a JSON object, a template's own format) is one unnamed section.
func streamSections(raw string) []streamSection {
	lines := strings.Split(raw, "\n")
	var out []streamSection
	cur := streamSection{}
	var body []string
	flush := func() {
		t := strings.Trim(strings.Join(body, "\n"), "\n")
		if cur.field != "" || strings.TrimSpace(t) != "" {
			cur.text = t
			out = append(out, cur)
		}
		body = nil
	}
	for i, line := range lines {
		l := strings.TrimSpace(line)
		if m := streamHeader.FindStringSubmatch(l); m != nil {
			flush()
			if m[1] == "completed" {
				return out
			}
			cur = streamSection{field: m[1]}
			continue
		}
		if i == len(lines)-1 && l != "" && streamHeaderPrefix.MatchString(l) {
			break // a header still arriving
		}
		body = append(body, line)
	}
	flush()
	return out
}
