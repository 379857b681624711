package ui_test

import (
	"context"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

var supportQuestions = []string{"I can't log in", "The reset email never arrives", "It's in my spam folder"}

func TestNavigatorForkSwitchAndEdit(t *testing.T) {
	hs, r := openReal(t, 120, 40, "SupportAgent", supportQuestions...)
	ctx := context.Background()
	hs.press("esc", "b")
	assertContains(t, hs.screen(), "branches · turn tree", "#0 I can't log in", "● #2 [main] ← active tip It's in my spam folder")
	// fork at turn 1 from the navigator: a pane opens on the fork
	hs.press("up", "f")
	assertContains(t, hs.screen(), "forked fork-1 at turn 1")
	if n := r.turns(t, "fork-1"); n != 2 {
		t.Fatalf("fork-1 has %d turns", n)
	}
	// the tree now shows both tips; switching to turn 2 goes back to main
	hs.press("b")
	assertContains(t, hs.screen(), "[fork-1]", "[main]")
	hs.press("G", "enter")
	if !strings.Contains(hs.screen(), "╭─ main ·") {
		t.Errorf("enter on main's tip should focus main:\n%s", hs.screen())
	}
	// edit-and-resubmit turn 0 from the navigator
	hs.press("b")
	hs.press("g", "e")
	assertContains(t, hs.screen(), "editing turn 0", "> I can't log in")
	hs.typeText("!")
	hs.press("enter")
	pg, err := r.LoadTurns(ctx, r.conv, "edit-1", 0, 10)
	if err != nil || pg.Total != 1 || pg.Turns[0].Inputs.String("question") != "I can't log in!" {
		t.Fatalf("edit-1: %+v %v", pg, err)
	}
	// fold: the sibling first turns (main's and edit-1's) hang under the root
	hs.press("b")
	before := strings.Count(hs.screen(), "#")
	hs.press("g", "h")
	if after := strings.Count(hs.screen(), "#"); after >= before {
		t.Errorf("folding the first turn should hide its children: %d -> %d\n%s", before, after, hs.screen())
	}
}

// An undone turn (on main's redo list, on no branch) is marked in the turn tree; a redo
// takes the mark away.
func TestNavigatorMarksUndoneTurns(t *testing.T) {
	hs, _ := openReal(t, 120, 40, "SupportAgent", supportQuestions...)
	hs.press("esc", "u")
	assertContains(t, hs.screen(), "undid 1 turn on main")
	hs.press("b")
	s := hs.screen()
	assertContains(t, s, "● #1 [main] ← active tip The reset email never arrives", "↶ #2 undone It's in my spam folder")
	hs.press("esc", "r", "b")
	s = hs.screen()
	assertContains(t, s, "● #2 [main] ← active tip It's in my spam folder")
	assertLacks(t, s, "undone")
}

func TestNewPaneSideBySideAndClose(t *testing.T) {
	hs, r := openReal(t, 160, 40, "SupportAgent", supportQuestions[:2]...)
	ctx := context.Background()
	hs.press("esc", "n")
	assertContains(t, hs.screen(), "every branch has a pane")
	if _, err := r.store.CreateBranch(ctx, r.conv, "empty"); err != nil {
		t.Fatal(err)
	}
	hs.press("L", "enter") // reopen to see the new branch list
	hs.press("esc", "n")
	s := hs.screen()
	assertContains(t, s, "╭─ main ·", "╭─ empty ·", "no turns yet")
	hs.press("x")
	assertLacks(t, hs.screen(), "╭─ empty ·")
	hs.press("x")
	assertContains(t, hs.screen(), "the last pane stays open")
}

// Panes that do not fit are named above the others, never silently off screen.
func TestPanesThatDoNotFitAreNamed(t *testing.T) {
	hs, r := openReal(t, 100, 30, "SupportAgent", supportQuestions[:2]...)
	ctx := context.Background()
	for _, b := range []string{"alt-a", "alt-b"} {
		if _, err := r.store.CreateBranch(ctx, r.conv, b); err != nil {
			t.Fatal(err)
		}
	}
	hs.press("esc", "L", "enter")
	hs.press("esc", "n", "n")
	assertContains(t, hs.screen(), "╭─ alt-b ·", "2 more: main, alt-a")
	hs.press("shift+tab")
	assertContains(t, hs.screen(), "╭─ alt-a ·", "2 more: main, alt-b")
}

func TestCompareRunsReplay(t *testing.T) {
	hs, r := openReal(t, 140, 40, "SupportAgent", supportQuestions[:2]...)
	hs.press("esc", "R")
	assertContains(t, hs.screen(), "compare runs", "Replay main from the first turn")
	hs.press("shift+tab") // the next agent: CorrectThenTranslate gets a question it cannot translate
	hs.press("shift+tab", "shift+tab", "shift+tab", "shift+tab", "shift+tab", "shift+tab", "shift+tab")
	assertContains(t, hs.screen(), "agent (shift+tab):   unchanged (SupportAgent)")
	hs.press("tab", "tab") // strategy 2
	assertContains(t, hs.screen(), "strategy (tab):      2 outer, signature-filtered")
	hs.press("enter")
	s := hs.screen()
	assertContains(t, s, "main · 2 turns", "replay-1 · 2 turns", "compare runs")
	if n := r.turns(t, "replay-1"); n != 2 {
		t.Errorf("replay-1 has %d turns", n)
	}
}

func TestMouseWheelScrollsPaneUnderPointer(t *testing.T) {
	hs, _ := open(t, 80, 24, 40)
	top := hs.screen()
	for i := 0; i < 5; i++ {
		hs.send(tea.MouseWheelMsg{Button: tea.MouseWheelUp, X: 10, Y: 5})
	}
	hs.settle()
	if hs.screen() == top {
		t.Fatalf("wheel up did not scroll")
	}
	for i := 0; i < 5; i++ {
		hs.send(tea.MouseWheelMsg{Button: tea.MouseWheelDown, X: 10, Y: 5})
	}
	hs.settle()
	if hs.screen() != top {
		t.Errorf("wheel down should come back to the bottom:\n%s\n---\n%s", hs.screen(), top)
	}
}

// A click focuses the pane under it and selects the turn or call clicked; the mouse key
// turns capture off (the terminal then selects text on drag) and on again.
func TestMouseClickFocusesAndSelects(t *testing.T) {
	hs, _ := openReal(t, 140, 40, "SupportAgent", supportQuestions[:2]...)
	// row 2 of the screen is the first line of the transcript: turn 0
	hs.send(tea.MouseClickMsg{Button: tea.MouseLeft, X: 5, Y: 2})
	hs.settle()
	assertContains(t, hs.screen(), "2 turns · turn 0 selected", "calls · turn 0")
	// the tree's second row: respond
	hs.send(tea.MouseClickMsg{Button: tea.MouseLeft, X: 100, Y: 3})
	hs.settle()
	assertContains(t, hs.screen(), "2/2 · 2 calls", "actual · respond")
	if hs.m.View().MouseMode != tea.MouseModeCellMotion {
		t.Fatal("mouse capture is off at start")
	}
	hs.press("M")
	if hs.m.View().MouseMode != tea.MouseModeNone {
		t.Error("M did not turn mouse capture off")
	}
	assertContains(t, hs.screen(), "mouse capture off: drag selects text", "mouse off")
	hs.press("M")
	if hs.m.View().MouseMode != tea.MouseModeCellMotion {
		t.Error("M did not turn mouse capture back on")
	}
}
