package ui

import (
	"context"
	"fmt"
	"sync"
	"time"

	"charm.land/bubbles/v2/help"
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

// stylesheet is the active theme and its derived styles.
type stylesheet struct {
	theme themes.Theme
	s     themes.Styles
}

type focusKind int

const (
	focusInput focusKind = iota
	focusChat
	focusTree
	focusWire
)

type overlayKind int

const (
	overlayNone overlayKind = iota
	overlayHelp
	overlayText // call detail, error log
	overlayBranches
	overlayConvs
	overlayReplay
	overlayCompare
)

// Model is the workbench's one root Bubble Tea model. Panes are plain components it
// owns; it routes keys to the focused one and draws each into its rectangle.
type Model struct {
	ctx  context.Context
	b    Backend
	keys KeyMap
	st   *stylesheet
	md   *markdown
	help help.Model

	w, h    int
	profile colorprofile.Profile

	convs    []sessions.ConversationInfo
	conv     *sessions.ConversationInfo
	agent    sessions.AgentInfo
	branches []sessions.BranchInfo
	strats   []sessions.Strategy

	panes     []*chatPane
	cur       int // focused (or last focused) chat pane
	focus     focusKind
	showTree  bool
	showWire  bool
	input     *inputPane
	tree      *callTree
	wire      *wirePane
	previews  map[string]*previewResult
	dry       dryState
	run       *runState
	runSeq    int
	status    string
	statusErr bool
	errLog    []string

	overlay overlayKind
	text    textOverlay
	nav     *navigator
	cl      *convList
	replay  *replayForm
	cmp     *compareView

	quitting  bool
	autoTheme bool // no theme was named: follow the terminal's background

	resume resumePrompt // interrupted turns offered for resume (resume.go)
	picker *ModelPicker // the server's models when none was named (modelpicker.go)

	// runs counts turn goroutines until their backend call returns (see waitRuns)
	runs sync.WaitGroup
}

// dryState is the dry run of the text being typed.
type dryState struct {
	version  int // input version it was computed for
	strategy int
	rs       []sessions.Rendering
	err      error
	pending  bool
}

// runState is a turn in flight.
type runState struct {
	id     int
	cancel context.CancelFunc
	msgs   chan tea.Msg
	pane   *chatPane
	kind   string // "send", "edit", "replay"
}

// New builds the root model. opts.Theme must already be resolved (Run does that).
func New(ctx context.Context, b Backend, theme themes.Theme, keys KeyMap) *Model {
	m := &Model{
		ctx:      ctx,
		b:        b,
		keys:     keys,
		help:     help.New(),
		tree:     newCallTree(),
		wire:     newWirePane(),
		previews: map[string]*previewResult{},
		showTree: true,
		showWire: true,
		w:        80, h: 24,
		profile: colorprofile.TrueColor,
	}
	m.setTheme(theme)
	m.strats = b.Strategies()
	if ags := b.Agents(); len(ags) > 0 {
		m.agent = ags[0]
	}
	m.input = newInputPane(m.agent, keys)
	return m
}

func (m *Model) setTheme(t themes.Theme) {
	m.st = &stylesheet{theme: t, s: t.Styles()}
	style := t.Glamour
	if m.profile <= colorprofile.ASCII && m.profile != colorprofile.Unknown {
		style = "notty"
		// without colour (NO_COLOR, a dumb terminal) the selection and the focused pane
		// need another cue: reverse video (on the focused pane's title)
		m.st.s.Selected = m.st.s.Selected.Reverse(true)
		m.st.s.PaneTitle = m.st.s.PaneTitle.Reverse(true)
	}
	m.md = newMarkdown(style)
	m.help.Styles.ShortKey = m.st.s.HelpKey
	m.help.Styles.ShortDesc = m.st.s.HelpDesc
	m.help.Styles.ShortSeparator = m.st.s.HelpSep
	m.help.Styles.FullKey = m.st.s.HelpKey
	m.help.Styles.FullDesc = m.st.s.HelpDesc
	m.help.Styles.FullSeparator = m.st.s.HelpSep
	for _, p := range m.panes {
		p.cache, p.cacheWidth = map[string][]string{}, 0
	}
	m.wire.memoKey = ""
}

func (m *Model) rend() renderer { return renderer{st: m.st, md: m.md} }

// Init loads the conversation list.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(m.input.focus(), m.loadConversations(true), tea.RequestBackgroundColor, m.checkPending(""))
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
	p := m.pane()
	if p == nil || p.total == 0 {
		return "", nil
	}
	i := p.sel
	if i < 0 {
		i = p.total - 1
	}
	return p.turnAt(i)
}

