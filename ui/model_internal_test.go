package ui

import (
	"context"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/themes"
	"github.com/sessionbench/sessionbench/ui/sessions"
)

// Without colour (NO_COLOR gives the ASCII profile) the selection and the focused
// pane's title are drawn in reverse video, the only cue left; with colour they are not.
func TestNoColourSelectionCue(t *testing.T) {
	for _, c := range []struct {
		profile colorprofile.Profile
		reverse bool
	}{{colorprofile.ASCII, true}, {colorprofile.NoTTY, true}, {colorprofile.ANSI256, false}, {colorprofile.TrueColor, false}} {
		m := New(context.Background(), nilBackend{}, themes.Dark(), DefaultKeys())
		m.Update(tea.ColorProfileMsg{Profile: c.profile})
		if got := m.e.st.s.Selected.GetReverse(); got != c.reverse {
			t.Errorf("profile %v: selection reverse %v, want %v", c.profile, got, c.reverse)
		}
		if got := m.e.st.s.PaneTitle.GetReverse(); got != c.reverse {
			t.Errorf("profile %v: focused title reverse %v, want %v", c.profile, got, c.reverse)
		}
	}
}

// nilBackend answers only what New asks; the tests using it make no other calls.
type nilBackend struct{ Backend }

func (nilBackend) Strategies() []core.StrategyInfo { return nil }
func (nilBackend) Agents() []sessions.AgentInfo    { return nil }
func (nilBackend) ModelName() string               { return "nil" }

// The models key opens the model picker again, on the model in use.
func TestModelsKeyReopensThePicker(t *testing.T) {
	m := New(context.Background(), namedBackend{}, themes.Dark(), DefaultKeys())
	m.Update(tea.WindowSizeMsg{Width: 90, Height: 24})
	m.OfferModels(ModelChoice{Models: []string{"a-model", "b-model"}, Current: "a-model",
		Choose: func(string) error { return nil }})
	m.Update(tea.KeyPressMsg{Code: tea.KeyDown})
	_, cmd := m.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
	for _, msg := range drain(cmd) {
		if _, ok := msg.(modelChosenMsg); ok {
			m.Update(msg)
		}
	}
	if m.picker.Active() {
		t.Fatal("the picker is still up after a pick")
	}
	m.setFocus(focusChat, 0) // the key works where letters are commands
	m.Update(tea.KeyPressMsg{Code: 'm', Text: "m"})
	if s := stripANSI(m.render()); !m.picker.Active() || !strings.Contains(s, "▸ b-model") {
		t.Fatalf("m did not reopen the picker on b-model:\n%s", s)
	}
}
