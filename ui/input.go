package ui

import (
	"fmt"
	"strings"

	"github.com/sessionbench/sessionbench/core/py"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// inputPane is the multi-line editor that fills the agent's input fields: one textarea
// for a single field, a small form (one textarea per field) for several. It keeps a
// history of sent inputs, recalled with ctrl+p / ctrl+n or the arrows at the edges.
type inputPane struct {
	e       *env
	w, h    int
	fields  []sig.Field
	areas   []textarea.Model
	cur     int
	history []*sig.Map
	hpos    int // == len(history) when not browsing

	editTurn  string // TurnID being edited (edit-and-resubmit); "" for a new turn
	editRetry bool   // editTurn is a kept turn: enter retries it with the edited inputs
	editIndex int
	version   int // bumped on every change, to debounce the dry run
}

// submitMsg is the form sent with enter: a new turn, or the edit of turn editTurn.
type submitMsg struct {
	inputs   *sig.Map
	editTurn string
	retry    bool // editTurn is a kept turn, retried with these inputs
}

// leaveEditorMsg asks the root to move the focus to the transcript.
type leaveEditorMsg struct{}

// editMsg carries a turn's inputs into the editor (edit and resubmit).
type editMsg struct {
	turn   string
	index  int
	inputs *sig.Map
	retry  bool // turn is a kept turn (failed, cancelled): edit and retry it
}

func newInputPane(e *env, agent sessions.AgentInfo) *inputPane {
	p := &inputPane{e: e}
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
		ta.KeyMap.InsertNewline = e.keys.Newline
		// the up and down keys that type nothing (not k and j): they move between lines
		ta.KeyMap.LineNext = key.NewBinding(key.WithKeys(nonPrintable(e.keys.Down.Keys())...))
		ta.KeyMap.LinePrevious = key.NewBinding(key.WithKeys(nonPrintable(e.keys.Up.Keys())...))
		p.areas = append(p.areas, ta)
	}
	return p
}

// SetSize sets the frame's size.
func (p *inputPane) SetSize(w, h int) { p.w, p.h = w, h }

// height is the frame height the form wants.
func (p *inputPane) height() int {
	if len(p.areas) == 1 {
		return 3 + 2
	}
	return min(2*len(p.areas), 8) + 2
}

// bindings is the editor's key table; keys it does not bind are typed into the field.
// A recorded conversation's editor is disabled: it binds (and types) nothing.
func (p *inputPane) bindings() []binding {
	if p.e.recorded() {
		return nil
	}
	k := p.e.keys
	multi := func() bool { return len(p.areas) > 1 }
	// at the first or last line the arrows step through the history, as in a shell
	up := key.NewBinding(key.WithKeys(nonPrintable(k.Up.Keys())...), key.WithHelp("up", "older input"))
	down := key.NewBinding(key.WithKeys(nonPrintable(k.Down.Keys())...), key.WithHelp("down", "newer input"))
	return []binding{
		bind(k.Send, "send", true, p.submit),
		bind(k.Newline, "new line", true, nil), // the textarea's own (its InsertNewline)
		bind(k.NextField, "next field", true, do(func() { p.next(1) })).only(func() bool { return multi() && p.cur < len(p.areas)-1 }),
		bind(k.PrevField, "previous field", false, do(func() { p.next(-1) })).only(func() bool { return multi() && p.cur > 0 }),
		bind(k.HistoryPrev, "history", true, do(func() { p.recall(-1) })),
		bind(k.HistoryNext, "next in history", false, do(func() { p.recall(1) })),
		bind(up, "older input", false, do(func() { p.recall(-1) })).only(func() bool { return p.atHistoryEdge(-1) }),
		bind(down, "newer input", false, do(func() { p.recall(1) })).only(func() bool { return p.atHistoryEdge(1) }),
		bind(k.Cancel, "leave editor", true, p.leave),
	}
}

// Update handles a key press (or paste) while the editor has the focus.
func (p *inputPane) Update(msg tea.Msg) tea.Cmd {
	if p.e.recorded() {
		return nil
	}
	if k, ok := msg.(tea.KeyPressMsg); ok {
		if cmd, ok := dispatch(k, p.bindings()); ok {
			return cmd
		}
	}
	before := p.areas[p.cur].Value()
	var cmd tea.Cmd
	p.areas[p.cur], cmd = p.areas[p.cur].Update(msg)
	if p.areas[p.cur].Value() != before {
		p.version++
	}
	return cmd
}

