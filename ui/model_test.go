package ui_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/sessionbench/sessionbench/ui/uitest"
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
		{"wire_compare_140x36", 140, 36, []string{"esc", "c"}},
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
	hs, b := open(t, 100, 30, 0)
	assertContains(t, hs.screen(), "memory (in-process test backend)", "no turns yet")
	hs.typeText("where is my invoice?")
	hs.press("enter")
	s := hs.screen()
	assertContains(t, s, "#1 you", "where is my invoice?", "echo: where is my invoice?", "turn recorded on main")
	pg, err := b.LoadTurns(context.Background(), "c1", "main", 0, 10)
	if err != nil || pg.Total != 1 {
		t.Fatalf("backend has %d turns (%v), want 1", pg.Total, err)
	}
	// the input history recalls it
	hs.press("ctrl+p")
	assertContains(t, hs.screen(), "> where is my invoice?")
}

func TestEscCancelsAtOnceAndRecordsNothing(t *testing.T) {
	hs, b := open(t, 100, 30, 0)
	b.Delay = 200 * time.Millisecond
	hs.typeText("one two three four five six")
	hs.send(keyMsg("enter"))
	hs.pump(func() bool { return strings.Contains(hs.screen(), "writing reply") })
	assertContains(t, hs.screen(), "esc cancels")
	hs.send(keyMsg("esc"))
	assertContains(t, hs.screen(), "cancelled: no turn recorded")
	assertLacks(t, hs.screen(), "writing reply")
	hs.settle()
	pg, _ := b.LoadTurns(context.Background(), "c1", "main", 0, 10)
	if pg.Total != 0 {
		t.Fatalf("a cancelled turn was recorded: %d turns", pg.Total)
	}
	// the cancelled text is back in the editor, ready to send again
	assertContains(t, hs.screen(), "> one two three four five six")
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

func TestErrorShownWithoutBlocking(t *testing.T) {
	hs, _ := open(t, 100, 30, 0)
	hs.typeText("boom [fail]")
	hs.press("enter")
	s := hs.screen()
	assertContains(t, s, "✗ turn failed", "(E: details)")
	// the failed text is back in the editor, which still works; E (from a pane) opens the detail
	assertContains(t, s, "> boom [fail]")
	hs.typeText(" again")
	assertContains(t, hs.screen(), "> boom [fail] again")
	hs.press("esc", "E")
	assertContains(t, hs.screen(), "errors (newest first)", "no [[ ## reply ## ]] field")
}

func TestUndoRedoForkEdit(t *testing.T) {
	hs, b := open(t, 120, 36, 3)
	ctx := context.Background()
	hs.press("esc", "u")
	assertContains(t, hs.screen(), "undid 1 turn(s) on main")
	if pg, _ := b.LoadTurns(ctx, "c1", "main", 0, 10); pg.Total != 2 {
		t.Fatalf("after undo main has %d turns", pg.Total)
	}
	hs.press("U")
	assertContains(t, hs.screen(), "cascading to 3 inner predictor turn(s)")
	hs.press("r", "r")
	if pg, _ := b.LoadTurns(ctx, "c1", "main", 0, 10); pg.Total != 3 {
		t.Fatalf("after redo main has %d turns", pg.Total)
	}
	// select turn 2 and fork there: a second pane opens on fork-1
	hs.press("up", "f")
	assertContains(t, hs.screen(), "forked fork-1 at turn 2", "fork-1 ·")
	if pg, _ := b.LoadTurns(ctx, "c1", "fork-1", 0, 10); pg.Total != 2 {
		t.Fatalf("fork-1 has %d turns, want 2", pg.Total)
	}
	// edit-and-resubmit turn 1 of fork-1 as a sibling branch
	hs.press("g", "e")
	assertContains(t, hs.screen(), "editing turn 1")
	hs.typeText(" (edited)")
	hs.press("enter")
	assertContains(t, hs.screen(), "edit-1", "echo: question number 1 (edited)")
	if pg, _ := b.LoadTurns(ctx, "c1", "edit-1", 0, 10); pg.Total != 1 {
		t.Fatalf("edit-1 has %d turns, want 1", pg.Total)
	}
}

func TestCallTreeExpandCollapseAndDetail(t *testing.T) {
	hs, _ := open(t, 120, 40, 1)
	hs.press("esc", "enter") // focus the tree of the selected (last) turn
	s := hs.screen()
	assertContains(t, s, "└── ▾ agent.step0", "agent.step1", "3 calls")
	hs.press("-")
	assertLacks(t, hs.screen(), "agent.step1")
	hs.press("+")
	assertContains(t, hs.screen(), "agent.step2")
	hs.press("down", "enter")
	assertContains(t, hs.screen(), "call agent.step1", "Exact request (2 messages)", "Be brief.")
	hs.press("esc")
	assertLacks(t, hs.screen(), "Exact request")
}

func TestWireStrategiesAndDryRun(t *testing.T) {
	hs, _ := open(t, 140, 60, 0)
	for _, q := range []string{"first", "second"} {
		hs.typeText(q)
		hs.press("enter")
	}
	hs.press("esc")
	assertContains(t, hs.screen(), "wire · actual", "── system ·")
	hs.press("s", "s")
	assertContains(t, hs.screen(), "wire · 2 inherit", "⚠ history entry renders None")
	hs.press("c")
	assertContains(t, hs.screen(), "wire · 1 keep vs 2 inherit", "+reply: None")
	// typing shows the dry run of the text being typed
	hs.press("s", "esc")
	hs.typeText("draft text")
	time.Sleep(300 * time.Millisecond)
	hs.settle()
	assertContains(t, hs.screen(), "dry run", "question: draft text")
}

func TestConversationListNewRenameDeleteFilter(t *testing.T) {
	b := uitest.New()
	ctx := context.Background()
	for _, title := range []string{"alpha", "beta", "gamma"} {
		if _, err := b.NewConversation(ctx, "support", title); err != nil {
			t.Fatal(err)
		}
	}
	hs := newHarness(t, b, 100, 30)
	assertContains(t, hs.screen(), "conversations (3)", "alpha", "beta", "gamma")
	hs.press("/")
	hs.typeText("bet")
	hs.press("enter")
	assertContains(t, hs.screen(), "conversations (1)", "beta")
	assertLacks(t, hs.screen(), "gamma")
	hs.press("r")
	hs.typeText("2")
	hs.press("enter")
	list, _ := b.Conversations(ctx)
	if list[1].Title != "beta2" {
		t.Fatalf("rename: titles %v", list)
	}
	hs.press("d", "n") // any key but y cancels
	if list, _ := b.Conversations(ctx); len(list) != 3 {
		t.Fatalf("delete without confirmation removed a conversation")
	}
	hs.press("d", "y")
	if list, _ := b.Conversations(ctx); len(list) != 2 {
		t.Fatalf("delete: %d conversations left", len(list))
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
	hs, _ := open(t, 80, 24, 2)
	assertContains(t, hs.screen(), "main ·")
	assertLacks(t, hs.screen(), " calls · turn")
	hs.press("esc", "tab")
	assertContains(t, hs.screen(), "calls · turn 2")
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
	hs, _ := open(t, 100, 30, 0)
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
