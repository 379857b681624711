package ui_test

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// openSlow opens a real backend whose demo model streams slowly, with the turns of
// questions already recorded.
func openSlow(t *testing.T, w, h int, questions ...string) (*harness, *real) {
	t.Helper()
	r := newReal(t, 200)
	r.converse(t, "SupportAgent", "slow", questions...)
	hs := newHarness(t, r, w, h)
	hs.press("enter")
	return hs, r
}

// A fork while a turn is running reloads the panes; the running turn keeps streaming in
// its pane and, once recorded, shows there (found end to end: the turn used to vanish
// from main until something reloaded it).
func TestForkWhileRunningKeepsTheTurn(t *testing.T) {
	hs, _ := openSlow(t, 160, 40, "I can't log in")
	hs.typeText("The reset email never arrives")
	hs.send(keyMsg("enter"))
	hs.pump(func() bool { return strings.Contains(hs.screen(), "● running") })
	// fork at turn 0 from main while the turn runs
	hs.send(keyMsg("tab"))
	hs.send(keyMsg("k"))
	hs.send(keyMsg("f"))
	hs.pump(func() bool { return strings.Contains(hs.screen(), "╭─ fork-1 ·") })
	if s := hs.screen(); !strings.Contains(s, "The reset email never arrives") {
		t.Errorf("the running turn is no longer shown after the fork:\n%s", s)
	}
	hs.settle()
	s := hs.screen()
	assertContains(t, s, "turn recorded on main", "The reset email never arrives")
	if bottom := lineWith(s, "╰─ 2 turns"); !strings.HasPrefix(bottom, "╰─ 2 turns") || !strings.Contains(bottom, "╯╰─ 1 turn ") {
		t.Errorf("main should show 2 turns and fork-1 1 turn:\n%s", s)
	}
}

// Undo and redo while a turn runs say why nothing happened.
func TestUndoWhileRunningSaysSo(t *testing.T) {
	hs, _ := openSlow(t, 120, 40, "I can't log in")
	hs.typeText("The reset email never arrives")
	hs.send(keyMsg("enter"))
	hs.pump(func() bool { return strings.Contains(hs.screen(), "● running") })
	for _, k := range []string{"u", "r"} {
		hs.send(keyMsg("tab"))
		hs.send(keyMsg(k))
		assertContains(t, hs.screen(), "undo and redo wait for the running turn (esc cancels it)")
		hs.send(keyMsg("tab")) // tree
		hs.send(keyMsg("tab")) // wire
		hs.send(keyMsg("tab")) // back to the editor
	}
	hs.settle()
	assertContains(t, hs.screen(), "turn recorded on main", "╰─ 2 turns")
}

// A reload after undo keeps the pane's turns on screen until the fresh page arrives:
// no "loading…" or "0 turns" flashes, and the selection stays.
func TestUndoKeepsTheSelection(t *testing.T) {
	hs, _ := openReal(t, 120, 40, "SupportAgent", supportQuestions...)
	hs.press("tab", "k", "k")
	assertContains(t, hs.screen(), "3 turns · turn 0 selected")
	hs.send(keyMsg("u"))
	// stop right after the undo's result: the reload's pages are not in yet
	hs.pump(func() bool { return strings.Contains(hs.screen(), "undid 1 turn") })
	assertLacks(t, hs.screen(), "loading…", "╰─ 0 turns")
	hs.settle()
	assertContains(t, hs.screen(), "undid 1 turn on main", "2 turns · turn 0 selected")
}

func lineWith(screen, s string) string {
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// Enter while a turn runs gives the text back to the editor, and the wire pane's dry run
// follows that text (it stayed at "rendering the text being typed…").
func TestRefusedSendKeepsTheDryRun(t *testing.T) {
	hs, _ := openSlow(t, 160, 40, "I can't log in")
	hs.typeText("The reset email never arrives")
	hs.send(keyMsg("enter"))
	hs.pump(func() bool { return strings.Contains(hs.screen(), "● running") })
	for _, r := range "a third question" { // typed while the turn runs
		hs.send(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	hs.send(keyMsg("enter"))
	assertContains(t, hs.screen(), "a turn is running", "● running")
	hs.pump(func() bool {
		return strings.Contains(hs.screen(), "a third question") && strings.Contains(hs.screen(), "[[ ## question ## ]]")
	})
	assertLacks(t, hs.screen(), "rendering the text being typed")
}
