package ui

import (
	"context"
	"errors"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/sessionbench/sessionbench/themes"
)

func pickerKey(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "ctrl+o", "ctrl+d":
		return tea.KeyPressMsg{Code: rune(s[len(s)-1]), Mod: tea.ModCtrl}
	}
	r := []rune(s)[0]
	return tea.KeyPressMsg{Code: r, Text: s}
}

func TestModelPicker(t *testing.T) {
	models := []string{"text-embedding-3-small", "llama-3.1-8b", "qwen2.5-7b", "qwen2.5-72b"}
	cases := []struct {
		name       string
		keys       []string
		chooseErr  error
		chosen     string // what Choose was called with ("" when not called)
		active     bool   // the picker is still up
		current    string
		screenHas  []string
		screenLack []string
		rebind     map[string][]string // the [keys] table
	}{
		{name: "opens on the current model", active: true, current: "llama-3.1-8b",
			screenHas: []string{"Choose a model · http://local/v1 lists 4", "▸ llama-3.1-8b", "qwen2.5-7b", "--model NAME", "enter use this model"}},
		{name: "down and enter", keys: []string{"down", "enter"}, chosen: "qwen2.5-7b", current: "qwen2.5-7b"},
		{name: "up wraps round", keys: []string{"up", "up", "enter"}, chosen: "qwen2.5-72b", current: "qwen2.5-72b"},
		{name: "typing filters", keys: []string{"7", "2"}, active: true, current: "llama-3.1-8b",
			screenHas: []string{"type to filter: 72", "▸ qwen2.5-72b"}, screenLack: []string{"llama-3.1-8b", "qwen2.5-7b "}},
		{name: "backspace widens the filter", keys: []string{"7", "2", "backspace", "enter"}, chosen: "qwen2.5-7b", current: "qwen2.5-7b"},
		{name: "no match", keys: []string{"z", "z", "enter"}, active: true, current: "llama-3.1-8b", screenHas: []string{"no model matches"}},
		{name: "esc keeps the current model", keys: []string{"down", "esc"}, current: "llama-3.1-8b"},
		{name: "enter on the current model", keys: []string{"enter"}, current: "llama-3.1-8b"},
		{name: "rebound keys: ctrl+o uses, ctrl+d goes down, enter is no longer send", keys: []string{"ctrl+d", "enter", "ctrl+o"},
			rebind: map[string][]string{"send": {"ctrl+o"}, "down": {"ctrl+d", "j"}}, chosen: "qwen2.5-7b", current: "qwen2.5-7b"},
		{name: "a printable key bound to a move filters", keys: []string{"j"}, rebind: map[string][]string{"send": {"ctrl+o"}, "down": {"ctrl+d", "j"}},
			active: true, current: "llama-3.1-8b", screenHas: []string{"type to filter: j", "no model matches", "ctrl+o use this model", "ctrl+d next"}},
		{name: "a failed switch stays open and says why", keys: []string{"down", "enter"}, chooseErr: errors.New("provider \"env\": no such model"),
			chosen: "qwen2.5-7b", active: true, current: "llama-3.1-8b", screenHas: []string{`✗ provider "env": no such model`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			called := ""
			keys := DefaultKeys()
			if err := keys.Rebind(tc.rebind); err != nil {
				t.Fatal(err)
			}
			p := NewModelPicker(ModelChoice{Models: models, Current: "llama-3.1-8b", Server: "http://local/v1",
				Choose: func(name string) error { called = name; return tc.chooseErr }}, keys)
			p.SetSize(80, 14)
			p.SetStyles(themes.Dark().Styles())
			for _, k := range tc.keys {
				if cmd := p.Update(pickerKey(k)); cmd != nil {
					p.Update(cmd()) // what the runtime does with the command's message
				}
			}
			if called != tc.chosen || p.Active() != tc.active || p.Chosen() != tc.current {
				t.Fatalf("Choose(%q), active %v, current %q; want Choose(%q), active %v, current %q",
					called, p.Active(), p.Chosen(), tc.chosen, tc.active, tc.current)
			}
			screen := stripANSI(p.View())
			if tc.active && len(strings.Split(screen, "\n")) != 14 {
				t.Errorf("the picker drew %d lines into 14:\n%s", len(strings.Split(screen, "\n")), screen)
			}
			for _, w := range tc.screenHas {
				if !strings.Contains(screen, w) {
					t.Errorf("screen lacks %q:\n%s", w, screen)
				}
			}
			for _, w := range tc.screenLack {
				if strings.Contains(screen, w) {
					t.Errorf("screen shows %q:\n%s", w, screen)
				}
			}
		})
	}
}

// The root model hands keys to the picker while it is up, draws it in the body and
// reports the pick in the status line; afterwards keys reach the workbench again.
func TestRootModelRoutesToThePicker(t *testing.T) {
	m := New(context.Background(), namedBackend{}, themes.Dark(), DefaultKeys())
	m.Update(tea.WindowSizeMsg{Width: 90, Height: 24})
	var picked string
	m.OfferModels(ModelChoice{Models: []string{"a-model", "b-model"}, Current: "a-model", Server: "http://local/v1",
		Choose: func(name string) error { picked = name; return nil }})
	if s := stripANSI(m.render()); !strings.Contains(s, "Choose a model") || !strings.Contains(s, "▸ a-model") {
		t.Fatalf("the picker is not shown:\n%s", s)
	}
	quit := New(context.Background(), namedBackend{}, themes.Dark(), DefaultKeys())
	quit.OfferModels(ModelChoice{Models: []string{"a-model", "b-model"}, Current: "a-model"})
	if _, cmd := quit.Update(tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}); !quit.quitting || cmd == nil {
		t.Error("ctrl+c does not quit while the picker is up")
	}
	m.Update(pickerKey("down"))
	_, cmd := m.Update(pickerKey("enter"))
	for _, msg := range drain(cmd) {
		if _, ok := msg.(modelChosenMsg); ok {
			m.Update(msg)
		}
	}
	s := stripANSI(m.render())
	if picked != "b-model" || m.picker.Active() || strings.Contains(s, "Choose a model") ||
		!strings.Contains(s, "model b-model · pin it next time with --model b-model") {
		t.Fatalf("picked %q, picker active %v:\n%s", picked, m.picker.Active(), s)
	}
}

// drain runs a command and the commands of the batches it returns.
func drain(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	msg := cmd()
	if b, ok := msg.(tea.BatchMsg); ok {
		var out []tea.Msg
		for _, c := range b {
			out = append(out, drain(c)...)
		}
		return out
	}
	return []tea.Msg{msg}
}

// namedBackend is nilBackend with a model name, all the header asks for.
type namedBackend struct{ nilBackend }

func (namedBackend) ModelName() string { return "a-model" }
