package ui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/sessionbench/sessionbench/ui/sessions"
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
	ih := m.input.height() + 2
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

func (m *Model) chatRect() rect {
	for _, pr := range m.layout().chats {
		if pr.pane == m.cur {
			return pr.r
		}
	}
	return rect{0, 1, m.w, max(m.h-8, 3)}
}

func (m *Model) treeRect() rect {
	if r := m.layout().tree; r.h > 0 {
		return r
	}
	return rect{0, 1, m.w, max(m.h-8, 3)}
}

func (m *Model) wireRect() rect {
	if r := m.layout().wire; r.h > 0 {
		return r
	}
	return rect{0, 1, m.w, max(m.h-8, 3)}
}

// View draws the frame.
func (m *Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
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
	screen := make([]string, 0, m.h)
	screen = append(screen, m.headerLine())
	if m.picker.Active() {
		m.picker.SetStyles(m.st.s)
		return strings.Join(append(append(screen, m.picker.View()), m.statusLine()), "\n")
	}
	if m.resumeActive() {
		screen = append(screen, m.resumeView(m.w, l.body.h+l.input.h)...)
	} else if m.overlay != overlayNone {
		screen = append(screen, m.overlayView(m.w, l.body.h+l.input.h)...)
	} else {
		screen = append(screen, m.bodyView(l)...)
		screen = append(screen, m.inputView(l.input)...)
	}
	screen = append(screen, m.statusLine(), m.helpLine())
	return strings.Join(screen, "\n")
}

func (m *Model) headerLine() string {
	// the model comes first so a narrow terminal still shows it (the offline demo model
	// must always be labelled as such)
	title := "sessionbench · model: " + termtext.OneLine(m.b.ModelName())
	if m.conv != nil {
		title += " · " + termtext.OneLine(m.conv.Title) + " · agent " + termtext.OneLine(m.conv.Agent)
	}
	title += " · wire: " + m.wireModeLabel()
	return m.st.s.Header.Render(fit(" "+title, m.w))
}

func (m *Model) wireModeLabel() string {
	if m.wire.compare {
		return strategyLabel(m.strats, m.wire.cmpA) + " vs " + strategyLabel(m.strats, m.wire.cmpB)
	}
	return strategyLabel(m.strats, m.wire.strategy)
}

func (m *Model) bodyView(l layout) []string {
	// compose the body as a grid of blocks: chat panes left, tree and wire right
	var left []string
	var blocks [][]string
	for _, pr := range l.chats {
		blocks = append(blocks, m.chatView(pr))
	}
	if len(blocks) > 0 {
		left = hjoin(blocks...)
	}
	var right []string
	if l.tree.h > 0 {
		right = append(right, m.treeView(l.tree)...)
	}
	if l.wire.h > 0 {
		right = append(right, m.wireView(l.wire)...)
	}
	switch {
	case left == nil && right == nil:
		return fitBlock([]string{m.st.s.Muted.Render(" no conversation open: press L for the list")}, m.w, l.body.h)
	case left == nil:
		return fitBlock(right, m.w, l.body.h)
	case right == nil:
		return fitBlock(left, m.w, l.body.h)
	}
	return hjoin(left, right)
}

func (m *Model) paneStyle(focused bool) (frameStyle, titleStyle lipgloss.Style) {
	if focused {
		return m.st.s.PaneFocused, m.st.s.PaneTitle
	}
	return m.st.s.Pane, m.st.s.Muted
}

func (m *Model) chatView(pr paneRect) []string {
	p := m.panes[pr.pane]
	focused := m.focus == focusChat && pr.pane == m.cur && m.overlay == overlayNone
	fs, ts := m.paneStyle(focused)
	body := p.view(m.rend(), pr.r.w-2, pr.r.h-2, focused)
	return frame(fs, ts, p.title(m.b.ModelName()), p.statusLine(), body, pr.r.w, pr.r.h)
}

func (m *Model) treeView(r rect) []string {
	focused := m.focus == focusTree
	fs, ts := m.paneStyle(focused)
	title := " calls "
	if _, t := m.selectedTurn(); t != nil {
		title = fmt.Sprintf(" calls · turn %d ", t.Index+1)
	}
	return frame(fs, ts, title, m.tree.footer(), m.tree.view(m.st, r.w-2, r.h-2, focused), r.w, r.h)
}

