package ui_test

import (
	"strings"
	"testing"
	"time"
)

// A fork while a turn is running reloads the panes; the running turn keeps streaming in
// its pane and, once recorded, shows there (found end to end: the turn used to vanish
// from main until something reloaded it).
func TestForkWhileRunningKeepsTheTurn(t *testing.T) {
	hs, b := open(t, 160, 40, 1)
	b.Delay = 20 * time.Millisecond // the answer streams word by word
	hs.typeText("second question")
	hs.send(keyMsg("enter"))
	hs.pump(func() bool { return strings.Contains(hs.screen(), "● running") })
	// fork at turn 1 from main while the turn runs
	hs.send(keyMsg("tab"))
	hs.send(keyMsg("k"))
	hs.send(keyMsg("f"))
	hs.pump(func() bool { return strings.Contains(hs.screen(), "╭─ fork-1 ·") })
	if s := hs.screen(); !strings.Contains(s, "second question") {
		t.Errorf("the running turn is no longer shown after the fork:\n%s", s)
	}
	hs.settle()
	s := hs.screen()
	assertContains(t, s, "turn recorded on main", "second question")
	if bottom := lineWith(s, "╰─ 2 turns"); !strings.HasPrefix(bottom, "╰─ 2 turns") || !strings.Contains(bottom, "╯╰─ 1 turn ") {
		t.Errorf("main should show 2 turns and fork-1 1 turn:\n%s", s)
	}
}

// Undo and redo while a turn runs say why nothing happened.
func TestUndoWhileRunningSaysSo(t *testing.T) {
	hs, b := open(t, 120, 40, 1)
	b.Delay = 20 * time.Millisecond
	hs.typeText("second question")
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
	hs, _ := open(t, 120, 40, 3)
	hs.press("tab", "k", "k")
	assertContains(t, hs.screen(), "3 turns · turn 1 selected")
	hs.send(keyMsg("u"))
	// stop right after the undo's result: the reload's pages are not in yet
	hs.pump(func() bool { return strings.Contains(hs.screen(), "undid 1 turn") })
	assertLacks(t, hs.screen(), "loading…", "╰─ 0 turns")
	hs.settle()
	assertContains(t, hs.screen(), "undid 1 turn(s) on main", "2 turns · turn 1 selected")
}

func lineWith(screen, s string) string {
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}
