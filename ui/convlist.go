package ui

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

type editMode int

const (
	editNone editMode = iota
	editFilter
	editRename
	editNew
	editConfirmDelete
)

// convList is the conversation list: title, agent, status, branches, turns, updated;
// new, open, rename, delete (confirmed), filter.
type convList struct {
	all      []sessions.ConversationInfo
	shown    []int // indices into all that pass the filter
	filter   string
	sel, top int
	editing  editMode
	field    textinput.Model
	agentIdx int // agent for a new conversation
}

func (m *Model) openConvList() {
	if m.cl == nil {
		m.cl = &convList{field: textinput.New()}
	}
	m.cl.setList(m.convs)
	m.overlay = overlayConvs
	m.input.blur()
}

func (c *convList) setList(list []sessions.ConversationInfo) {
	c.all = list
	c.applyFilter()
}

func (c *convList) applyFilter() {
	c.shown = c.shown[:0]
	f := strings.ToLower(c.filter)
	for i, cv := range c.all {
		if f == "" || strings.Contains(strings.ToLower(cv.Title+" "+cv.Agent+" "+cv.Status), f) {
			c.shown = append(c.shown, i)
		}
	}
	c.sel = max(0, min(c.sel, len(c.shown)-1))
}

func (c *convList) selected() *sessions.ConversationInfo {
	if c.sel < 0 || c.sel >= len(c.shown) {
		return nil
	}
	return &c.all[c.shown[c.sel]]
}

func (m *Model) convKey(k tea.KeyPressMsg) tea.Cmd {
	c := m.cl
	if c.editing != editNone {
		return m.convEditKey(k)
	}
	switch {
	case key.Matches(k, m.keys.Cancel), key.Matches(k, m.keys.Conversations):
		if m.conv != nil {
			m.overlay = overlayNone
			return m.setFocus(focusInput, 0)
		}
	case key.Matches(k, m.keys.Up):
		c.sel = max(0, c.sel-1)
	case key.Matches(k, m.keys.Down):
		c.sel = min(len(c.shown)-1, c.sel+1)
	case key.Matches(k, m.keys.Send):
		if cv := c.selected(); cv != nil {
			return m.openConversation(*cv)
		}
	case key.Matches(k, m.keys.New):
		c.startEdit(editNew, "")
	case key.Matches(k, m.keys.Rename):
		if cv := c.selected(); cv != nil {
			c.startEdit(editRename, cv.Title)
		}
	case key.Matches(k, m.keys.Delete):
		if c.selected() != nil {
			c.editing = editConfirmDelete
		}
	case key.Matches(k, m.keys.Filter):
		c.startEdit(editFilter, c.filter)
	}
	return nil
}

func (c *convList) startEdit(mode editMode, value string) {
	c.editing = mode
	c.field.Placeholder = ""
	c.field.SetWidth(0)
	if mode == editNew {
		c.field.Placeholder = "untitled" // typing replaces it; enter on nothing keeps it
		// textinput shows only the placeholder's first letter when it has no width
		c.field.SetWidth(40)
	}
	c.field.SetValue(value)
	c.field.CursorEnd()
	c.field.Focus()
}

