package ui

import (
	"context"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
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

func (nilBackend) Strategies() []sessions.Strategy { return nil }
func (nilBackend) Agents() []sessions.AgentInfo    { return nil }
func (nilBackend) ModelName() string               { return "nil" }
