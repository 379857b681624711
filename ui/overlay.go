package ui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/sessionbench/sessionbench/core/sig"
)

// textOverlay is a scrollable page of text: a call's detail, the error log.
type textOverlay struct {
	title string
	lines []string
	top   int
}

func (t *textOverlay) scroll(delta, h int) {
	t.top = max(0, min(t.top+delta, len(t.lines)-h))
}

func (m *Model) openText(title string, lines []string) {
	m.text = textOverlay{title: title, lines: lines}
	m.overlay = overlayText
}

func (m *Model) openErrorLog() {
	if len(m.errLog) == 0 {
		m.setStatus("no errors")
		return
	}
	var ls []string
	for i := len(m.errLog) - 1; i >= 0; i-- {
		ls = append(ls, wrapLines(m.errLog[i], max(m.w-4, 10))...)
	}
	m.openText("errors (newest first)", ls)
}

// beginEdit puts a turn's inputs in the editor for edit-and-resubmit.
func (m *Model) beginEdit(turnID string, index int, inputs *sig.Map) tea.Cmd {
	m.input.set(inputs)
	m.input.editTurn = turnID
	m.overlay = overlayNone
	m.setStatus(fmt.Sprintf("editing turn %d: enter resubmits it as a new branch, esc abandons", index+1))
	return m.setFocus(focusInput, 0)
}

// overlayKey routes keys while an overlay is up. Esc closes any overlay.
func (m *Model) overlayKey(k tea.KeyPressMsg) tea.Cmd {
	switch m.overlay {
	case overlayBranches:
		return m.navKey(k)
	case overlayConvs:
		return m.convKey(k)
	case overlayReplay:
		return m.replayKey(k)
	case overlayCompare:
		if key.Matches(k, m.keys.Cancel) {
			m.overlay = overlayNone
			return nil
		}
		m.cmp.key(m, k)
		return nil
	}
	h := m.h - 4
	switch {
	case key.Matches(k, m.keys.Cancel), key.Matches(k, m.keys.Help):
		m.overlay = overlayNone
	case m.overlay != overlayText:
	case key.Matches(k, m.keys.Up):
		m.text.scroll(-1, h)
	case key.Matches(k, m.keys.Down):
		m.text.scroll(1, h)
	case key.Matches(k, m.keys.PageUp):
		m.text.scroll(-h, h)
	case key.Matches(k, m.keys.PgDown), k.String() == "space":
		m.text.scroll(h, h)
	case key.Matches(k, m.keys.Top):
		m.text.top = 0
	case key.Matches(k, m.keys.Bottom):
		m.text.scroll(1<<30, h)
	}
	return nil
}

// overlayInput forwards pasted text to an overlay's text field.
func (m *Model) overlayInput(msg tea.Msg) tea.Cmd {
	switch m.overlay {
	case overlayConvs:
		if m.cl != nil && m.cl.editing != editNone {
			var cmd tea.Cmd
			m.cl.field, cmd = m.cl.field.Update(msg)
			return cmd
		}
	case overlayReplay:
		if m.replay != nil {
			var cmd tea.Cmd
			m.replay.model, cmd = m.replay.model.Update(msg)
			return cmd
		}
	}
	return nil
}

// overlayView draws the overlay in the body area (w x h).
func (m *Model) overlayView(w, h int) []string {
	s := m.st.s
	switch m.overlay {
	case overlayText:
		t := &m.text
		t.scroll(0, h-2)
		end := min(len(t.lines), t.top+h-2)
		footer := fmt.Sprintf(" %d/%d · esc back ", end, len(t.lines))
		return frame(s.PaneFocused, s.PaneTitle, " "+t.title+" ", footer, indent(append([]string(nil), t.lines[t.top:end]...), " "), w, h)
	case overlayBranches:
		return m.navView(w, h)
	case overlayConvs:
		return m.convView(w, h)
	case overlayReplay:
		return m.replayView(w, h)
	case overlayCompare:
		return m.cmp.view(m, w, h)
	}
	return fitBlock(nil, w, h)
}

// helpNames head the FullHelp groups.
var helpNames = []string{"general", "branches & turns", "wire & panes", "moving", "conversation list"}

// openHelp shows every binding, grouped, packing as many groups side by side as fit.
func (m *Model) openHelp() {
	s := m.st.s
	w := m.w - 4
	var blocks [][]string
	for i, g := range m.keys.FullHelp() {
		b := []string{s.Title.Render(helpNames[i])}
		b = append(b, strings.Split(m.help.FullHelpView([][]key.Binding{g}), "\n")...)
		blocks = append(blocks, b)
	}
	lines := []string{s.Muted.Render("keys can be rebound in the config file's [keys] table · esc closes"), ""}
	var row [][]string
	used := 0
	flush := func() {
		if len(row) > 0 {
			lines = append(append(lines, hjoin(row...)...), "")
		}
		row, used = nil, 0
	}
	for _, b := range blocks {
		bw := 0
		for _, l := range b {
			bw = max(bw, ansi.StringWidth(l))
		}
		bw += 3
		if used+bw > w {
			flush()
		}
		row = append(row, fitBlock(b, bw, len(b)))
		used += bw
	}
	flush()
	m.openText("help", lines)
}
