package ui

import (
	"context"
	"fmt"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/themes"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// MinWidth and MinHeight are the smallest terminal the layout supports.
const (
	MinWidth  = 60
	MinHeight = 20
)

type focusKind int

const (
	focusInput focusKind = iota
	focusChat
	focusTree
	focusWire
)

// Model is the workbench's one root Bubble Tea model. It routes: keys to the focused
// component (or the open modal), backend results to the component that asked, and the
// layout's rectangles to every component. The panes and modals are components in the
// bubbles shape (own state, Update, View into a size, SetSize, own binding table).
type Model struct {
	e       *env
	w, h    int
	profile colorprofile.Profile

	convs []sessions.ConversationInfo

	panes    []*chatPane
	cur      int // focused (or last focused) chat pane
	focus    focusKind
	showTree bool
	showWire bool
	input    *inputPane
	tree     *callTree
	wire     *wirePane
	modals   []modal // the top one has the keys
	resume   *resumePrompt
	picker   *ModelPicker // the server's models when none was named (modelpicker.go)
	runner   *turnRunner

	mouse     bool // mouse capture (off: the terminal selects text on drag)
	quitting  bool
	autoTheme bool // no theme was named: follow the terminal's background
	// pollEvery is how often the open conversation is checked for turns written by
	// another process (0: never; Run sets it)
	pollEvery time.Duration
	polling   bool
	// prefetched holds the branches (conv + "\x00" + branch) whose next turn was readied
	// when the user started typing on them (prefetch), until a turn ran there
	prefetched map[string]bool
}

// New builds the root model. The theme must already be resolved (Run does that).
func New(ctx context.Context, b Backend, theme themes.Theme, keys KeyMap) *Model {
	e := &env{ctx: ctx, b: b, keys: keys, status: &statusBar{}, previews: previewCache{}, saveDir: "."}
	m := &Model{e: e, showTree: true, showWire: true, w: 80, h: 24, profile: colorprofile.TrueColor, mouse: true}
	m.runner = &turnRunner{e: e}
	e.running = m.runner.active
	m.resume = &resumePrompt{e: e}
	m.tree = newCallTree(e)
	m.wire = newWirePane(e)
	m.setTheme(theme)
	e.strats = b.Strategies()
	e.agents = b.Agents()
	e.model = b.ModelName()
	if len(e.agents) > 0 {
		e.agent = e.agents[0]
	}
	m.input = newInputPane(e, e.agent)
	return m
}

// SetSaveDir sets the folder the compare view saves requests to (default ".").
func (m *Model) SetSaveDir(dir string) { m.e.saveDir = dir }

func (m *Model) setTheme(t themes.Theme) {
	m.e.st = &stylesheet{theme: t, s: t.Styles()}
	style := t.Glamour
	if m.profile <= colorprofile.ASCII && m.profile != colorprofile.Unknown {
		style = "notty"
		// without colour (NO_COLOR, a dumb terminal) the selection and the focused pane
		// need another cue: reverse video (on the focused pane's title)
		m.e.st.s.Selected = m.e.st.s.Selected.Reverse(true)
		m.e.st.s.PaneTitle = m.e.st.s.PaneTitle.Reverse(true)
	}
	m.e.md = newMarkdown(style)
	m.e.styleGen++
}

// Init loads the conversation list and asks for interrupted turns.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(m.input.focus(), loadConversations(m.e, true), tea.RequestBackgroundColor, checkPending(m.e, ""), m.schedulePoll())
}

// pane is the focused chat pane (nil before a conversation is open).
func (m *Model) pane() *chatPane {
	if m.cur < 0 || m.cur >= len(m.panes) {
		return nil
	}
	return m.panes[m.cur]
}

// selectedTurn is the focused pane's selected turn, or its last loaded one.
func (m *Model) selectedTurn() (string, *trace.Turn) {
	if p := m.pane(); p != nil {
		return p.selected()
	}
	return "", nil
}

func (m *Model) topModal() modal {
	if len(m.modals) == 0 {
		return nil
	}
	return m.modals[len(m.modals)-1]
}

