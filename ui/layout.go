package ui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

type rect struct{ x, y, w, h int }

func (r rect) contains(x, y int) bool {
	return r.w > 0 && x >= r.x && x < r.x+r.w && y >= r.y && y < r.y+r.h
}

type paneRect struct {
	pane int
	r    rect
}

// layout is where everything goes at the current size.
type layout struct {
	tooSmall   bool
	body       rect
	tabs       rect // the strip naming the panes that do not fit (h 0 when all fit)
	chats      []paneRect
	tree, wire rect
	input      rect
}

// chatMinWidth is the narrowest a side-by-side chat pane gets.
const chatMinWidth = 40

// wideWidth is the width from which side panes sit next to the chat panes; below it
// one pane shows at a time (the focused one).
const wideWidth = 100

func (m *Model) layout() layout {
	var l layout
	if m.w < MinWidth || m.h < MinHeight {
		l.tooSmall = true
		return l
	}
	ih := m.input.height()
	bodyH := m.h - 1 - ih - 2 // header, input frame, status, help
	l.body = rect{0, 1, m.w, bodyH}
	l.input = rect{0, 1 + bodyH, m.w, ih}
	chatArea := l.body
	side := m.showTree || m.showWire
	if m.w >= wideWidth && side {
		rw := max(40, m.w*2/5)
		chatArea.w = m.w - rw
		col := rect{chatArea.w, 1, rw, bodyH}
		switch {
		case m.showTree && m.showWire:
			th := bodyH * 2 / 5
			l.tree = rect{col.x, col.y, col.w, th}
			l.wire = rect{col.x, col.y + th, col.w, bodyH - th}
		case m.showTree:
			l.tree = col
		default:
			l.wire = col
		}
	} else if m.w < wideWidth {
		// one pane at a time: the focused side pane takes the body
		switch {
		case m.focus == focusTree && m.showTree:
			l.tree = l.body
			return l
		case m.focus == focusWire && m.showWire:
			l.wire = l.body
			return l
		}
	}
	if len(m.panes) == 0 {
		return l
	}
	k := max(1, min(len(m.panes), chatArea.w/chatMinWidth))
	if k < len(m.panes) {
		// the panes that do not fit are named in a strip above the others
		l.tabs = rect{chatArea.x, chatArea.y, chatArea.w, 1}
		chatArea.y++
		chatArea.h--
	}
	first := max(0, min(m.cur-k/2, len(m.panes)-k))
	for i := 0; i < k; i++ {
		w := chatArea.w / k
		x := chatArea.x + i*w
		if i == k-1 {
			w = chatArea.w - i*w
		}
		l.chats = append(l.chats, paneRect{pane: first + i, r: rect{x, chatArea.y, w, chatArea.h}})
	}
	return l
}

// View draws the frame.
func (m *Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	if m.mouse {
		v.MouseMode = tea.MouseModeCellMotion
	}
	v.WindowTitle = "sessionbench"
	return v
}

// render is the frame as text (View without the terminal settings), for tests too.
func (m *Model) render() string {
	l := m.layout()
	if l.tooSmall {
		msg := fmt.Sprintf("terminal too small: %dx%d\nsessionbench needs at least %dx%d", m.w, m.h, MinWidth, MinHeight)
		return strings.Join(fitBlock(wrapLines(msg, max(m.w, 1)), max(m.w, 1), max(m.h, 1)), "\n")
	}
	m.place() // a frame may come before any message (the first one)
	screen := make([]string, 0, m.h)
	screen = append(screen, m.headerLine())
	if m.picker.Active() {
		m.picker.SetStyles(m.e.st.s)
		return strings.Join(append(append(screen, m.picker.View()), m.statusLine()), "\n")
	}
	switch md := m.topModal(); {
	case m.resume.active():
		screen = append(screen, fitBlock(m.resume.View(), m.w, l.body.h+l.input.h)...)
	case md != nil:
		screen = append(screen, fitBlock(md.View(), m.w, l.body.h+l.input.h)...)
	default:
		screen = append(screen, m.bodyView(l)...)
		screen = append(screen, m.input.View(m.focus == focusInput)...)
	}
	screen = append(screen, m.statusLine(), m.helpLine())
	return strings.Join(screen, "\n")
}

func (m *Model) headerLine() string {
	e := m.e
	// the model comes first so a narrow terminal still shows it (the offline demo model
	// must always be labelled as such)
	title := "sessionbench · model: " + termtext.OneLine(e.model)
	if e.readOnly != "" {
		title += " · read-only"
	}
	if e.conv != nil {
		title += " · " + termtext.OneLine(e.conv.Title)
		if e.recorded() {
			title += " · recorded by the proxy"
		} else {
			title += " · agent " + termtext.OneLine(e.conv.Agent)
		}
	}
	title += " · wire: " + m.wire.mode()
	if !m.mouse {
		title += " · mouse off"
	}
	return e.st.s.Header.Render(fit(" "+title, m.w))
}

