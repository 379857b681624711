package ui_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/sessionbench/sessionbench/core/trace"
)

// Every frame must be exactly the terminal's size: no line wider, no missing lines.
func TestFrameSizeHonoured(t *testing.T) {
	sizes := []struct{ w, h int }{{60, 20}, {80, 24}, {100, 30}, {120, 40}, {200, 50}, {59, 20}, {60, 19}, {20, 5}}
	hs, _ := open(t, 80, 24, 30)
	for _, focus := range [][]string{nil, {"tab"}, {"tab", "tab"}, {"tab", "tab", "tab"}} {
		hs.press(focus...)
		for _, s := range sizes {
			hs.send(tea.WindowSizeMsg{Width: s.w, Height: s.h})
			hs.settle()
			lines := strings.Split(hs.raw(), "\n")
			if len(lines) != s.h {
				t.Errorf("%dx%d focus %v: %d lines", s.w, s.h, focus, len(lines))
			}
			for i, l := range lines {
				if w := ansi.StringWidth(l); w != s.w {
					t.Errorf("%dx%d focus %v: line %d is %d wide: %q", s.w, s.h, focus, i, w, ansi.Strip(l))
					break
				}
			}
		}
	}
}

func TestTooSmallMessage(t *testing.T) {
	hs, _ := open(t, 59, 30, 1)
	assertContains(t, hs.screen(), "terminal too small: 59x30", "at least 60x20")
	hs.send(tea.WindowSizeMsg{Width: 60, Height: 20})
	assertLacks(t, hs.screen(), "too small")
}

func TestGoldenScreens(t *testing.T) {
	cases := []struct {
		name string
		w, h int
		keys []string
	}{
		{"main_80x24", 80, 24, nil},
		{"main_60x20", 60, 20, nil},
		{"wide_140x36", 140, 36, nil},
		{"tree_focused_80x24", 80, 24, []string{"esc", "enter"}},
		{"help_100x30", 100, 30, []string{"esc", "?"}},
		{"branches_100x30", 100, 30, []string{"esc", "b"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hs, _ := open(t, c.w, c.h, 3)
			hs.press(c.keys...)
			golden(t, c.name, hs.screen())
		})
	}
}

func TestSendStreamsAndRecords(t *testing.T) {
	hs, r := openReal(t, 100, 30, "SupportAgent")
	assertContains(t, hs.screen(), "demo (offline)", "no turns yet")
	hs.typeText("How do I reset my password?")
	hs.press("enter")
	assertContains(t, hs.screen(), "#0 you", "How do I reset my password?", "choose 'Forgot password'", "turn recorded on main")
	if n := r.turns(t, "main"); n != 1 {
		t.Fatalf("the store has %d turns, want 1", n)
	}
	// the input history recalls it
	hs.press("ctrl+p")
	assertContains(t, hs.screen(), "> How do I reset my password?")
}

// Esc cancels the running turn at once; the turn is kept beside the branch as cancelled
// (out of its history, not offered for resuming), the text goes back to the editor, and
// the kept turn can be retried.
func TestEscCancelsAtOnceAndKeepsTheTurn(t *testing.T) {
	r := newReal(t, 60) // slow enough to cancel mid-answer
	r.converse(t, "SupportAgent", "cancel me")
	hs := newHarness(t, r, 100, 30)
	hs.press("enter")
	hs.typeText("The reset email never arrives")
	hs.send(keyMsg("enter"))
	hs.pump(func() bool { return strings.Contains(hs.screen(), "writing reasoning") })
	assertContains(t, hs.screen(), "esc cancels", "reasoning:")
	hs.send(keyMsg("esc"))
	assertContains(t, hs.screen(), "cancelled: the turn is kept beside the branch as cancelled")
	assertLacks(t, hs.screen(), "writing reasoning")
	hs.settle()
	if n := r.turns(t, "main"); n != 0 {
		t.Fatalf("a cancelled turn entered the branch: %d turns", n)
	}
	pending, err := r.Pending(context.Background(), "")
	if err != nil || len(pending) != 0 {
		t.Fatalf("a cancelled turn is offered for resuming: %v %v", pending, err)
	}
	// the cancelled text is back in the editor, ready to send again, and the kept turn
	// is in the transcript
	assertContains(t, hs.screen(), "> The reset email never arrives", "⊘ cancelled", "cancelled turn 0 selected")
	kept, err := r.KeptTurns(context.Background(), r.conv, "main")
	if err != nil || len(kept) != 1 || kept[0].Status != trace.StatusCancelled {
		t.Fatalf("kept: %v %+v", err, kept)
	}
	// ctrl+r (from the transcript) retries it: the turn is recorded on the branch
	hs.press("tab")
	hs.send(tea.KeyPressMsg{Code: 'r', Mod: tea.ModCtrl})
	hs.settle()
	assertContains(t, hs.screen(), "retried: the turn is recorded on main")
	if n := r.turns(t, "main"); n != 1 {
		t.Fatalf("after the retry the branch has %d turns, want 1", n)
	}
}

