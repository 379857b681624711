package ui_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/ui/uitest"
)

// interrupted makes a backend with one conversation of two turns and an interrupted
// third turn on main (one of its two calls done).
func interrupted(t *testing.T) (*uitest.Memory, string) {
	t.Helper()
	b := uitest.New()
	c, err := b.NewConversation(context.Background(), "support", "refunds")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Seed(c.ID, "main", 2, 2); err != nil {
		t.Fatal(err)
	}
	key, err := b.AddPending(c.ID, "main", sig.NewMap("question", "did my refund arrive?"), 1)
	if err != nil {
		t.Fatal(err)
	}
	return b, key
}

func pendingCount(t *testing.T, b *uitest.Memory) int {
	t.Helper()
	ps, err := b.Pending(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return len(ps)
}

func turns(t *testing.T, b *uitest.Memory) int {
	t.Helper()
	pg, err := b.LoadTurns(context.Background(), "c1", "main", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	return pg.Total
}

const offer = "Turn 2 on branch main was interrupted (1 of 2 calls done): [r]esume / [d]iscard / [l]ater"

func TestResumePromptAtStart(t *testing.T) {
	b, _ := interrupted(t)
	hs := newHarness(t, b, 120, 30)
	assertContains(t, hs.screen(), offer, "did my refund arrive?", "refunds", "r resume · d discard · l later")

	hs.press("r")
	s := hs.screen()
	assertContains(t, s, "echo: did my refund arrive?", "turn recorded on main")
	assertLacks(t, s, "was interrupted")
	if n := turns(t, b); n != 3 {
		t.Errorf("branch has %d turns after resume, want 3", n)
	}
	if n := pendingCount(t, b); n != 0 {
		t.Errorf("%d turns still pending", n)
	}
	// A workbench started again offers nothing.
	again := newHarness(t, b, 120, 30)
	assertLacks(t, again.screen(), "was interrupted")
}

func TestResumePromptDiscardAndLater(t *testing.T) {
	tests := []struct {
		name        string
		key         string
		status      string
		wantPending int
	}{
		{"discard", "d", "discarded interrupted turn 2 on main", 0},
		{"later", "l", "interrupted turn 2 on main kept", 1},
		{"esc is later", "esc", "interrupted turn 2 on main kept", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := interrupted(t)
			hs := newHarness(t, b, 120, 30)
			assertContains(t, hs.screen(), offer)
			hs.press(tc.key)
			s := hs.screen()
			assertContains(t, s, tc.status, "refunds") // the conversation list is back
			assertLacks(t, s, "was interrupted")
			if n := pendingCount(t, b); n != tc.wantPending {
				t.Errorf("%d pending, want %d", n, tc.wantPending)
			}
			if n := turns(t, b); n != 2 {
				t.Errorf("branch has %d turns, want 2", n)
			}
			// Opening the conversation offers a turn that was put off again.
			hs.press("enter")
			if tc.wantPending > 0 {
				assertContains(t, hs.screen(), offer)
			} else {
				assertLacks(t, hs.screen(), "was interrupted")
			}
		})
	}
}

func TestResumePromptStale(t *testing.T) {
	b, _ := interrupted(t)
	if _, err := b.Undo(context.Background(), "c1", "main", 1); err != nil {
		t.Fatal(err)
	}
	hs := newHarness(t, b, 120, 30)
	s := hs.screen()
	assertContains(t, s, "the branch has moved since: [d]iscard / [l]ater", "d discard · l later")
	assertLacks(t, s, "[r]esume")
	hs.press("r")
	assertContains(t, hs.screen(), "can only be discarded", "was interrupted")
	if n := pendingCount(t, b); n != 1 {
		t.Fatalf("%d pending after a refused resume", n)
	}
	hs.press("d")
	assertLacks(t, hs.screen(), "was interrupted")
	if n := pendingCount(t, b); n != 0 {
		t.Errorf("%d pending after discard", n)
	}
}

func TestResumeOfferedWhenConversationOpens(t *testing.T) {
	hs, b := open(t, 120, 30, 1)
	assertLacks(t, hs.screen(), "was interrupted")
	if _, err := b.AddPending("c1", "main", sig.NewMap("question", "and now?"), 0); err != nil {
		t.Fatal(err)
	}
	hs.press("esc", "L", "enter")
	s := hs.screen()
	assertContains(t, s, "Turn 1 on branch main was interrupted (0 of 2 calls done)", "and now?")
	hs.press("r")
	s = hs.screen()
	assertContains(t, s, "echo: and now?", "turn recorded on main")
	if !strings.Contains(s, "#1 you") {
		t.Errorf("the resumed turn is not shown as turn 1:\n%s", s)
	}
}

func TestNewTurnSupersedesInterrupted(t *testing.T) {
	b, _ := interrupted(t)
	hs := newHarness(t, b, 120, 30)
	hs.press("l", "enter") // later, then open the conversation: offered again
	assertContains(t, hs.screen(), offer)
	hs.press("l")
	hs.typeText("a new question")
	hs.press("enter")
	assertContains(t, hs.screen(), "echo: a new question", "turn recorded on main")
	if n := pendingCount(t, b); n != 0 {
		t.Errorf("%d pending after a new turn on the branch", n)
	}
}
