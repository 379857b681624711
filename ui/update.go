package ui

import (
	"context"
	"fmt"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// handleResult applies the result of a command.
func (m *Model) handleResult(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case convsMsg:
		if msg.err != nil {
			m.setError(fmt.Errorf("list conversations: %w", msg.err))
			return nil
		}
		m.convs = msg.list
		if m.cl != nil {
			m.cl.setList(msg.list)
		}
		if msg.start && m.conv == nil {
			if len(msg.list) == 0 {
				return m.newConversation(m.agent.Name, "untitled")
			}
			m.openConvList()
		}
	case convOpenedMsg:
		if msg.err != nil {
			m.setError(msg.err)
			return nil
		}
		return m.applyOpened(msg)
	case branchesMsg:
		if msg.err != nil {
			m.setError(fmt.Errorf("branches: %w", msg.err))
			return nil
		}
		if m.conv == nil || msg.conv != m.conv.ID {
			return nil
		}
		m.branches = msg.list
		for _, p := range m.panes {
			for _, bi := range msg.list {
				if bi.Name == p.branch {
					p.info = bi
				}
			}
		}
	case pageMsg:
		if msg.pane.branch != msg.branch || msg.gen != msg.pane.gen {
			return nil // the pane changed branch or reloaded since
		}
		if msg.err != nil {
			msg.pane.loading = false
			m.setError(msg.err)
			return nil
		}
		msg.pane.setPage(msg.page)
	case pendingMsg:
		return m.onPending(msg)
	case runEventMsg:
		return m.onRunEvent(msg)
	case runDoneMsg:
		return m.onRunDone(msg)
	case retryTickMsg:
		if m.run != nil && m.run.id == msg.id && m.run.pane.stream != nil {
			st := m.run.pane.stream
			if st.try.Retrying && time.Now().Before(st.retryAt) {
				return m.retryTick(msg.id)
			}
		}
	case previewMsg:
		r := &previewResult{r: msg.r, err: msg.err}
		m.previews[msg.key] = r
		m.wire.memoKey = ""
	case dryTickMsg:
		if msg.version == m.input.version {
			return m.runDryRun()
		}
	case dryMsg:
		m.dry = dryState{version: msg.version, strategy: msg.strategy, rs: msg.rs, err: msg.err}
		m.wire.memoKey = ""
	case opMsg:
		if msg.err != nil {
			m.setError(msg.err)
			return nil
		}
		if msg.status != "" {
			m.setStatus(msg.status)
		}
		var cmds []tea.Cmd
		if msg.reload {
			cmds = append(cmds, m.reloadAll())
		}
		if msg.openBranch != "" {
			cmds = append(cmds, m.openBranch(msg.openBranch))
		}
		return tea.Batch(cmds...)
	case editMsg:
		return m.beginEdit(msg.turn, msg.index, msg.inputs)
	case treeMsg:
		if m.nav != nil {
			m.nav.setNodes(msg, m.branches)
		}
		if msg.err != nil {
			m.setError(msg.err)
		}
	case compareMsg:
		if m.cmp != nil {
			m.cmp.apply(msg)
		}
		if msg.err != nil {
			m.setError(msg.err)
		}
	}
	return nil
}

func (m *Model) applyOpened(msg convOpenedMsg) tea.Cmd {
	c := msg.conv
	m.conv = &c
	m.branches = msg.branches
	for _, a := range m.b.Agents() {
		if a.Name == c.Agent {
			m.agent = a
		}
	}
	m.input = newInputPane(m.agent, m.keys)
	m.panes = nil
	m.previews = map[string]*previewResult{}
	m.tree.set("", nil)
	m.overlay = overlayNone
	main := "main"
	if len(msg.branches) > 0 {
		main = msg.branches[0].Name
		for _, b := range msg.branches {
			if b.Name == "main" {
				main = "main"
			}
		}
	}
	cmd := m.openBranch(main)
	m.focus = focusInput
	m.setStatus("opened " + termtext.OneLine(c.Title))
	return tea.Batch(cmd, m.input.focus(), m.afterOpen(c.ID))
}

