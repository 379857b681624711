package ui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// inputPane is the multi-line editor that fills the agent's input fields: one textarea
// for a single field, a small form (one textarea per field) for several. It keeps a
// history of sent inputs, recalled with ctrl+p / ctrl+n.
type inputPane struct {
	fields  []sig.Field
	areas   []textarea.Model
	cur     int
	history []*sig.Map
	hpos    int // == len(history) when not browsing

	editTurn string // TurnID being edited (edit-and-resubmit); "" for a new turn
	version  int    // bumped on every change, to debounce the dry run
}

func newInputPane(agent sessions.AgentInfo, keys KeyMap) *inputPane {
	p := &inputPane{}
	if agent.Signature != nil {
		for _, f := range agent.Signature.Inputs {
			if !f.Type.IsHistory() {
				p.fields = append(p.fields, f)
			}
		}
	}
	if len(p.fields) == 0 {
		p.fields = []sig.Field{{Name: "input"}}
	}
	for _, f := range p.fields {
		ta := textarea.New()
		ta.ShowLineNumbers = false
		ta.Prompt = "> "
		ta.Placeholder = f.Name
		if f.Desc != "" {
			ta.Placeholder = f.Name + ": " + f.Desc
		}
		ta.CharLimit = 0
		// a steady cursor: blinking would redraw twice a second and make screens
		// differ from one capture to the next
		sty := ta.Styles()
		sty.Cursor.Blink = false
		ta.SetStyles(sty)
		ta.KeyMap.InsertNewline = keys.Newline
		ta.KeyMap.LineNext = key.NewBinding(key.WithKeys("down"))
		ta.KeyMap.LinePrevious = key.NewBinding(key.WithKeys("up"))
		p.areas = append(p.areas, ta)
	}
	return p
}

// height is the rows the pane's body needs for body height budget bh.
func (p *inputPane) height() int {
	if len(p.areas) == 1 {
		return 3
	}
	return min(2*len(p.areas), 8)
}

func (p *inputPane) focus() tea.Cmd {
	for i := range p.areas {
		p.areas[i].Blur()
	}
	return p.areas[p.cur].Focus()
}

func (p *inputPane) blur() {
	for i := range p.areas {
		p.areas[i].Blur()
	}
}

// next moves to the next field; it reports false at the last one (focus leaves).
func (p *inputPane) next(delta int) bool {
	n := p.cur + delta
	if n < 0 || n >= len(p.areas) {
		return false
	}
	p.cur = n
	p.focus()
	return true
}

func (p *inputPane) update(msg tea.Msg) tea.Cmd {
	before := p.areas[p.cur].Value()
	var cmd tea.Cmd
	p.areas[p.cur], cmd = p.areas[p.cur].Update(msg)
	if p.areas[p.cur].Value() != before {
		p.version++
	}
	return cmd
}

// empty reports whether every field is blank.
func (p *inputPane) empty() bool {
	for _, a := range p.areas {
		if strings.TrimSpace(a.Value()) != "" {
			return false
		}
	}
	return true
}

// values reads the form. String fields are taken verbatim; other types are parsed as
// JSON (so `3`, `true`, `["a"]` work), with an error naming the field.
func (p *inputPane) values() (*sig.Map, error) {
	m := sig.NewMap()
	for i, f := range p.fields {
		text := p.areas[i].Value()
		if f.Type.IsStr() {
			m.Set(f.Name, text)
			continue
		}
		v, err := sig.DecodeJSON([]byte(text))
		if err != nil {
			return nil, fmt.Errorf("field %s (%s): %q is not a JSON value: %w", f.Name, f.Type.Name(), text, err)
		}
		m.Set(f.Name, v)
	}
	return m, nil
}

// set fills the form from values (history recall, edit-and-resubmit).
func (p *inputPane) set(m *sig.Map) {
	for i, f := range p.fields {
		v, ok := m.Get(f.Name)
		text := ""
		if ok {
			if s, isStr := v.(string); isStr {
				text = s
			} else {
				text = py.CompactJSON(v)
			}
		}
		p.areas[i].SetValue(text)
	}
	p.version++
}

func (p *inputPane) clear() {
	for i := range p.areas {
		p.areas[i].Reset()
	}
	p.cur = 0
	p.editTurn = ""
	p.version++
}

// remember adds sent inputs to the history.
func (p *inputPane) remember(m *sig.Map) {
	if n := len(p.history); n == 0 || !p.history[n-1].Equal(m) {
		p.history = append(p.history, m.Clone())
	}
	p.hpos = len(p.history)
}

// atHistoryEdge says whether up (delta -1) or down (+1) should step through the input
// history rather than move the cursor, as in a shell: only on the first (last) line of
// the field, and only while the editor is empty or shows a recalled entry unchanged, so
// typed text is never replaced by an arrow key.
func (p *inputPane) atHistoryEdge(delta int) bool {
	if len(p.history) == 0 {
		return false
	}
	a := &p.areas[p.cur]
	if delta < 0 && a.Line() != 0 || delta > 0 && a.Line() != a.LineCount()-1 {
		return false
	}
	if p.empty() {
		return delta < 0
	}
	if p.hpos >= len(p.history) {
		return false
	}
	cur, err := p.values()
	return err == nil && cur.Equal(p.history[p.hpos])
}

// recall steps through the history (delta -1 older, +1 newer).
func (p *inputPane) recall(delta int) {
	if len(p.history) == 0 {
		return
	}
	p.hpos = max(0, min(len(p.history), p.hpos+delta))
	if p.hpos == len(p.history) {
		p.set(sig.NewMap())
		return
	}
	p.set(p.history[p.hpos])
}

// view draws the form at w x h.
func (p *inputPane) view(st *stylesheet, w, h int) []string {
	if len(p.areas) == 1 {
		p.areas[0].SetWidth(w)
		p.areas[0].SetHeight(h)
		return fitBlock(strings.Split(p.areas[0].View(), "\n"), w, h)
	}
	var out []string
	labelW := 0
	for _, f := range p.fields {
		labelW = max(labelW, len(termtext.OneLine(f.Name)))
	}
	labelW = min(labelW+2, w/3)
	per := max(1, h/len(p.areas))
	for i := range p.areas {
		p.areas[i].SetWidth(w - labelW)
		p.areas[i].SetHeight(per)
		label := st.s.Muted.Render(fit(termtext.OneLine(p.fields[i].Name)+":", labelW))
		if i == p.cur {
			label = st.s.Accent.Render(fit(termtext.OneLine(p.fields[i].Name)+":", labelW))
		}
		for j, l := range strings.Split(p.areas[i].View(), "\n") {
			if j >= per {
				break
			}
			if j == 0 {
				out = append(out, label+l)
			} else {
				out = append(out, strings.Repeat(" ", labelW)+l)
			}
		}
	}
	return fitBlock(out, w, h)
}
