package ui_test

import (
	"context"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/ui/termtext/termtexttest"
	"github.com/sessionbench/sessionbench/ui/uitest"
)

// Model text with escape sequences, shown everywhere the workbench draws it (transcript,
// call tree, call detail, wire pane, navigator, conversation list), never reaches the
// terminal: the only sequences in the frame are the workbench's own colours (SGR).
func TestHostileModelTextNeverReachesOutput(t *testing.T) {
	payload := termtexttest.Payload
	b := uitest.New()
	ctx := context.Background()
	if _, err := b.NewConversation(ctx, "support", "title "+payload); err != nil {
		t.Fatal(err)
	}
	call := uitest.CallTree("t0", 3)
	call.Path = "agent." + payload
	call.Error = "failed: " + payload
	call.Completion = payload
	call.Outputs = sig.NewMap("answer", payload)
	call.Messages = lm.MessagesOf([]lm.Message{{Role: "system", Content: payload}, {Role: "user" + payload, Content: payload}})
	call.History = sig.History{Messages: []*sig.Map{sig.NewMap("question", payload)}}
	turn := &trace.Turn{Inputs: sig.NewMap("question", "q "+payload), Outputs: sig.NewMap("reply", "# heading "+payload+"\n\n- item "+payload),
		Calls: []*trace.Call{call}}
	if _, err := b.AddTurn("c1", "main", turn); err != nil {
		t.Fatal(err)
	}
	hs := newHarness(t, b, 140, 60)
	hs.press("enter")
	screens := []string{hs.raw()}
	for _, keys := range [][]string{{"esc", "enter"}, {"enter"}, {"esc", "esc", "s", "c"}, {"esc", "b"}, {"esc", "L"}} {
		hs.press(keys...)
		screens = append(screens, hs.raw())
	}
	hs.press("esc", "esc", "esc", "E")
	screens = append(screens, hs.raw())
	for i, s := range screens {
		for _, p := range termtexttest.Problems(s, true) {
			t.Errorf("screen %d: %s", i, p)
		}
	}
	if !strings.Contains(ansi.Strip(screens[0]), "␛]52;c;") {
		t.Errorf("the hostile text should stay visible in its harmless form:\n%s", ansi.Strip(screens[0]))
	}
}