func TestRetryCountdownShown(t *testing.T) {
	hs, b := open(t, 100, 30, 0)
	b.RetryWait = 3 * time.Second
	hs.typeText("hello [retry]")
	hs.send(keyMsg("enter"))
	hs.pump(func() bool { return strings.Contains(hs.screen(), "retrying in") })
	assertContains(t, hs.screen(), "try 1 failed: rate limited")
	hs.send(keyMsg("esc"))
	hs.settle()
}

// An error too long for the status line is cut, but the key that shows it whole stays.
func TestLongErrorKeepsItsDetailsKey(t *testing.T) {
	for _, w := range []int{80, 160} {
		hs, _ := open(t, w, 30, 0)
		hs.typeText("boom [fail] " + strings.Repeat("and a very long question ", 8))
		hs.press("enter")
		lines := strings.Split(hs.screen(), "\n")
		status := strings.TrimRight(lines[len(lines)-2], " ")
		if !strings.HasPrefix(strings.TrimSpace(status), "✗ turn 0 failed") || !strings.HasSuffix(status, "(E: details)") {
			t.Errorf("at %d columns the status line is %q: want the error, cut, then its details key", w, status)
		}
	}
}

func TestErrorShownWithoutBlocking(t *testing.T) {
	hs, _ := open(t, 100, 30, 0)
	hs.typeText("boom [fail]")
	hs.press("enter")
	s := hs.screen()
	// the failed turn is kept and selected: its reason, its calls, what can be done
	assertContains(t, s, "✗ turn 0 failed in respond · kept: ctrl+r retries", "(E: details)", "✗ failed · 2 calls kept",
		"failed call: respond", "failed turn 0 selected")
	// the failed text is back in the editor, which still works; E (from a pane) opens the detail
	assertContains(t, s, "> boom [fail]")
	hs.typeText(" again")
	assertContains(t, hs.screen(), "> boom [fail] again")
	hs.press("esc", "E")
	assertContains(t, hs.screen(), "errors (newest first)", "no [[ ## reply ## ]] field")
}

// Undo, redo (with the redo count in the pane's title), fork and edit, against the real
// backend; "nothing to undo" and "nothing to redo" are said, not errors.
func TestUndoRedoForkEdit(t *testing.T) {
	hs, r := openReal(t, 120, 36, "SupportAgent", "I can't log in", "The reset email never arrives", "It's in my spam folder")
	hs.press("esc", "u")
	assertContains(t, hs.screen(), "undid 1 turn on main (with its 2 inner calls) · r redoes", "· 1 to redo")
	if n := r.turns(t, "main"); n != 2 {
		t.Fatalf("after undo main has %d turns", n)
	}
	hs.press("r")
	assertContains(t, hs.screen(), "redid 1 turn on main", "3 turns")
	assertLacks(t, hs.screen(), "to redo")
	hs.press("r")
	assertContains(t, hs.screen(), "nothing to redo on main")
	assertLacks(t, hs.screen(), "✗")
	if n := r.turns(t, "main"); n != 3 {
		t.Fatalf("after redo main has %d turns", n)
	}
	// select turn 1 and fork there: a second pane opens on fork-1
	hs.press("up", "f")
	assertContains(t, hs.screen(), "forked fork-1 at turn 1", "fork-1 ·")
	if n := r.turns(t, "fork-1"); n != 2 {
		t.Fatalf("fork-1 has %d turns, want 2", n)
	}
	// edit-and-resubmit turn 0 of fork-1 as a sibling branch
	hs.press("g", "e")
	assertContains(t, hs.screen(), "editing turn 0", "> I can't log in")
	hs.typeText(" at all")
	hs.press("enter")
	assertContains(t, hs.screen(), "edit-1", "I can't log in at all")
	if n := r.turns(t, "edit-1"); n != 1 {
		t.Fatalf("edit-1 has %d turns, want 1", n)
	}
	// undo everything on edit-1 (its pane has the focus): an empty branch has nothing
	// to undo
	hs.press("u")
	hs.press("u")
	assertContains(t, hs.screen(), "nothing to undo on edit-1")
	assertLacks(t, hs.screen(), "✗")
}

// The call tree of a turn with nested calls (ResearchAgent: a research module holding
// two queries and a summary): fold, unfold, and a call's detail.
func TestCallTreeExpandCollapseAndDetail(t *testing.T) {
	hs, _ := openReal(t, 120, 40, "ResearchAgent", "How long do refunds take?")
	hs.press("esc", "enter") // focus the tree of the selected (last) turn
	assertContains(t, hs.screen(), "▾ research", "research.query", "research.summarize", "answer")
	hs.press("-")
	assertLacks(t, hs.screen(), "research.query")
	hs.press("+")
	assertContains(t, hs.screen(), "research.summarize")
	hs.press("g", "down", "down", "enter") // plan, research, research.query
	assertContains(t, hs.screen(), "call research.query", "Exact request (", "Raw completion")
	// the chat's page holds calls without requests: the detail reads the turn whole
	assertLacks(t, hs.screen(), "Exact request (0 messages)")
	hs.press("esc")
	assertLacks(t, hs.screen(), "Exact request")
}

