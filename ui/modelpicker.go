package ui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
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

// ModelPicker is the model picker: the server's models, filtered by what is typed, one
// chosen with the send key. It is a self-contained component: the root model routes keys
// and its own result message to it while it is active, and draws it into the body. Its
// keys are the workbench's (KeyMap, rebindable in [keys]) in a binding table, as every
// component's; the keys of that table that type something stay typed into the filter's
// text field, whose own editing keys erase.
type ModelPicker struct {
	choice   ModelChoice
	keys     KeyMap
	styles   themes.Styles
	filter   textinput.Model
	shown    []string // the models matching the filter
	sel      int      // index into shown
	top      int      // first row drawn
	w, h     int
	active   bool
	choosing bool
	err      error
}

// NewModelPicker opens a picker on the choice, with its current model selected.
func NewModelPicker(c ModelChoice, keys KeyMap) *ModelPicker {
	p := &ModelPicker{choice: c, keys: keys, filter: textinput.New(), active: true, w: 80, h: 20}
	p.filter.Prompt = ""
	steady(&p.filter)
	p.filter.Focus()
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
	p.filter.SetWidth(max(w-10, 1))
}

// SetStyles follows the workbench's theme.
func (p *ModelPicker) SetStyles(s themes.Styles) {
	if p != nil {
		p.styles = s
	}
}

// bindings is the picker's key table (dispatch and footer). Only keys that type nothing
// move the selection: a letter bound to up (k) filters, as it would in any text field.
func (p *ModelPicker) bindings() []binding {
	k := p.keys
	return []binding{
		bind(untyped("previous", k.Up, k.HistoryPrev), "previous", true, do(func() { p.move(-1) })),
		bind(untyped("next", k.Down, k.HistoryNext), "next", true, do(func() { p.move(1) })),
		bind(k.Send, "use this model", true, p.choose),
		bind(k.Cancel, "keep the current", true, do(func() { p.active = false })),
	}
}

// untyped is a binding of the keys of bs that type nothing (arrows, ctrl+…), for a
// component where text is typed.
func untyped(desc string, bs ...key.Binding) key.Binding {
	var keys []string
	for _, b := range bs {
		keys = append(keys, nonPrintable(b.Keys())...)
	}
	if len(keys) == 0 {
		return key.NewBinding(key.WithDisabled())
	}
	return key.NewBinding(key.WithKeys(keys...), key.WithHelp(keys[0], desc))
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
		if cmd, ok := dispatch(msg, p.bindings()); ok {
			return cmd
		}
		before := p.filter.Value()
		var cmd tea.Cmd
		p.filter, cmd = p.filter.Update(msg)
		if p.filter.Value() != before {
			p.refilter()
		}
		return cmd
	}
	return nil
}

// choose switches to the selected model (from a command), or closes on the current one.
func (p *ModelPicker) choose() tea.Cmd {
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
	f := strings.ToLower(p.filter.Value())
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
		fit(" type to filter: "+p.filter.View(), p.w),
	}
	footer := []string{
		s.Muted.Render(fit(" next time, pin one: --model NAME or SESSIONBENCH_MODEL=NAME", p.w)),
		fit(hints(hintsOf(p.bindings())...), p.w),
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
