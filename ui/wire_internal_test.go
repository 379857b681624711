package ui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/themes"
	"github.com/sessionbench/sessionbench/ui/sessions"
)

// Compare mode: the headers head the columns (never marked as a difference), a summary
// counts the differing lines, and marked lines keep their +/- within the column.
func TestCompareLinesHeadersAndMarks(t *testing.T) {
	th := themes.Dark()
	st := &stylesheet{theme: th, s: th.Styles()}
	strats := []sessions.Strategy{{N: 1, Name: "keep"}, {N: 2, Name: "inherit"}}
	msg := func(role, content string) sessions.RenderedMessage {
		return sessions.RenderedMessage{Message: lm.Message{Role: role, Content: content}, Tokens: 3}
	}
	a := sessions.Rendering{Strategy: 1, Path: "respond", Tokens: 6, Messages: []sessions.RenderedMessage{msg("system", "same"), msg("user", "old text here")}}
	b := sessions.Rendering{Strategy: 2, Path: "respond", Tokens: 9, Messages: []sessions.RenderedMessage{msg("system", "same"), msg("user", "new text here")}}
	const w = 70
	lines := compareLines(st, strats, a, b, w)
	var plain []string
	for _, l := range lines {
		if ansi.StringWidth(l) > w {
			t.Errorf("line %q is %d wide, over %d", ansi.Strip(l), ansi.StringWidth(l), w)
		}
		plain = append(plain, ansi.Strip(l))
	}
	got := strings.Join(plain, "\n")
	for _, want := range []string{"1 keep · respond", "2 inherit · respond", "2 line(s) differ · tokens 6 vs 9", "-old text here", "+new text here"} {
		if !strings.Contains(got, want) {
			t.Errorf("compare lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "-1 keep") || strings.Contains(got, "+2 inherit") || strings.Contains(got, "…") {
		t.Errorf("headers marked as differences or marked lines cut:\n%s", got)
	}
	same := compareLines(st, strats, a, sessions.Rendering{Strategy: 2, Path: "respond", Tokens: 6, Messages: a.Messages}, w)
	if !strings.Contains(ansi.Strip(strings.Join(same, "\n")), "identical messages under both strategies") {
		t.Errorf("identical renderings not said to be identical")
	}
}
