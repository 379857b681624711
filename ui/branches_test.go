package ui_test

import (
	"context"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

func TestNavigatorForkSwitchAndEdit(t *testing.T) {
	hs, b := open(t, 120, 40, 3)
	ctx := context.Background()
	hs.press("esc", "b")
	s := hs.screen()
	assertContains(t, s, "branches · turn tree", "#1 question number 1", "● #3 [main] ← active tip question number 3")
	// fork at turn 2 from the navigator: a pane opens on the fork
	hs.press("up", "f")
	assertContains(t, hs.screen(), "forked fork-1 at turn 2")
	if pg, _ := b.LoadTurns(ctx, "c1", "fork-1", 0, 10); pg.Total != 2 {
		t.Fatalf("fork-1 has %d turns", pg.Total)
	}
	// the tree now shows both tips; switching to turn 3 goes back to main
	hs.press("b")
	assertContains(t, hs.screen(), "[fork-1]", "[main]")
	hs.press("G", "enter")
	if !strings.Contains(hs.screen(), "╭─ main ·") {
		t.Errorf("enter on main's tip should focus main:\n%s", hs.screen())
	}
	// edit-and-resubmit turn 1 from the navigator
	hs.press("b") // the tree loads before the next keys
	hs.press("g", "e")
	assertContains(t, hs.screen(), "editing turn 1", "> question number 1")
	hs.typeText("!")
	hs.press("enter")
	if pg, _ := b.LoadTurns(ctx, "c1", "edit-1", 0, 10); pg.Total != 1 || pg.Turns[0].Inputs.String("question") != "question number 1!" {
		t.Fatalf("edit-1: %+v", pg)
	}
	// fold: the fork point (turn 1 has two children now: main's turn 2 and edit-1's turn 1)
	hs.press("b") // the new branch's pane has the focus
	before := strings.Count(hs.screen(), "question number")
	hs.press("g", "h")
	if after := strings.Count(hs.screen(), "question number"); after >= before {
		t.Errorf("folding the root should hide turns: %d -> %d\n%s", before, after, hs.screen())
	}
}

func TestNewPaneSideBySideAndClose(t *testing.T) {
	hs, b := open(t, 160, 40, 2)
	ctx := context.Background()
	if _, err := b.Fork(ctx, "c1", "", "empty"); err != nil {
		t.Fatal(err)
	}
	hs.press("esc", "n")
	assertContains(t, hs.screen(), "every branch has a pane")
	hs.press("L", "enter") // reopen to see the new branch list
	hs.press("esc", "n")
	s := hs.screen()
	assertContains(t, s, "╭─ main ·", "╭─ empty ·", "no turns yet")
	hs.press("x")
	assertLacks(t, hs.screen(), "╭─ empty ·")
	hs.press("x")
	assertContains(t, hs.screen(), "the last pane stays open")
}

func TestCompareRunsReplay(t *testing.T) {
	hs, b := open(t, 140, 40, 0)
	for _, q := range []string{"alpha", "beta"} {
		hs.typeText(q)
		hs.press("enter")
	}
	hs.press("esc", "R")
	assertContains(t, hs.screen(), "compare runs", "Replay main from the first turn")
	hs.typeText("gother") // the model field has the focus
	_ = b
	hs.press("enter")
	s := hs.screen()
	assertContains(t, s, "main · 2 turns", "replay-1 · 2 turns", "≠", "echo (gother): beta", "2 differing turns")
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