// The wire pane follows the selected call and cycles the strategies; typing shows the
// dry run of the text being typed.
func TestWireStrategiesAndDryRun(t *testing.T) {
	hs, _ := openReal(t, 140, 60, "SupportAgent", "I can't log in", "The reset email never arrives")
	hs.press("esc", "enter", "down") // the tree: respond
	assertContains(t, hs.screen(), "wire · actual", "actual · respond", "── system ·")
	hs.press("s", "s")
	assertContains(t, hs.screen(), "wire · 2 outer, signature-filtered", "2 outer, signature-filtered · respond", "[[ ## reasoning ## ]]")
	hs.press("s", "s", "s", "s") // 3, 4, 5, actual
	assertContains(t, hs.screen(), "wire · actual")
	// typing shows the dry run of the text being typed
	hs.press("esc") // the editor
	hs.typeText("It's in my spam folder")
	time.Sleep(300 * time.Millisecond)
	hs.settle()
	assertContains(t, hs.screen(), "dry run", "It's in my spam folder")
}

func TestConversationListNewRenameDeleteFilter(t *testing.T) {
	r := newReal(t, 0)
	ctx := context.Background()
	for _, title := range []string{"alpha", "beta", "gamma"} {
		r.converse(t, "SupportAgent", title)
	}
	hs := newHarness(t, r, 100, 30)
	assertContains(t, hs.screen(), "conversations (3)", "alpha", "beta", "gamma", "? help")
	// ? works in the list too: the list's own keys
	hs.press("?")
	assertContains(t, hs.screen(), "help", "new", "rename", "delete", "filter")
	hs.press("esc")
	hs.press("/")
	hs.typeText("bet")
	hs.press("enter")
	assertContains(t, hs.screen(), "conversations (1)", "beta")
	assertLacks(t, hs.screen(), "gamma")
	hs.press("r")
	hs.typeText("2")
	hs.press("enter")
	titles := func() []string {
		list, err := r.Conversations(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range list {
			out = append(out, c.Title)
		}
		return out
	}
	if got := fmt.Sprint(titles()); !strings.Contains(got, "beta2") {
		t.Fatalf("rename: titles %v", got)
	}
	hs.press("d", "n") // any key but y cancels
	if got := titles(); len(got) != 3 {
		t.Fatalf("delete without confirmation removed a conversation: %v", got)
	}
	hs.press("d", "y")
	if got := titles(); len(got) != 2 || strings.Contains(fmt.Sprint(got), "beta2") {
		t.Fatalf("delete: %v", got)
	}
	hs.press("/", "esc")
	hs.press("n")
	assertContains(t, hs.screen(), "title: > untitled") // the placeholder, shown whole
	hs.typeText("billing dispute")                      // the title field starts empty: typing is the title
	hs.press("enter")
	assertContains(t, hs.screen(), "billing dispute", "no turns yet")
	assertLacks(t, hs.screen(), "untitledbilling")
}

func TestNarrowShowsOnePaneAtATime(t *testing.T) {
	hs, _ := openReal(t, 80, 24, "SupportAgent", "I can't log in", "The reset email never arrives")
	assertContains(t, hs.screen(), "main ·")
	assertLacks(t, hs.screen(), " calls · turn")
	hs.press("esc", "tab")
	assertContains(t, hs.screen(), "calls · turn 1")
	assertLacks(t, hs.screen(), "main ·")
}

func TestKeysRebind(t *testing.T) {
	k := defaultKeysWith(t, map[string][]string{"fork": {"F"}})
	if got := k.Fork.Keys(); fmt.Sprint(got) != "[F]" {
		t.Fatalf("fork keys %v", got)
	}
	if err := k.Rebind(map[string][]string{"frobnicate": {"x"}}); err == nil || !strings.Contains(err.Error(), "unknown action \"frobnicate\"") {
		t.Fatalf("unknown action: %v", err)
	}
}

// up/down step through sent inputs like a shell, but never replace typed text.
func TestArrowKeysRecallInputs(t *testing.T) {
	hs, _ := openReal(t, 100, 30, "SupportAgent")
	for _, q := range []string{"first question", "second question"} {
		hs.typeText(q)
		hs.press("enter")
	}
	steps := []struct {
		key, want string
	}{
		{"up", "> second question"},
		{"up", "> first question"},
		{"down", "> second question"},
	}
	for _, st := range steps {
		hs.press(st.key)
		assertContains(t, hs.screen(), st.want)
	}
	hs.press("down") // past the newest entry: an empty editor again
	assertLacks(t, hs.screen(), "> second question")
	hs.typeText("typed")
	hs.press("up")
	assertContains(t, hs.screen(), "> typed")
	assertLacks(t, hs.screen(), "> second question")
}
