package ui_test

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestResumePromptNarrow: at the smallest supported size the prompt wraps inside its
// frame and every line keeps the terminal's width.
func TestResumePromptNarrow(t *testing.T) {
	b, _ := interrupted(t)
	hs := newHarness(t, b, 60, 20)
	s := hs.screen()
	lines := strings.Split(s, "\n")
	if len(lines) != 20 {
		t.Fatalf("%d lines, want 20:\n%s", len(lines), s)
	}
	for i, l := range lines {
		if w := ansi.StringWidth(l); w > 60 {
			t.Errorf("line %d is %d wide:\n%s", i, w, s)
		}
	}
	flat := strings.Join(strings.Fields(strings.ReplaceAll(s, "│", " ")), " ")
	for _, want := range []string{"Turn 2 on branch main was interrupted (1 of 2 calls done):", "[r]esume / [d]iscard / [l]ater", "r resume · d discard", "and sends only the rest; discarding leaves the branch as it is."} {
		if !strings.Contains(flat, want) {
			t.Errorf("narrow prompt lacks %q:\n%s", want, s)
		}
	}
}