// reloadAll refreshes branches and every pane (after undo, redo, fork). The panes stay
// the same objects, so a turn running in one keeps streaming there and lands there;
// they show their old turns until the fresh pages replace them.
func (m *Model) reloadAll() tea.Cmd {
	cmds := []tea.Cmd{m.loadBranches()}
	for _, p := range m.panes {
		p.loading = true
		cmds = append(cmds, m.loadPage(p, -1))
	}
	m.previews = map[string]*previewResult{}
	return tea.Batch(cmds...)
}

// handleKey routes a key press: overlays first, then global keys, then the focused pane.
func (m *Model) handleKey(k tea.KeyPressMsg) tea.Cmd {
	if key.Matches(k, m.keys.Quit) {
		if m.run != nil {
			m.cancelRun()
		}
		m.quitting = true
		return nil
	}
	if m.resumeActive() {
		return m.resumeKey(k)
	}
	if m.overlay != overlayNone {
		return m.overlayKey(k)
	}
	switch {
	case key.Matches(k, m.keys.Cancel):
		if m.run != nil {
			m.cancelRun()
			return nil
		}
		if m.focus == focusInput {
			if m.input.editTurn != "" {
				m.input.clear()
				m.setStatus("edit abandoned")
				return nil
			}
			return m.setFocus(focusChat, m.cur)
		}
		return m.setFocus(focusInput, 0)
	case key.Matches(k, m.keys.Focus):
		if m.focus == focusInput && m.input.next(1) {
			return nil
		}
		return m.cycleFocus(1)
	case key.Matches(k, m.keys.FocusBack):
		if m.focus == focusInput && m.input.next(-1) {
			return nil
		}
		return m.cycleFocus(-1)
	}
	if m.focus == focusInput {
		switch {
		case key.Matches(k, m.keys.Send):
			return m.send()
		case key.Matches(k, m.keys.HistoryPrev):
			m.input.recall(-1)
			return nil
		case key.Matches(k, m.keys.HistoryNext):
			m.input.recall(1)
			return nil
		case k.String() == "up" && m.input.atHistoryEdge(-1):
			m.input.recall(-1)
			return nil
		case k.String() == "down" && m.input.atHistoryEdge(1):
			m.input.recall(1)
			return nil
		}
		cmd := m.input.update(k)
		return tea.Batch(cmd, m.scheduleDryRun())
	}
	if cmd, ok := m.globalKey(k); ok {
		return cmd
	}
	switch m.focus {
	case focusChat:
		return m.chatKey(k)
	case focusTree:
		return m.treeKey(k)
	case focusWire:
		m.wireKey(k)
	}
	return nil
}

// globalKey handles the letter keys that work in every pane but the editor.
func (m *Model) globalKey(k tea.KeyPressMsg) (tea.Cmd, bool) {
	switch {
	case key.Matches(k, m.keys.Help):
		m.openHelp()
	case key.Matches(k, m.keys.ToggleTree):
		m.showTree = !m.showTree
		if !m.showTree && m.focus == focusTree {
			m.focus = focusChat
		}
	case key.Matches(k, m.keys.ToggleWire):
		m.showWire = !m.showWire
		if !m.showWire && m.focus == focusWire {
			m.focus = focusChat
		}
	case key.Matches(k, m.keys.Strategy):
		m.wire.compare = false
		m.wire.cycle(len(m.strats))
		m.setStatus("wire: " + strategyLabel(m.strats, m.wire.strategy))
	case key.Matches(k, m.keys.Compare):
		m.toggleCompare()
	case key.Matches(k, m.keys.Actual):
		m.wire.compare, m.wire.strategy = false, 0
		m.setStatus("wire: actual request")
	case key.Matches(k, m.keys.ErrorDetail):
		m.openErrorLog()
	case key.Matches(k, m.keys.Branches):
		return m.openNavigator(), true
	case key.Matches(k, m.keys.Conversations):
		m.openConvList()
		return m.loadConversations(false), true
	case key.Matches(k, m.keys.Replay):
		m.openReplay()
	case key.Matches(k, m.keys.NewPane):
		return m.newPane(), true
	case key.Matches(k, m.keys.ClosePane):
		m.closePane()
	default:
		return nil, false
	}
	return nil, true
}