// Update handles one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmds []tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		m.help.SetWidth(msg.Width)
		m.picker.SetSize(msg.Width, msg.Height-2)
	case tea.ColorProfileMsg:
		m.profile = msg.Profile
		m.setTheme(m.st.theme)
	case tea.BackgroundColorMsg:
		if m.autoTheme && !msg.IsDark() && m.st.theme.Dark {
			m.setTheme(themes.Light())
		}
	case tea.KeyPressMsg:
		if m.picker.Active() && !key.Matches(msg, m.keys.Quit) {
			cmds = append(cmds, m.picker.Update(msg))
			break
		}
		cmds = append(cmds, m.handleKey(msg))
	case modelChosenMsg:
		cmds = append(cmds, m.picker.Update(msg))
		if msg.err == nil {
			m.setStatus(fmt.Sprintf("model %s · pin it next time with --model %s or SESSIONBENCH_MODEL=%s", msg.name, msg.name, msg.name))
		}
	case tea.PasteMsg:
		if m.overlay == overlayNone && m.focus == focusInput {
			cmds = append(cmds, m.input.update(msg))
		} else {
			cmds = append(cmds, m.overlayInput(msg))
		}
	case tea.MouseWheelMsg:
		m.handleWheel(msg)
	default:
		cmds = append(cmds, m.handleResult(msg))
	}
	if m.quitting {
		return m, tea.Quit
	}
	cmds = append(cmds, m.sync()...)
	return m, tea.Batch(cmds...)
}

// sync derives what follows from the new state: the call tree follows the selected
// turn, previews and pages that are now visible get fetched, the dry run follows typing.
func (m *Model) sync() []tea.Cmd {
	var cmds []tea.Cmd
	if id, t := m.selectedTurn(); t != nil {
		if id != m.tree.turnID {
			m.tree.set(id, t.Calls)
		}
	} else if m.tree.turnID != "" || len(m.tree.roots) > 0 {
		m.tree.set("", nil)
	}
	lay := m.layout()
	for _, pr := range lay.chats {
		p := m.panes[pr.pane]
		first, last := p.visibleRange(m.rend(), pr.r.w-2, pr.r.h-2)
		if from, ok := p.missing(first, last); ok {
			p.loading = true
			cmds = append(cmds, m.loadPage(p, from))
		}
	}
	if m.showWire && m.conv != nil {
		cmds = append(cmds, m.ensurePreviews()...)
	}
	return cmds
}

// setStatus shows a message in the status line; errors are also logged for E.
func (m *Model) setStatus(s string) { m.status, m.statusErr = s, false }

func (m *Model) setError(err error) {
	if err == nil {
		return
	}
	msg := termtext.OneLine(err.Error())
	m.status, m.statusErr = msg, true
	m.errLog = append(m.errLog, time.Now().Format("15:04:05")+"  "+termtext.Sanitize(err.Error()))
}

// focusOrder lists the focusable panes: input, each chat pane, tree and wire if shown.
func (m *Model) focusOrder() []focusTarget {
	out := []focusTarget{{kind: focusInput}}
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

// OfferModels opens the workbench on the model picker (Run does this when no model was
// named and the server lists several).
func (m *Model) OfferModels(c ModelChoice) {
	m.picker = NewModelPicker(c)
	m.picker.SetSize(m.w, m.h-2)
}
