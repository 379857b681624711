package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompareView: the full-screen compare of a call, keep against inherit, at 160x45
// and then at 80x24, where the sides stack; n jumps to the difference, v changes the
// layout, y copies the request to the clipboard (OSC 52, into tmux's buffer), o saves
// it to a file in the working directory.
func TestCompareView(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	tm := startTerm(t, ws, 160, 45)
	tm.waitFor("no turns yet")
	tm.typeText("I can't log in")
	tm.press("Enter")
	tm.waitFor("turn recorded on main")
	tm.typeText("The reset email never arrives")
	tm.press("Enter")
	tm.waitFor("╰─ 2 turns", "calls · turn 1")
	// the transcript, its call tree, respond, c
	tm.press("Tab", "Enter", "j")
	tm.waitFor("2/2 · 2 calls")
	tm.press("c")
	s := tm.waitFor("compare · turn 1 · respond", "1 per-predictor · 4 messages", "2 outer, signature-filtered · 4 messages",
		"1 message differs (2 lines)", "-The customer has a technical question", "+None", "missing-output", "identical lines", "side by side")
	for i, l := range lines(s) {
		if n := len([]rune(l)); n > 160 {
			t.Errorf("row %d is %d cells wide at 160 columns", i+1, n)
		}
	}
	tm.press("n")
	tm.waitFor("difference 1/1")

	// narrow: the sides stack, every changed line keeps its marker (NO_COLOR is set)
	tm.resize(80, 24)
	s = tm.waitFor("stacked", "- 1 per-predictor", "+ 2 outer, signature-filtered")
	for i, l := range lines(s) {
		if n := len([]rune(l)); n > 80 {
			t.Errorf("row %d is %d cells wide at 80 columns: %q", i+1, n, l)
		}
	}
	tm.press("g")
	tm.waitFor("-The customer has a technical question", "+None")
	tm.press("v")
	tm.waitFor("left side only")
	tm.waitGone("+None")
	tm.press("v")
	tm.waitFor("right side only", "+None")

	// copy: the request arrives in tmux's paste buffer through OSC 52
	tm.press("y")
	tm.waitFor("copied the 1 per-predictor request as text")
	buf := tm.pasteBuffer()
	if !strings.Contains(buf, "── system ──") || !strings.Contains(buf, "The customer has a technical question I have a known answer for.") {
		t.Errorf("the clipboard holds:\n%s", buf)
	}
	// save as JSON: the right side (tab), into the working directory
	tm.press("Tab", "O")
	tm.waitFor("saved " + ws.dir)
	files, _ := filepath.Glob(filepath.Join(ws.dir, "request-*.json"))
	if len(files) != 1 {
		t.Fatalf("saved files %v", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil || !strings.Contains(string(data), `"strategy": "2 outer, signature-filtered"`) || !strings.Contains(string(data), "None") {
		t.Errorf("saved request: %s %v", data, err)
	}
	tm.press("Escape")
	tm.waitGone("compare · turn 1")
	tm.press("C-c")
	if code := tm.waitExit(); code != 0 {
		t.Fatalf("exit status %d", code)
	}
}