// submit sends the form (the root decides where the turn runs).
func (p *inputPane) submit() tea.Cmd {
	if p.empty() {
		return nil
	}
	inputs, err := p.values()
	if err != nil {
		return p.e.fail(err)
	}
	p.remember(inputs)
	edit, retry := p.editTurn, p.editRetry
	p.clear()
	p.e.emit(submitMsg{inputs: inputs, editTurn: edit, retry: retry})
	return nil
}

// leave abandons an edit, or else leaves the editor.
func (p *inputPane) leave() tea.Cmd {
	if p.editTurn != "" {
		p.clear()
		return p.e.say("edit abandoned")
	}
	p.e.emit(leaveEditorMsg{})
	return nil
}

func (p *inputPane) focus() tea.Cmd {
	for i := range p.areas {
		p.areas[i].Blur()
	}
	if p.e.recorded() {
		return nil
	}
	return p.areas[p.cur].Focus()
}

func (p *inputPane) blur() {
	for i := range p.areas {
		p.areas[i].Blur()
	}
}

// next moves to another field.
func (p *inputPane) next(delta int) {
	if n := p.cur + delta; n >= 0 && n < len(p.areas) {
		p.cur = n
		p.focus()
	}
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

// set fills the form from values (history recall, edit-and-resubmit, a cancelled send).
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

// beginEdit puts a turn's inputs in the form for edit-and-resubmit.
func (p *inputPane) beginEdit(msg editMsg) {
	p.set(msg.inputs)
	p.editTurn, p.editIndex, p.editRetry = msg.turn, msg.index, msg.retry
}

func (p *inputPane) clear() {
	for i := range p.areas {
		p.areas[i].Reset()
	}
	p.cur = 0
	p.editTurn, p.editRetry = "", false
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

// View draws the editor's frame at its size.
func (p *inputPane) View(focused bool) []string {
	fs, ts := paneStyle(p.e.st, focused)
	if p.e.recorded() {
		return frame(fs, ts, " recorded by sessionbench proxy · read only ", "", p.recordedNote(p.w-2, p.h-2), p.w, p.h)
	}
	title := " input "
	if p.e.agent.Name != "" {
		title = " " + termtext.OneLine(p.e.agent.Name) + " "
	}
	k := p.e.keys
	switch {
	case p.editTurn != "" && p.editRetry:
		title += "· editing " + turnLabel(p.editIndex) + ": " + k.Send.Help().Key + " retries it with these inputs, " + k.Cancel.Help().Key + " abandons "
	case p.editTurn != "":
		title += "· editing " + turnLabel(p.editIndex) + ": " + k.Send.Help().Key + " resubmits as a new branch, " + k.Cancel.Help().Key + " abandons "
	}
	return frame(fs, ts, title, hints(hintsOf(p.bindings())...), p.body(p.w-2, p.h-2), p.w, p.h)
}

// recordedNote stands in for the editor of a recorded conversation: why there is no
// editor and how the conversation grows.
func (p *inputPane) recordedNote(w, h int) []string {
	text := "Made by your program outside sessionbench: its calls appear here as it runs through the " +
		"proxy. Runs sending the same X-Sessionbench-Session header add to it; others record a new conversation."
	lines := wrapLines(text, w)
	for i, l := range lines {
		lines[i] = p.e.st.s.Muted.Render(l)
	}
	return fitBlock(lines, w, h)
}

func (p *inputPane) body(w, h int) []string {
	if len(p.areas) == 1 {
		p.areas[0].SetWidth(w)
		p.areas[0].SetHeight(h)
		return fitBlock(strings.Split(p.areas[0].View(), "\n"), w, h)
	}
	st := p.e.st.s
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
		label := st.Muted.Render(fit(termtext.OneLine(p.fields[i].Name)+":", labelW))
		if i == p.cur {
			label = st.Accent.Render(fit(termtext.OneLine(p.fields[i].Name)+":", labelW))
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
