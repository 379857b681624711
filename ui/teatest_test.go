package ui_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"
	"github.com/sessionbench/sessionbench/themes"
	"github.com/sessionbench/sessionbench/ui"
	"github.com/sessionbench/sessionbench/ui/uitest"
)

// The real Bubble Tea runtime (teatest) in an ASCII colour profile: a first conversation
// is created, a question is typed and sent, the streamed answer appears, ctrl+c quits.
func TestTeatestSendAndQuit(t *testing.T) {
	th, _ := themes.Builtin("dark")
	m := ui.New(context.Background(), uitest.New(), th, ui.DefaultKeys())
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(100, 30),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.ASCII)))
	waitScreen := func(want string) {
		t.Helper()
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(want)) },
			teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
	}
	// the renderer writes only the cells that changed, so a phrase whose first cells
	// match the previous frame would arrive cut: wait for one that cannot
	waitScreen("type below and press enter")
	tm.Type("hello there")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	waitScreen("turn recorded on main")
	tm.Send(tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl})
	final := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*ui.Model)
	golden(t, "teatest_final_100x30", ansi.Strip(final.View().Content))
	out := tm.FinalOutput(t)
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(out); err != nil {
		t.Fatal(err)
	}
	// the ASCII profile writes no colour at all
	if bytes.Contains(buf.Bytes(), []byte("\x1b[38;")) || bytes.Contains(buf.Bytes(), []byte("\x1b[48;")) {
		t.Errorf("colour sequences in ASCII profile output")
	}
}