// toggleCompare switches the wire pane to two strategies side by side; pressed again
// while comparing, it moves the right-hand strategy on.
func (m *Model) toggleCompare() {
	n := len(m.strats)
	if n < 2 {
		m.setStatus("compare needs two strategies")
		return
	}
	if !m.wire.compare {
		m.wire.compare = true
	} else {
		m.wire.cmpB = m.wire.cmpB%n + 1
		if m.wire.cmpB == m.wire.cmpA {
			m.wire.cmpB = m.wire.cmpB%n + 1
		}
	}
	m.wire.top = 0
	m.setStatus(fmt.Sprintf("wire: %s vs %s", strategyLabel(m.strats, m.wire.cmpA), strategyLabel(m.strats, m.wire.cmpB)))
}

func (m *Model) newPane() tea.Cmd {
	for _, bi := range m.branches {
		open := false
		for _, p := range m.panes {
			open = open || p.branch == bi.Name
		}
		if !open {
			return m.openBranch(bi.Name)
		}
	}
	m.setStatus("every branch has a pane: f forks a new one from the selected turn")
	return nil
}

func (m *Model) closePane() {
	if len(m.panes) <= 1 {
		m.setStatus("the last pane stays open")
		return
	}
	m.panes = append(m.panes[:m.cur], m.panes[m.cur+1:]...)
	m.cur = min(m.cur, len(m.panes)-1)
}

func (m *Model) chatKey(k tea.KeyPressMsg) tea.Cmd {
	p := m.pane()
	if p == nil {
		return nil
	}
	r := m.chatRect()
	w, h := r.w-2, r.h-2
	lf := func(i int) []string { return p.lines(m.rend(), i, w-1) }
	switch {
	case key.Matches(k, m.keys.Up):
		p.selectTurn(m.rend(), -1, w, h)
	case key.Matches(k, m.keys.Down):
		p.selectTurn(m.rend(), 1, w, h)
	case key.Matches(k, m.keys.PageUp):
		p.list.scroll(-h, p.count(), h, lf)
	case key.Matches(k, m.keys.PgDown):
		p.list.scroll(h, p.count(), h, lf)
	case key.Matches(k, m.keys.Top):
		p.sel = 0
		p.list = vlist{}
	case key.Matches(k, m.keys.Bottom):
		p.sel = p.total - 1
		p.list = vlist{follow: true}
	case key.Matches(k, m.keys.Send):
		if m.showTree {
			return m.setFocus(focusTree, 0)
		}
	case key.Matches(k, m.keys.Fork):
		return m.fork()
	case key.Matches(k, m.keys.Undo), key.Matches(k, m.keys.UndoCascade):
		return m.undo(key.Matches(k, m.keys.UndoCascade))
	case key.Matches(k, m.keys.Redo):
		return m.redo()
	case key.Matches(k, m.keys.Edit):
		return m.editSelected()
	}
	return nil
}

func (m *Model) fork() tea.Cmd {
	id, t := m.selectedTurn()
	if t == nil || m.conv == nil {
		m.setStatus("select a turn to fork from")
		return nil
	}
	conv, idx := m.conv.ID, t.Index
	return m.op(func(ctx context.Context, b Backend) opMsg {
		name, err := b.Fork(ctx, conv, id, "")
		if err != nil {
			return opMsg{err: fmt.Errorf("fork at turn %d: %w", idx+1, err)}
		}
		return opMsg{status: fmt.Sprintf("forked %s at turn %d", name, idx+1), reload: true, openBranch: name}
	})
}

// busy reports a running turn in the status line: undo and redo wait for it (they
// would move the branch tip under it).
func (m *Model) busy() bool {
	if m.run == nil {
		return false
	}
	m.setStatus("undo and redo wait for the running turn (esc cancels it)")
	return true
}