// Update handles one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmds []tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		m.picker.SetSize(msg.Width, msg.Height-2)
	case tea.ColorProfileMsg:
		m.profile = msg.Profile
		m.setTheme(m.e.st.theme)
	case tea.BackgroundColorMsg:
		if m.autoTheme && !msg.IsDark() && m.e.st.theme.Dark {
			m.setTheme(themes.Light())
		}
	case tea.KeyPressMsg:
		m.e.status.keyPressed(time.Now())
		if m.picker.Active() && !key.Matches(msg, m.e.keys.Quit) {
			cmds = append(cmds, m.picker.Update(msg))
			break
		}
		cmds = append(cmds, m.key(msg))
	case modelChosenMsg:
		cmds = append(cmds, m.picker.Update(msg))
		if msg.err == nil {
			m.e.status.set(fmt.Sprintf("model %s · pin it next time with --model %s or SESSIONBENCH_MODEL=%s", msg.name, msg.name, msg.name))
			m.e.model = m.e.b.ModelName()
		}
	case tea.PasteMsg:
		if md := m.topModal(); md != nil {
			cmds = append(cmds, md.Update(msg))
		} else if m.focus == focusInput {
			cmds = append(cmds, m.input.Update(msg))
		}
	case tea.MouseWheelMsg:
		m.wheel(msg)
	case tea.MouseClickMsg:
		cmds = append(cmds, m.click(msg))
	default:
		cmds = append(cmds, m.result(msg))
	}
	// what the components asked of the root during this update, in order
	for len(m.e.outbox) > 0 {
		out := m.e.outbox[0]
		m.e.outbox = m.e.outbox[1:]
		cmds = append(cmds, m.result(out))
	}
	if m.quitting {
		return m, tea.Quit
	}
	cmds = append(cmds, m.sync()...)
	return m, tea.Batch(cmds...)
}

// key routes a key press: quit, the resume prompt, the open modal, a running turn's
// cancel, then the focused pane's table, then the keys that work in every pane.
func (m *Model) key(k tea.KeyPressMsg) tea.Cmd {
	if key.Matches(k, m.e.keys.Quit) {
		if cv, ok := m.topModal().(*confirmView); m.runner.active() && !(ok && cv.quit) {
			// quitting stops the running turn: it is left interrupted, resumable
			q := newConfirm(m.e, "quit", fmt.Sprintf("A turn is running. Quit anyway? It is kept interrupted and offered for resuming "+
				"next time (answered calls are not paid for again). %s or %s quits, %s keeps it running.",
				m.e.keys.Confirm.Help().Key, m.e.keys.Quit.Help().Key, m.e.keys.Cancel.Help().Key), m.e.emitter(quitMsg{}))
			q.quit = true
			m.push(q)
			return nil
		}
		m.runner.cancel(fmt.Errorf("the workbench quit during the turn: %w", trace.ErrInterrupted))
		m.quitting = true
		return nil
	}
	if m.resume.active() {
		return m.resume.Update(k)
	}
	if md := m.topModal(); md != nil {
		return md.Update(k)
	}
	if key.Matches(k, m.e.keys.Cancel) && m.runner.active() {
		m.cancelRun()
		return nil
	}
	if m.focus == focusInput {
		if cmd, ok := dispatch(k, m.editorGlobals()); ok {
			return cmd
		}
		return m.input.Update(k)
	}
	var table []binding
	switch m.focus {
	case focusChat:
		if p := m.pane(); p != nil {
			table = p.bindings()
		}
	case focusTree:
		table = m.tree.bindings()
	case focusWire:
		table = m.wire.bindings()
	}
	if cmd, ok := dispatch(k, table); ok {
		return cmd
	}
	cmd, _ := dispatch(k, m.globals())
	return cmd
}

// editorGlobals are the keys that leave the editor or work in it; any other key is
// typed. (The editor's own table goes first: tab moves between its fields.)
func (m *Model) editorGlobals() []binding {
	k := m.e.keys
	f1 := key.NewBinding(key.WithKeys(nonPrintable(k.Help.Keys())...), key.WithHelp(k.Help.Help().Key, "help"))
	// a turn that just failed is retried from where the text was typed (when the retry
	// key types nothing)
	retry := key.NewBinding(key.WithKeys(nonPrintable(k.Retry.Keys())...), key.WithHelp(k.Retry.Help().Key, "retry the failed turn"))
	table := m.input.bindings()
	table = append(table, bind(retry, "retry the failed turn", true, func() tea.Cmd { return m.pane().retry() }).only(func() bool {
		return len(retry.Keys()) > 0 && m.pane() != nil && m.pane().keptSelected() && m.input.editTurn == ""
	}))
	return append(table,
		bind(k.Focus, "next pane", true, func() tea.Cmd { return m.cycleFocus(1) }),
		bind(k.FocusBack, "previous pane", false, func() tea.Cmd { return m.cycleFocus(-1) }),
		bind(f1, "help", len(f1.Keys()) > 0, func() tea.Cmd { m.openHelp(); return nil }).only(func() bool { return len(f1.Keys()) > 0 }),
	)
}

