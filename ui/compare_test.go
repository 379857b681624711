package ui_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/uitest"
)

// openCompare opens the compare view on SupportAgent's respond call of turn 1, where
// keep and inherit differ (respond's reasoning is only in its own history).
func openCompare(t *testing.T, w, h int) (*harness, *real) {
	t.Helper()
	hs, r := openReal(t, w, h, "SupportAgent", supportQuestions[:2]...)
	hs.press("esc", "enter", "down") // the transcript, its tree, respond
	hs.press("c")
	return hs, r
}

func TestCompareKeepAgainstInherit(t *testing.T) {
	hs, _ := openCompare(t, 160, 45)
	s := hs.screen()
	assertContains(t, s, "compare · turn 1 · respond", "▸ 1 per-predictor · 4 messages", "2 outer, signature-filtered · 4 messages",
		"1 message differs (2 lines)", "identical lines", "missing-output", "-The customer has a technical question", "+None",
		"side by side", "1 difference (n jumps)")
	// the bottom line lists the view's keys
	assertContains(t, s, "n next difference", "tab other side", "? help")
	// n brings the difference to the top, N goes back
	hs.press("n")
	assertContains(t, hs.screen(), "difference 1/1")
	hs.press("N")
	assertContains(t, hs.screen(), "no more differences that way", "difference 1/1")
	// z unfolds every identical line
	hs.press("z")
	assertContains(t, hs.screen(), "Your input fields are:")
	assertLacks(t, hs.screen(), "identical lines")
	// the left side: actual (what was sent, under keep) against inherit
	hs.press("a")
	assertContains(t, hs.screen(), "▸ actual · 4 messages", "1 message differs")
	// the right side: strategy 3 (inline) renders another shape altogether
	hs.press("tab", "s")
	assertContains(t, hs.screen(), "▸ 3 outer inline")
	// ? lists the view's keys
	hs.press("?")
	assertContains(t, hs.screen(), "next difference", "copy as JSON", "save as text file", "branch on the right")
	hs.press("esc")
	assertContains(t, hs.screen(), "compare · turn 1 · respond")
	hs.press("esc")
	assertLacks(t, hs.screen(), "compare · turn 1")
}

// Narrow, the two sides stack (- left lines, + right lines); v goes through the
// layouts, one side alone included.
func TestCompareNarrowStacks(t *testing.T) {
	hs, _ := openCompare(t, 80, 24)
	s := hs.screen()
	assertContains(t, s, "stacked", "- 1 per-predictor", "+ 2 outer, signature-filtered", "-The customer has", "+None", " ⚠ 2 outer, signature-filtered: missing-output")
	assertLacks(t, s, "+⚠", "-⚠") // an annotation, not request content
	for _, l := range strings.Split(s, "\n") {
		if len([]rune(l)) > 80 {
			t.Errorf("a line is wider than 80: %q", l)
		}
	}
	hs.press("v")
	assertContains(t, hs.screen(), "left side only")
	assertLacks(t, hs.screen(), "+None")
	hs.press("v")
	assertContains(t, hs.screen(), "right side only", "+None")
	assertLacks(t, hs.screen(), "-The customer")
}

// The right side can be the same call on another branch: an edited turn 1 compared with
// the original, both under keep.
func TestCompareAnotherBranch(t *testing.T) {
	hs, r := openReal(t, 160, 45, "SupportAgent", supportQuestions[:2]...)
	// edit turn 1 into a sibling branch
	hs.press("esc", "e")
	hs.typeText(" at all")
	hs.press("enter")
	if n := r.turns(t, "edit-1"); n != 2 {
		t.Fatalf("edit-1 has %d turns", n)
	}
	hs.press("shift+tab") // from edit-1's pane back to main's
	hs.press("enter", "down", "c")
	assertContains(t, hs.screen(), "compare · turn 1 · respond")
	hs.press("tab", "s", "s", "s", "s", "s", "B") // the right side: keep again, on the next branch
	s := hs.screen()
	assertContains(t, s, "▸ 1 per-predictor on edit-1", "-The reset email never arrives", "+The reset email never arrives at all")
}

// y copies the side in use to the clipboard (OSC 52), o and O save it to a file.
func TestCompareCopyAndSave(t *testing.T) {
	hs, _ := openCompare(t, 160, 45)
	dir := t.TempDir()
	hs.m.SetSaveDir(dir)
	hs.press("y")
	assertContains(t, hs.screen(), "copied the 1 per-predictor request as text")
	hs.press("tab", "O")
	assertContains(t, hs.screen(), "saved "+dir)
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) != 1 {
		t.Fatalf("saved files: %v %v", files, err)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		Strategy string `json:"strategy"`
		Messages []struct {
			Role, Content string
		} `json:"messages"`
	}
	if err := json.Unmarshal(data, &req); err != nil || req.Strategy != "2 outer, signature-filtered" || len(req.Messages) != 4 ||
		!strings.Contains(req.Messages[2].Content, "None") {
		t.Errorf("saved request: %s (%v)", data, err)
	}
	hs.press("o")
	if files, _ := filepath.Glob(filepath.Join(dir, "*.txt")); len(files) != 1 {
		t.Errorf("text file: %v", files)
	}
}

// The compare view's screens, wide and narrow (the in-memory backend: its renderings of
// keep and inherit differ in a history reply that inherit shows as None).
func TestCompareGoldens(t *testing.T) {
	for _, c := range []struct {
		name string
		w, h int
	}{{"compare_160x45", 160, 45}, {"compare_80x24", 80, 24}} {
		t.Run(c.name, func(t *testing.T) {
			b := uitest.New()
			ctx := context.Background()
			conv, err := b.NewConversation(ctx, "support", "compare")
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{"where is my invoice?", "and the refund?"} {
				if _, err := b.Send(ctx, sessions.SendRequest{Conv: conv.ID, Branch: "main", Inputs: sig.NewMap("question", q)}, make(chan sessions.Event, 100)); err != nil {
					t.Fatal(err)
				}
			}
			hs := newHarness(t, b, c.w, c.h)
			hs.press("enter")
			hs.press("esc", "enter", "down", "c")
			golden(t, c.name, hs.screen())
		})
	}
}
