package ui

import (
	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// The root's actions: what the keys that work everywhere open or change.

func (m *Model) openNavigator() tea.Cmd {
	if m.e.conv == nil {
		return m.e.say("no conversation open")
	}
	branch, active := "", ""
	if p := m.pane(); p != nil {
		branch, active = p.branch, p.info.Tip
	}
	n, load := newNavigator(m.e, branch, active)
	m.push(n)
	return load
}

func (m *Model) openConvList() tea.Cmd {
	m.push(newConvList(m.e, m.convs))
	return loadConversations(m.e, false)
}

func (m *Model) openReplay() tea.Cmd {
	p := m.pane()
	if p == nil || m.e.conv == nil {
		return m.e.say("no branch to replay")
	}
	from, idx := "", 0
	if p.sel >= 0 {
		if id, t := p.turnAt(p.sel); t != nil {
			from, idx = id, t.Index
		}
	}
	m.push(newReplayForm(m.e, p.branch, from, idx))
	return nil
}

// newPane opens a pane on the first branch without one.
func (m *Model) newPane() tea.Cmd {
	for _, bi := range m.e.branches {
		open := false
		for _, p := range m.panes {
			open = open || p.branch == bi.Name
		}
		if !open {
			return m.openBranch(bi.Name)
		}
	}
	return m.e.say("every branch has a pane: " + m.e.keys.Fork.Help().Key + " forks a new one from the selected turn")
}

func (m *Model) closePane() {
	if len(m.panes) <= 1 {
		m.e.status.set("the last pane stays open")
		return
	}
	m.panes = append(m.panes[:m.cur], m.panes[m.cur+1:]...)
	m.cur = min(m.cur, len(m.panes)-1)
}

// switchBranch shows branch in the focused pane (or focuses the pane that has it) with
// turn index selected.
func (m *Model) switchBranch(msg switchBranchMsg) tea.Cmd {
	for i, p := range m.panes {
		if p.branch == msg.branch {
			m.cur, m.focus = i, focusChat
			m.input.blur()
			p.selectAt(msg.index)
			if msg.kept != "" && !p.selectKept(msg.kept) {
				p.want = msg.kept // not among the kept turns read yet: read them again
				return p.load(-1)
			}
			return nil
		}
	}
	p := m.pane()
	if p == nil {
		return m.openBranch(msg.branch)
	}
	p.show(msg.branch)
	p.sel = msg.index
	m.focus = focusChat
	m.input.blur()
	m.e.status.set("switched to " + termtext.OneLine(msg.branch))
	if msg.kept != "" {
		// the kept turns come with the branch's last page; the page holding the turn the
		// kept one stands before follows as it scrolls into view
		p.want = msg.kept
		return p.load(-1)
	}
	return p.load(max(0, msg.index/pageSize*pageSize))
}

// openCompareSelected compares the call selected in the tree.
func (m *Model) openCompareSelected() tea.Cmd {
	id, t := m.selectedTurn()
	c := m.tree.selected()
	if t == nil || c == nil || isModuleRecord(c) {
		return m.e.say("select a call to compare (a turn, then a call in the tree)")
	}
	return m.openCompare(compareTarget{turn: id, call: c.ID})
}

// openCompare opens the compare view on a call of the focused pane's turn.
func (m *Model) openCompare(t compareTarget) tea.Cmd {
	p := m.pane()
	if p == nil {
		return nil
	}
	var turn *trace.Turn
	for i := range p.turns {
		if p.ids[i] == t.turn {
			turn = p.turns[i]
		}
	}
	if turn == nil {
		return m.e.say("that turn is no longer loaded")
	}
	var call *trace.Call
	trace.WalkCalls(turn.Calls, func(c *trace.Call, _ int) {
		if c.ID == t.call {
			call = c
		}
	})
	if call == nil || isModuleRecord(call) {
		return m.e.say("select a call to compare")
	}
	m.push(newCompareView(m.e, p.branch, t.turn, turn, call))
	return nil
}

// openHelp lists the keys of what has the focus first, then those that work everywhere.
func (m *Model) openHelp() {
	var groups []helpGroup
	if md := m.topModal(); md != nil {
		groups = append(groups, helpGroup{title: "here", keys: keysOf(md.bindings())})
	} else {
		switch m.focus {
		case focusInput:
			groups = append(groups, helpGroup{"editor", keysOf(m.input.bindings())})
		case focusChat:
			if p := m.pane(); p != nil {
				groups = append(groups, helpGroup{"transcript", keysOf(p.bindings())})
			}
		case focusTree:
			groups = append(groups, helpGroup{"call tree", keysOf(m.tree.bindings())})
		case focusWire:
			groups = append(groups, helpGroup{"wire pane", keysOf(m.wire.bindings())})
		}
		groups = append(groups, helpGroup{"everywhere but the editor", keysOf(m.globals())})
		if m.focus != focusChat {
			if p := m.pane(); p != nil {
				groups = append(groups, helpGroup{"transcript", keysOf(p.bindings())})
			}
		}
		if m.focus != focusTree {
			groups = append(groups, helpGroup{"call tree", keysOf(m.tree.bindings())})
		}
		if m.focus != focusInput {
			groups = append(groups, helpGroup{"editor", keysOf(m.input.bindings())})
		}
	}
	groups = append(groups, helpGroup{"always", keysOf(m.alwaysKeys())})
	m.push(newHelpView(m.e, groups))
}

// alwaysKeys work whatever has the focus.
func (m *Model) alwaysKeys() []binding {
	k := m.e.keys
	return []binding{
		bind(k.Quit, "quit", true, nil),
		bind(k.Cancel, "cancel the running turn · back", false, nil),
	}
}

func (m *Model) openErrorLog() {
	log := m.e.status.log
	if len(log) == 0 {
		m.e.status.set("no errors")
		return
	}
	m.push(newTextView(m.e, "errors (newest first)", func(w int) []string {
		var ls []string
		for i := len(log) - 1; i >= 0; i-- {
			ls = append(ls, wrapLines(log[i], w)...)
		}
		return ls
	}))
}

func (m *Model) toggleMouse() {
	m.mouse = !m.mouse
	k := m.e.keys.Mouse.Help().Key
	if m.mouse {
		m.e.status.set("mouse capture on: click focuses and selects, the wheel scrolls (" + k + " turns it off to select text)")
	} else {
		m.e.status.set("mouse capture off: drag selects text (" + k + " turns capture back on)")
	}
}

// push opens a modal over the panes (and over the modals already open).
func (m *Model) push(md modal) {
	m.modals = append(m.modals, md)
	m.input.blur()
	m.place()
}
