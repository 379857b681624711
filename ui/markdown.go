package ui

import (
	"strings"

	"charm.land/glamour/v2"
	"charm.land/lipgloss/v2"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// markdown renders answers with glamour, keeping one renderer per width (building a
// renderer parses a whole style, which costs far more than rendering a short answer).
// Callers memoise the rendered text per message and width; this only pools renderers.
type markdown struct {
	style     string
	renderers map[int]*glamour.TermRenderer
}

func newMarkdown(style string) *markdown {
	return &markdown{style: style, renderers: map[int]*glamour.TermRenderer{}}
}

// render returns the sanitised text as markdown wrapped to width, as lines. It never
// fails: text glamour cannot render is shown wrapped as plain text.
func (m *markdown) render(text string, width int) []string {
	text = termtext.Sanitize(text)
	width = max(width, 10)
	r, ok := m.renderers[width]
	if !ok {
		var err error
		r, err = glamour.NewTermRenderer(glamour.WithStandardStyle(m.style), glamour.WithWordWrap(width-2))
		if err != nil {
			r = nil
		}
		m.renderers[width] = r
	}
	if r != nil {
		if out, err := r.Render(text); err == nil {
			return trimBlank(strings.Split(strings.TrimRight(out, "\n"), "\n"))
		}
	}
	return wrapLines(text, width)
}

// trimBlank drops leading and trailing lines that show nothing (glamour pads its output).
func trimBlank(ls []string) []string {
	blank := func(s string) bool { return strings.TrimSpace(stripANSI(s)) == "" }
	for len(ls) > 0 && blank(ls[0]) {
		ls = ls[1:]
	}
	for len(ls) > 0 && blank(ls[len(ls)-1]) {
		ls = ls[:len(ls)-1]
	}
	if len(ls) == 0 {
		return []string{""}
	}
	return ls
}

// wrapLines word-wraps already sanitised text to width, hard-breaking long words.
func wrapLines(text string, width int) []string {
	width = max(width, 1)
	return strings.Split(lipgloss.Wrap(text, width, ""), "\n")
}