func (m *Model) convEditKey(k tea.KeyPressMsg) tea.Cmd {
	c := m.cl
	if c.editing == editConfirmDelete {
		c.editing = editNone
		cv := c.selected()
		if !key.Matches(k, m.keys.Confirm) || cv == nil {
			m.setStatus("delete cancelled")
			return nil
		}
		id, title := cv.ID, cv.Title
		if m.conv != nil && m.conv.ID == id {
			m.conv, m.panes = nil, nil
		}
		return tea.Sequence(m.op(func(ctx context.Context, b Backend) opMsg {
			if err := b.DeleteConversation(ctx, id); err != nil {
				return opMsg{err: fmt.Errorf("delete %q: %w", title, err)}
			}
			return opMsg{status: "deleted " + termtext.OneLine(title)}
		}), m.loadConversations(false))
	}
	switch {
	case key.Matches(k, m.keys.Cancel):
		c.editing = editNone
		c.field.Blur()
		return nil
	case c.editing == editNew && (k.String() == "tab" || k.String() == "shift+tab"):
		if n := len(m.b.Agents()); n > 0 {
			c.agentIdx = (c.agentIdx + 1) % n
		}
		return nil
	case k.String() == "enter":
		mode := c.editing
		c.editing = editNone
		c.field.Blur()
		val := c.field.Value()
		switch mode {
		case editFilter:
			c.filter = val
			c.applyFilter()
		case editNew:
			agent := ""
			if ags := m.b.Agents(); len(ags) > 0 {
				agent = ags[c.agentIdx%len(ags)].Name
			}
			if strings.TrimSpace(val) == "" {
				val = "untitled"
			}
			return m.newConversation(agent, val)
		case editRename:
			cv := c.selected()
			if cv == nil {
				return nil
			}
			id := cv.ID
			if m.conv != nil && m.conv.ID == id {
				m.conv.Title = val
			}
			return tea.Sequence(m.op(func(ctx context.Context, b Backend) opMsg {
				if err := b.RenameConversation(ctx, id, val); err != nil {
					return opMsg{err: fmt.Errorf("rename: %w", err)}
				}
				return opMsg{status: "renamed to " + termtext.OneLine(val)}
			}), m.loadConversations(false))
		}
		return nil
	}
	var cmd tea.Cmd
	c.field, cmd = c.field.Update(k)
	if c.editing == editFilter {
		c.filter = c.field.Value()
		c.applyFilter()
	}
	return cmd
}

func (m *Model) convView(w, h int) []string {
	s := m.st.s
	c := m.cl
	bw, bh := w-2, h-2
	var body []string
	hdr := fmt.Sprintf("%-*s %-14s %-11s %4s %6s  %s", max(bw-50, 10), "title", "agent", "status", "br", "turns", "updated")
	body = append(body, s.Muted.Render(fit(hdr, bw)))
	rows := bh - 2
	if c.sel < c.top {
		c.top = c.sel
	}
	if c.sel >= c.top+rows {
		c.top = c.sel - rows + 1
	}
	if len(c.shown) == 0 {
		body = append(body, s.Muted.Render("no conversations: n starts one"))
	}
	for i := c.top; i < len(c.shown) && len(body) < rows+1; i++ {
		cv := c.all[c.shown[i]]
		line := fmt.Sprintf("%-*s %-14s %-11s %4d %6d  %s", max(bw-50, 10), fit(termtext.OneLine(cv.Title), max(bw-50, 10)),
			fit(termtext.OneLine(cv.Agent), 14), fit(termtext.OneLine(cv.Status), 11), cv.Branches, cv.Turns, ago(cv.Updated))
		if i == c.sel {
			line = s.Selected.Render(fit(line, bw))
		}
		if m.conv != nil && cv.ID == m.conv.ID && i != c.sel {
			line = s.Accent.Render(line)
		}
		body = append(body, line)
	}
	body = fitBlock(body, bw, bh-1)
	var prompt string
	switch c.editing {
	case editFilter:
		prompt = "filter: " + c.field.View()
	case editRename:
		prompt = "rename to: " + c.field.View()
	case editNew:
		agent := "(none)"
		if ags := m.b.Agents(); len(ags) > 0 {
			agent = termtext.OneLine(ags[c.agentIdx%len(ags)].Name)
		}
		prompt = "new conversation with agent " + s.Accent.Render(agent) + " (tab: other agent) title: " + c.field.View()
	case editConfirmDelete:
		if cv := c.selected(); cv != nil {
			prompt = s.Error.Render(fmt.Sprintf("delete %q with all its branches and turns? y to confirm, any other key cancels", termtext.OneLine(cv.Title)))
		}
	default:
		if c.filter != "" {
			prompt = s.Muted.Render("filter: " + termtext.Sanitize(c.filter))
		}
	}
	body = append(body, prompt)
	k := m.keys
	footer := hints(as(k.Send, "open"), k.New, k.Rename, k.Delete, k.Filter, as(k.Cancel, "back"))
	return frame(s.PaneFocused, s.PaneTitle, fmt.Sprintf(" conversations (%d) ", len(c.shown)), footer, body, w, h)
}

// ago is a compact relative time.
func ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m ago"
	case d < 24*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h ago"
	}
	return t.Format("2006-01-02")
}