// nonPrintable keeps the keys that type nothing (f1, ctrl+...), usable in the editor.
func nonPrintable(keys []string) []string {
	var out []string
	for _, k := range keys {
		if len([]rune(k)) > 1 && k != "space" {
			out = append(out, k)
		}
	}
	return out
}

// globals are the keys that work in every pane but the editor.
func (m *Model) globals() []binding {
	k := m.e.keys
	return []binding{
		bind(k.Focus, "next pane", true, func() tea.Cmd { return m.cycleFocus(1) }),
		bind(k.FocusBack, "previous pane", false, func() tea.Cmd { return m.cycleFocus(-1) }),
		bind(k.Cancel, "editor", false, func() tea.Cmd { return m.setFocus(focusInput, 0) }).only(func() bool { return !m.e.recorded() }),
		bind(k.Compare, "compare strategies", true, m.openCompareSelected),
		bind(k.Strategy, "cycle strategy", true, do(func() {
			m.wire.cycle()
			m.e.status.set("wire: " + m.wire.mode())
		})),
		bind(k.Actual, "actual request", false, do(func() {
			m.wire.setActual()
			m.e.status.set("wire: actual request")
		})),
		bind(k.Branches, "branch navigator", true, m.openNavigator),
		bind(k.Conversations, "conversations", false, m.openConvList),
		bind(k.Replay, "compare runs (replay)", false, m.openReplay),
		bind(k.NewPane, "new branch pane", false, m.newPane),
		bind(k.ClosePane, "close pane", false, do(m.closePane)),
		bind(k.ToggleTree, "toggle call tree", false, do(func() {
			m.showTree = !m.showTree
			if !m.showTree && m.focus == focusTree {
				m.focus = focusChat
			}
		})),
		bind(k.ToggleWire, "toggle wire pane", false, do(func() {
			m.showWire = !m.showWire
			if !m.showWire && m.focus == focusWire {
				m.focus = focusChat
			}
		})),
		bind(k.ErrorDetail, "error log", false, do(m.openErrorLog)),
		bind(k.Mouse, "mouse capture on/off", false, do(m.toggleMouse)),
		bind(k.Models, "choose another model", false, do(m.reopenModels)).only(func() bool { return m.picker != nil }),
		bind(k.Help, "help", true, func() tea.Cmd { m.openHelp(); return nil }),
	}
}

// focusOrder lists the focusable panes: input (unless the conversation is recorded),
// each chat pane, tree and wire if shown.
func (m *Model) focusOrder() []focusTarget {
	var out []focusTarget
	if !m.e.recorded() {
		out = append(out, focusTarget{kind: focusInput})
	}
	for i := range m.panes {
		out = append(out, focusTarget{kind: focusChat, pane: i})
	}
	if m.showTree {
		out = append(out, focusTarget{kind: focusTree})
	}
	if m.showWire {
		out = append(out, focusTarget{kind: focusWire})
	}
	return out
}

type focusTarget struct {
	kind focusKind
	pane int
}

func (m *Model) cycleFocus(delta int) tea.Cmd {
	order := m.focusOrder()
	at := 0
	for i, t := range order {
		if t.kind == m.focus && (t.kind != focusChat || t.pane == m.cur) {
			at = i
		}
	}
	next := order[(at+delta+len(order))%len(order)]
	return m.setFocus(next.kind, next.pane)
}

func (m *Model) setFocus(k focusKind, pane int) tea.Cmd {
	if k == focusInput && m.e.recorded() {
		// a recorded conversation has no editor: the transcript takes the focus
		k, pane = focusChat, m.cur
	}
	m.focus = k
	if k == focusChat {
		m.cur = pane
	}
	if k == focusInput {
		return m.input.focus()
	}
	m.input.blur()
	return nil
}

// showDryRun: while the user types, the wire pane previews the typed text.
func (m *Model) showDryRun() bool {
	return m.focus == focusInput && !m.input.empty() && m.input.editTurn == "" && m.topModal() == nil
}