func (m *Model) undo(cascade bool) tea.Cmd {
	p := m.pane()
	if p == nil || m.conv == nil || m.busy() {
		return nil
	}
	conv, branch := m.conv.ID, p.branch
	return m.op(func(ctx context.Context, b Backend) opMsg {
		res, err := b.Undo(ctx, conv, branch, 1, cascade)
		if err != nil {
			return opMsg{err: fmt.Errorf("undo on %s: %w", branch, err)}
		}
		s := fmt.Sprintf("undid %d turn(s) on %s", res.Turns, branch)
		if cascade {
			s += fmt.Sprintf(", cascading to %d inner predictor turn(s)", res.Calls)
		}
		return opMsg{status: s + " · r redoes", reload: true}
	})
}

func (m *Model) redo() tea.Cmd {
	p := m.pane()
	if p == nil || m.conv == nil || m.busy() {
		return nil
	}
	conv, branch := m.conv.ID, p.branch
	return m.op(func(ctx context.Context, b Backend) opMsg {
		if err := b.Redo(ctx, conv, branch, 1); err != nil {
			return opMsg{err: fmt.Errorf("redo on %s: %w", branch, err)}
		}
		return opMsg{status: "redid 1 turn on " + branch, reload: true}
	})
}

// editSelected loads the selected turn's inputs into the editor; enter then resubmits
// them as a sibling branch.
func (m *Model) editSelected() tea.Cmd {
	id, t := m.selectedTurn()
	if t == nil {
		m.setStatus("select a turn to edit")
		return nil
	}
	return m.beginEdit(id, t.Index, inputsOf(t))
}

func (m *Model) treeKey(k tea.KeyPressMsg) tea.Cmd {
	h := m.treeRect().h - 2
	open, shut := true, false
	switch {
	case key.Matches(k, m.keys.Up):
		m.tree.move(-1, h)
	case key.Matches(k, m.keys.Down):
		m.tree.move(1, h)
	case key.Matches(k, m.keys.PageUp):
		m.tree.move(-h, h)
	case key.Matches(k, m.keys.PgDown):
		m.tree.move(h, h)
	case key.Matches(k, m.keys.Expand):
		m.tree.toggle(&open)
	case key.Matches(k, m.keys.Collapse):
		m.tree.toggle(&shut)
	case key.Matches(k, m.keys.ExpandAll):
		m.tree.setAll(true)
	case key.Matches(k, m.keys.CollapseAll):
		m.tree.setAll(false)
	case key.Matches(k, m.keys.Send):
		if c := m.tree.selected(); c != nil {
			m.openText("call "+termtext.OneLine(c.Path), callDetail(m.st, c, max(m.w-6, 20)))
		}
	}
	return nil
}

func (m *Model) wireKey(k tea.KeyPressMsg) {
	h := m.wireRect().h - 2
	switch {
	case key.Matches(k, m.keys.Up):
		m.wire.scroll(-1, h)
	case key.Matches(k, m.keys.Down):
		m.wire.scroll(1, h)
	case key.Matches(k, m.keys.PageUp):
		m.wire.scroll(-h, h)
	case key.Matches(k, m.keys.PgDown):
		m.wire.scroll(h, h)
	case key.Matches(k, m.keys.Top):
		m.wire.top = 0
	case key.Matches(k, m.keys.Bottom):
		m.wire.scroll(1<<30, h)
	}
}

// handleWheel scrolls whatever is under the mouse.
func (m *Model) handleWheel(msg tea.MouseWheelMsg) {
	delta := 3
	if msg.Button == tea.MouseWheelUp {
		delta = -3
	}
	if m.overlay == overlayText {
		m.text.scroll(delta, m.h-4)
		return
	}
	lay := m.layout()
	x, y := msg.X, msg.Y
	for _, pr := range lay.chats {
		if pr.r.contains(x, y) {
			p := m.panes[pr.pane]
			w, h := pr.r.w-2, pr.r.h-2
			p.list.scroll(delta, p.count(), h, func(i int) []string { return p.lines(m.rend(), i, w-1) })
			return
		}
	}
	if lay.tree.contains(x, y) {
		m.tree.move(delta, lay.tree.h-2)
	}
	if lay.wire.contains(x, y) {
		m.wire.scroll(delta, lay.wire.h-2)
	}
}
