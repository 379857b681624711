package ui

import tea "charm.land/bubbletea/v2"

// The mouse: a click focuses the pane under it and selects the turn or call clicked;
// the wheel scrolls what is under the pointer. The mouse key turns capture off, so the
// terminal's own drag-select works, and on again.

// wheel scrolls whatever is under the mouse.
func (m *Model) wheel(msg tea.MouseWheelMsg) {
	if md := m.topModal(); md != nil {
		md.Update(msg)
		return
	}
	l := m.layout()
	x, y := msg.X, msg.Y
	for _, pr := range l.chats {
		if pr.r.contains(x, y) {
			m.panes[pr.pane].Update(msg)
			return
		}
	}
	if l.tree.contains(x, y) {
		m.tree.Update(msg)
	}
	if l.wire.contains(x, y) {
		m.wire.Update(msg)
	}
}

// click focuses the pane clicked and selects the row under the pointer.
func (m *Model) click(msg tea.MouseClickMsg) tea.Cmd {
	if msg.Button != tea.MouseLeft || m.topModal() != nil || m.resume.active() {
		return nil
	}
	l := m.layout()
	x, y := msg.X, msg.Y
	for _, pr := range l.chats {
		if pr.r.contains(x, y) {
			cmd := m.setFocus(focusChat, pr.pane)
			m.panes[pr.pane].click(y - pr.r.y - 1)
			return cmd
		}
	}
	switch {
	case l.tree.contains(x, y):
		cmd := m.setFocus(focusTree, 0)
		m.tree.click(y - l.tree.y - 1)
		return cmd
	case l.wire.contains(x, y):
		return m.setFocus(focusWire, 0)
	case l.input.contains(x, y):
		return m.setFocus(focusInput, 0)
	}
	return nil
}