// sync derives what follows from the new state: the call tree follows the selected
// turn, the components get their rectangles, pages and previews now visible get
// fetched, an open compare view fetches its sides.
func (m *Model) sync() []tea.Cmd {
	var cmds []tea.Cmd
	id, t := m.selectedTurn()
	if id != m.tree.turnID || t == nil && len(m.tree.roots) > 0 {
		m.tree.set(id, t)
	}
	m.place()
	for _, pr := range m.layout().chats {
		cmds = append(cmds, m.panes[pr.pane].ensureLoaded())
	}
	cmds = append(cmds, m.prefetch())
	if m.showWire && m.e.conv != nil {
		cmds = append(cmds, m.wire.show(m.wireTarget()))
		// The text changes by typing, and also when a refused send or a cancelled
		// turn gives it back: either way its dry run is due.
		if m.showDryRun() {
			cmds = append(cmds, m.wire.scheduleDry(m.input.version))
		}
	}
	if s, ok := m.topModal().(interface{ sync() tea.Cmd }); ok {
		cmds = append(cmds, s.sync())
	}
	return cmds
}

// prefetch asks the backend to ready the branch's next turn when the user starts typing
// on it, once per turn (again after each turn run on the branch, onRunDone): the first
// Send of a process then does not restore the session (on a long branch, much of what
// it would cost), and no Send waits for the model's connection to open.
func (m *Model) prefetch() tea.Cmd {
	p := m.pane()
	if m.focus != focusInput || m.input.empty() || m.input.editTurn != "" || m.e.conv == nil || p == nil {
		return nil
	}
	key := m.e.convID() + "\x00" + p.branch
	if m.prefetched[key] {
		return nil
	}
	if m.prefetched == nil {
		m.prefetched = map[string]bool{}
	}
	m.prefetched[key] = true
	ctx, b, conv, branch := m.e.ctx, m.e.b, m.e.convID(), p.branch
	return func() tea.Msg {
		b.Prefetch(ctx, conv, branch)
		return nil
	}
}

// wireTarget is what the wire pane should show now.
func (m *Model) wireTarget() wireTarget {
	if m.showDryRun() {
		return wireTarget{dry: true}
	}
	p := m.pane()
	id, t := m.selectedTurn()
	if p == nil || t == nil {
		return wireTarget{empty: "select a turn to see its request"}
	}
	c := m.tree.selected()
	switch {
	case m.tree.selectedAttempt() != nil && !m.tree.rows[m.tree.sel].kids:
		return wireTarget{empty: attemptTitle(m.tree.selectedAttempt()) + " made no model calls (a tool step): nothing was sent"}
	case m.tree.selectedAttempt() != nil:
		return wireTarget{empty: attemptTitle(m.tree.selectedAttempt()) + " is a try of a retrying step; select one of its calls in the call tree"}
	case c == nil:
		return wireTarget{empty: fmt.Sprintf("%s made no model calls: nothing was sent", turnLabel(t.Index))}
	case isModuleRecord(c):
		return wireTarget{empty: fmt.Sprintf("%s is a module: it sends no request itself; select one of its %s in the call tree",
			termtext.OneLine(c.Path), termtext.Count(len(c.Children), "inner call"))}
	}
	return wireTarget{req: &sessions.PreviewRequest{Conv: m.e.convID(), Branch: p.branch, Turn: id, Call: c.ID}}
}

// place gives every component its rectangle.
func (m *Model) place() {
	l := m.layout()
	if l.tooSmall {
		return
	}
	for _, pr := range l.chats {
		m.panes[pr.pane].SetSize(pr.r.w, pr.r.h)
	}
	// panes off screen keep a size, so keys that scroll them still know their height
	for _, p := range m.panes {
		if p.w == 0 {
			p.SetSize(max(m.w/2, 20), max(l.body.h, 3))
		}
	}
	tr, wr := l.tree, l.wire
	if tr.h == 0 {
		tr = l.body
	}
	if wr.h == 0 {
		wr = l.body
	}
	m.tree.SetSize(tr.w, tr.h)
	m.wire.SetSize(wr.w, wr.h)
	m.input.SetSize(l.input.w, l.input.h)
	mh := l.body.h + l.input.h
	for _, md := range m.modals {
		md.SetSize(m.w, mh)
	}
	m.resume.SetSize(m.w, mh)
}

// OfferModels opens the workbench on the model picker (Run does this when no model was
// named and the server lists several); the models key opens it again later.
func (m *Model) OfferModels(c ModelChoice) {
	m.picker = NewModelPicker(c, m.e.keys)
	m.picker.SetSize(m.w, m.h-2)
}

// reopenModels shows the model picker again, on the model in use.
func (m *Model) reopenModels() {
	c := m.picker.choice
	c.Current = m.picker.Chosen()
	m.OfferModels(c)
}