func (m *Model) bodyView(l layout) []string {
	// compose the body as a grid of blocks: chat panes left, tree and wire right
	var left []string
	if l.tabs.h > 0 {
		left = append(left, m.tabStrip(l))
	}
	var blocks [][]string
	for _, pr := range l.chats {
		focused := m.focus == focusChat && pr.pane == m.cur
		blocks = append(blocks, m.panes[pr.pane].View(focused))
	}
	if len(blocks) > 0 {
		left = append(left, hjoin(blocks...)...)
	}
	var right []string
	if l.tree.h > 0 {
		right = append(right, m.tree.View(m.focus == focusTree)...)
	}
	if l.wire.h > 0 {
		right = append(right, m.wire.View(m.focus == focusWire, m.input.version)...)
	}
	switch {
	case left == nil && right == nil:
		return fitBlock([]string{m.e.st.s.Muted.Render(" no conversation open: " + m.e.keys.Conversations.Help().Key + " lists them")}, m.w, l.body.h)
	case left == nil:
		return fitBlock(right, m.w, l.body.h)
	case right == nil:
		return fitBlock(left, m.w, l.body.h)
	}
	return hjoin(left, right)
}

// tabStrip names every pane, the ones on screen marked, so a branch whose pane does not
// fit is never silently off screen.
func (m *Model) tabStrip(l layout) string {
	s := m.e.st.s
	shown := map[int]bool{}
	for _, pr := range l.chats {
		shown[pr.pane] = true
	}
	var hidden []string
	for i, p := range m.panes {
		if !shown[i] {
			hidden = append(hidden, termtext.OneLine(p.branch))
		}
	}
	text := fmt.Sprintf(" %d more: %s · %s/%s reach them ", len(hidden), strings.Join(hidden, ", "),
		m.e.keys.Focus.Help().Key, m.e.keys.FocusBack.Help().Key)
	return s.Warning.Render(fit(text, l.tabs.w))
}

func paneStyle(st *stylesheet, focused bool) (frameStyle, titleStyle lipgloss.Style) {
	if focused {
		return st.s.PaneFocused, st.s.PaneTitle
	}
	return st.s.Pane, st.s.Muted
}

func (m *Model) statusLine() string {
	s := m.e.st.s
	text := m.e.status.text
	style := s.Status
	hint := ""
	if m.e.status.err {
		// A long error is cut, never the key that opens it whole.
		style = s.StatusErr
		text = "✗ " + text
		hint = "  (" + m.e.keys.ErrorDetail.Help().Key + ": details)"
	}
	if m.runner.active() {
		text = strings.TrimSuffix("● running · "+m.e.keys.Cancel.Help().Key+" cancels · "+text, " · ")
	}
	if hw := ansi.StringWidth(hint); hint != "" && ansi.StringWidth(" "+text)+hw > m.w && m.w > 2*hw {
		return style.Render(fit(" "+text, m.w-hw) + hint)
	}
	return style.Render(fit(" "+text+hint, m.w))
}

// helpLine is the bottom line: the keys of what has the focus, the most important
// first; when they do not all fit, the last ones give way, never the help key.
func (m *Model) helpLine() string {
	var bs []key.Binding
	help := m.e.keys.Help
	switch md := m.topModal(); {
	case m.resume.active():
		bs = hintsOf(m.resume.bindings())
	case md != nil:
		bs = hintsOf(md.bindings())
		if tv, ok := md.(*textView); ok && tv.isHelp {
			help = key.Binding{} // already open
		}
	case m.focus == focusInput:
		bs = hintsOf(m.input.bindings())
		bs = append(bs, m.e.keys.Focus)
		if ks := nonPrintable(help.Keys()); len(ks) > 0 {
			help = key.NewBinding(key.WithKeys(ks...), key.WithHelp(ks[0], "help"))
		} else {
			help = key.Binding{}
		}
	default:
		switch m.focus {
		case focusChat:
			if p := m.pane(); p != nil {
				bs = hintsOf(p.bindings())
			}
		case focusTree:
			bs = hintsOf(m.tree.bindings())
		case focusWire:
			bs = hintsOf(m.wire.bindings())
		}
		bs = append(bs, hintsOf(m.globals())...)
	}
	return fit(fitHints(m.e.st, bs, help, m.e.keys.Quit, m.w), m.w)
}

// fitHints lays out "key desc • key desc" in w cells: as many of bs as fit, then help
// and quit, which are always shown.
func fitHints(st *stylesheet, bs []key.Binding, help, quit key.Binding, w int) string {
	s := st.s
	item := func(b key.Binding) string {
		h := b.Help()
		return s.HelpKey.Render(h.Key) + " " + s.HelpDesc.Render(h.Desc)
	}
	sep := s.HelpSep.Render(" • ")
	var tail []string
	seen := map[string]bool{}
	for _, b := range []key.Binding{help, quit} {
		if b.Help().Key != "" {
			tail = append(tail, item(b))
			seen[b.Help().Key] = true
		}
	}
	tailText := strings.Join(tail, sep)
	room := w - ansi.StringWidth(tailText) - ansi.StringWidth(sep) - 1
	var head []string
	used := 0
	for _, b := range bs {
		if seen[b.Help().Key] || b.Help().Key == "" {
			continue
		}
		seen[b.Help().Key] = true
		it := item(b)
		iw := ansi.StringWidth(it) + ansi.StringWidth(sep)
		if used+iw > room {
			break
		}
		head = append(head, it)
		used += iw
	}
	if len(head) == 0 {
		return " " + tailText
	}
	return " " + strings.Join(head, sep) + sep + tailText
}
