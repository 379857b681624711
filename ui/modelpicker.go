package ui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/sessionbench/sessionbench/themes"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// ModelChoice is what the workbench offers when no model was named and the server lists
// several: the workbench opens on the model picker with Current selected.
type ModelChoice struct {
	Models  []string // as the server lists them
	Current string   // the model taken so far
	Server  string   // where the list came from, e.g. "http://127.0.0.1:6556/v1"
	// Choose switches the backend to a model. The picker calls it from a command.
	Choose func(name string) error
}

// modelChosenMsg reports Choose's outcome back to the picker.
type modelChosenMsg struct {
	name string
	err  error
}

// pickerKeys are the picker's bindings; they drive both its dispatch and its help line.
type pickerKeys struct {
	Up, Down, Choose, Keep, Erase key.Binding
}

func (k pickerKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Up, k.Down, k.Choose, k.Keep, k.Erase}
}

func (k pickerKeys) FullHelp() [][]key.Binding { return [][]key.Binding{k.ShortHelp()} }

func defaultPickerKeys() pickerKeys {
	return pickerKeys{
		Up:     key.NewBinding(key.WithKeys("up", "ctrl+p"), key.WithHelp("↑", "up")),
		Down:   key.NewBinding(key.WithKeys("down", "ctrl+n"), key.WithHelp("↓", "down")),
		Choose: key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "use this model")),
		Keep:   key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "keep the current one")),
		Erase:  key.NewBinding(key.WithKeys("backspace"), key.WithHelp("type", "filter")),
	}
}

// ModelPicker is the model picker: the server's models, filtered by what is typed, one
// chosen with enter. It is a self-contained component: the root model routes keys and
// its own result message to it while it is active, and draws it into the body.
type ModelPicker struct {
	choice   ModelChoice
	keys     pickerKeys
	help     help.Model
	styles   themes.Styles
	filter   string
	shown    []string // the models matching the filter
	sel      int      // index into shown
	top      int      // first row drawn
	w, h     int
	active   bool
	choosing bool
	err      error
}

// NewModelPicker opens a picker on the choice, with its current model selected.
func NewModelPicker(c ModelChoice) *ModelPicker {
	p := &ModelPicker{choice: c, keys: defaultPickerKeys(), help: help.New(), active: true, w: 80, h: 20}
	p.refilter()
	return p
}

// Active reports whether the picker is up (a nil picker never is).
func (p *ModelPicker) Active() bool { return p != nil && p.active }

// SetSize is the room the picker draws into.
func (p *ModelPicker) SetSize(w, h int) {
	if p == nil {
		return
	}
	p.w, p.h = w, h
	p.help.SetWidth(w)
}

// SetStyles follows the workbench's theme.
func (p *ModelPicker) SetStyles(s themes.Styles) {
	if p != nil {
		p.styles = s
	}
}

// Update handles a key while the picker is active and the outcome of a choice.
func (p *ModelPicker) Update(msg tea.Msg) tea.Cmd {
	if p == nil {
		return nil
	}
	switch msg := msg.(type) {
	case modelChosenMsg:
		p.choosing = false
		if msg.err != nil {
			p.err = msg.err
			return nil
		}
		p.choice.Current, p.active, p.err = msg.name, false, nil
	case tea.KeyPressMsg:
		if !p.active || p.choosing {
			return nil
		}
		switch {
		case key.Matches(msg, p.keys.Up):
			p.move(-1)
		case key.Matches(msg, p.keys.Down):
			p.move(1)
		case key.Matches(msg, p.keys.Keep):
			p.active = false
		case key.Matches(msg, p.keys.Choose):
			if len(p.shown) == 0 {
				return nil
			}
			name := p.shown[p.sel]
			if name == p.choice.Current || p.choice.Choose == nil {
				p.active = false
				return nil
			}
			p.choosing = true
			choose := p.choice.Choose
			return func() tea.Msg { return modelChosenMsg{name: name, err: choose(name)} }
		case key.Matches(msg, p.keys.Erase):
			if r := []rune(p.filter); len(r) > 0 {
				p.filter = string(r[:len(r)-1])
				p.refilter()
			}
		default:
			if t := msg.Text; t != "" && !strings.ContainsAny(t, "\n\r\t") {
				p.filter += t
				p.refilter()
			}
		}
	}
	return nil
}

// Chosen is the model in use once the picker closed.
func (p *ModelPicker) Chosen() string { return p.choice.Current }

func (p *ModelPicker) move(d int) {
	if len(p.shown) > 0 {
		p.sel = (p.sel + d + len(p.shown)) % len(p.shown)
	}
}

// refilter keeps the models containing the filter (case-insensitively), the current
// model selected when it is among them.
func (p *ModelPicker) refilter() {
	f := strings.ToLower(p.filter)
	p.shown = p.shown[:0]
	p.sel = 0
	for _, m := range p.choice.Models {
		if strings.Contains(strings.ToLower(m), f) {
			if m == p.choice.Current {
				p.sel = len(p.shown)
			}
			p.shown = append(p.shown, m)
		}
	}
}

// View draws the picker into its size: a title, the filter, the list (scrolled to keep
// the selection visible), a pinning hint and the help line.
func (p *ModelPicker) View() string {
	if !p.Active() {
		return ""
	}
	s := p.styles
	lines := []string{
		s.Title.Render(fit(fmt.Sprintf(" Choose a model · %s lists %d", termtext.OneLine(p.choice.Server), len(p.choice.Models)), p.w)),
		fit(" filter: "+termtext.Sanitize(termtext.OneLine(p.filter))+"▏", p.w),
	}
	footer := []string{
		s.Muted.Render(fit(" next time, pin one: --model NAME or SESSIONBENCH_MODEL=NAME", p.w)),
		fit(" "+p.help.ShortHelpView(p.keys.ShortHelp()), p.w),
	}
	switch {
	case p.choosing:
		footer = append([]string{s.Muted.Render(fit(" switching…", p.w))}, footer...)
	case p.err != nil:
		footer = append([]string{s.Error.Render(fit(" ✗ "+termtext.OneLine(p.err.Error()), p.w))}, footer...)
	}
	rows := max(p.h-len(lines)-len(footer), 1)
	if p.sel < p.top {
		p.top = p.sel
	}
	if p.sel >= p.top+rows {
		p.top = p.sel - rows + 1
	}
	p.top = max(0, min(p.top, max(len(p.shown)-rows, 0)))
	if len(p.shown) == 0 {
		lines = append(lines, s.Muted.Render(fit("   no model matches", p.w)))
	}
	for i := p.top; i < len(p.shown) && i < p.top+rows; i++ {
		name := "   " + termtext.OneLine(p.shown[i])
		if p.shown[i] == p.choice.Current {
			name += s.Muted.Render("  (current)")
		}
		if i == p.sel {
			lines = append(lines, s.Selected.Render(fit(" ▸ "+termtext.OneLine(p.shown[i]), p.w)))
			continue
		}
		lines = append(lines, fit(name, p.w))
	}
	return strings.Join(append(fitBlock(lines, p.w, p.h-len(footer)), footer...), "\n")
}