func (m *Model) wireView(r rect) []string {
	focused := m.focus == focusWire
	fs, ts := m.paneStyle(focused)
	w, h := r.w-2, r.h-2
	title := " wire · " + m.wireModeLabel() + " "
	var key string
	var build func() []string
	switch {
	case m.showDryRun():
		// "actual" means what was sent; before sending, strategy 0 is what enter will send
		mode := strategyLabel(m.strats, m.wire.strategy)
		if m.wire.strategy == 0 {
			mode = "as enter will send it"
		}
		title = " wire · dry run · " + mode + " "
		d := m.dry
		key = fmt.Sprintf("dry|%d|%d|%d|%v", d.version, d.strategy, w, d.err)
		build = func() []string {
			switch {
			case d.err != nil:
				return wrapLines(m.st.s.Error.Render("✗ ")+termtext.Sanitize(d.err.Error()), w)
			case d.version != m.input.version || d.rs == nil:
				return []string{m.st.s.Muted.Render("rendering the text being typed…")}
			}
			return singleLines(m.st, m.strats, d.rs, w)
		}
	default:
		reqs := m.wantedPreviews()
		if len(reqs) == 0 {
			msg := "select a turn to see its request"
			if c := m.tree.selected(); c != nil && isModuleRecord(c) {
				msg = fmt.Sprintf("%s is a module: it sends no request itself; select one of its %s in the call tree",
					termtext.OneLine(c.Path), count(len(c.Children), "inner call"))
			} else if _, t := m.selectedTurn(); t != nil {
				msg = fmt.Sprintf("turn %d made no model calls: nothing was sent", t.Index+1)
			}
			return frame(fs, ts, title, "", wrapLines(m.st.s.Muted.Render(msg), w), r.w, r.h)
		}
		var res []*previewResult
		for _, q := range reqs {
			k := previewKey(q)
			key += k + "#"
			res = append(res, m.previews[k])
		}
		key += fmt.Sprint(w)
		build = func() []string { return m.previewLines(res, w) }
	}
	body := m.wire.view(key, build, h)
	footer := fmt.Sprintf(" %d/%d ", min(m.wire.top+h, len(m.wire.memoLines)), len(m.wire.memoLines))
	return frame(fs, ts, title, footer, body, r.w, r.h)
}

func (m *Model) previewLines(res []*previewResult, w int) []string {
	for _, r := range res {
		switch {
		case r == nil || r.pending:
			return []string{m.st.s.Muted.Render("rendering…")}
		case r.err != nil:
			return wrapLines(m.st.s.Error.Render("✗ ")+termtext.Sanitize(r.err.Error()), w)
		}
	}
	if len(res) == 2 {
		return compareLines(m.st, m.strats, res[0].r, res[1].r, w)
	}
	return singleLines(m.st, m.strats, []sessions.Rendering{res[0].r}, w)
}

func (m *Model) inputView(r rect) []string {
	focused := m.focus == focusInput
	fs, ts := m.paneStyle(focused)
	title := " input "
	if m.agent.Name != "" {
		title = " " + termtext.OneLine(m.agent.Name) + " "
	}
	if m.input.editTurn != "" {
		title += "· editing: " + m.keys.Send.Help().Key + " resubmits as a new branch, " + m.keys.Cancel.Help().Key + " abandons "
	}
	k := m.keys
	footer := hints(as(k.Send, "send"), k.Newline, as(k.HistoryPrev, "history"))
	return frame(fs, ts, title, footer, m.input.view(m.st, r.w-2, r.h-2), r.w, r.h)
}

func (m *Model) statusLine() string {
	s := m.st.s
	text := m.status
	style := s.Status
	if m.statusErr {
		style = s.StatusErr
		text = "✗ " + text + "  (E: details)"
	}
	if m.run != nil {
		text = strings.TrimSuffix("● running · "+m.keys.Cancel.Help().Key+" cancels · "+text, " · ")
	}
	return style.Render(fit(" "+text, m.w))
}

func (m *Model) helpLine() string {
	m.help.SetWidth(m.w)
	return fit(m.help.ShortHelpView(m.contextHelp()), m.w)
}
