package ui

import (
	"context"
	"fmt"
	"io"
	"maps"
	"sort"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/list"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

type editMode int

const (
	editNone editMode = iota
	editRename
	editNew
	editConfirmDelete
)

// convList is the conversation list: title, agent, status, branches, turns, updated;
// open, new, rename, delete (confirmed), filter. The rows are a bubbles list (its
// filter included); the prompts below it are the list's own.
type convList struct {
	e       *env
	w, h    int
	list    list.Model
	editing editMode
	field   textinput.Model
	agent   int // agent for a new conversation
}

type (
	convsMsg struct {
		list  []sessions.ConversationInfo
		err   error
		start bool // the first load: open something
		poll  bool // read by the poll while the list is shown: a failure waits for the next
	}
	convOpenedMsg struct {
		conv     sessions.ConversationInfo
		branches []sessions.BranchInfo
		err      error
	}
)

// convItem is one conversation as a list item; the filter matches title and agent.
type convItem struct{ c sessions.ConversationInfo }

func (i convItem) FilterValue() string { return i.c.Title + " " + i.c.Agent }

func newConvList(e *env, convs []sessions.ConversationInfo) *convList {
	c := &convList{e: e, field: textinput.New()}
	c.list = list.New(nil, convDelegate{c: c}, 0, 0)
	c.list.SetShowTitle(false)
	c.list.SetShowFilter(false)
	c.list.SetShowStatusBar(false)
	c.list.SetShowHelp(false)
	c.list.DisableQuitKeybindings()
	k := e.keys
	km := &c.list.KeyMap
	km.CursorUp, km.CursorDown = k.Up, k.Down
	km.PrevPage, km.NextPage = k.PageUp, k.PgDown
	km.GoToStart, km.GoToEnd = k.Top, k.Bottom
	km.Filter = k.Filter
	km.ClearFilter = key.NewBinding(key.WithDisabled()) // esc leaves the list; / and enter on nothing clear
	km.CancelWhileFiltering, km.AcceptWhileFiltering = k.Cancel, k.Send
	km.ShowFullHelp, km.CloseFullHelp = key.NewBinding(key.WithDisabled()), key.NewBinding(key.WithDisabled())
	c.list.FilterInput.Prompt = ""
	steady(&c.list.FilterInput)
	steady(&c.field)
	c.setList(convs)
	return c
}

// setList replaces the rows, newest first. Rows that did not change are left alone (the
// poll brings the same list most of the time); otherwise the filter, if any, is applied
// again at once and the selected conversation stays selected, wherever it moved.
func (c *convList) setList(convs []sessions.ConversationInfo) tea.Cmd {
	sorted := append([]sessions.ConversationInfo(nil), convs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Updated.After(sorted[j].Updated) })
	old := c.list.Items()
	same := len(old) == len(sorted)
	items := make([]list.Item, len(sorted))
	for i, cv := range sorted {
		items[i] = convItem{cv}
		same = same && sameRow(old[i], cv)
	}
	if same {
		return nil
	}
	keep := ""
	if cv := c.selected(); cv != nil {
		keep = cv.ID
	}
	if cmd := c.list.SetItems(items); cmd != nil {
		// filtering is a pure function of the rows: done now, the selection can follow
		c.list, _ = c.list.Update(cmd())
	}
	for i, it := range c.list.VisibleItems() {
		if it.(convItem).c.ID == keep {
			c.list.Select(i)
		}
	}
	return nil
}

// sameRow reports whether a row would draw cv unchanged.
func sameRow(it list.Item, cv sessions.ConversationInfo) bool {
	o, ok := it.(convItem)
	return ok && o.c.ID == cv.ID && o.c.Title == cv.Title && o.c.Agent == cv.Agent && o.c.Status == cv.Status &&
		o.c.Branches == cv.Branches && o.c.Turns == cv.Turns && o.c.Updated.Equal(cv.Updated) && maps.Equal(o.c.Kept, cv.Kept)
}

func (c *convList) SetSize(w, h int) {
	c.w, c.h = w, h
	c.list.SetSize(max(w-2, 1), max(h-4, 1)) // frame, column header, prompt line
}

func (c *convList) selected() *sessions.ConversationInfo {
	if it, ok := c.list.SelectedItem().(convItem); ok {
		return &it.c
	}
	return nil
}

// bindings is the list's key table while browsing; editing and filtering own the keys.
func (c *convList) bindings() []binding {
	k := c.e.keys
	if c.editing != editNone || c.list.SettingFilter() {
		return []binding{
			bind(k.Send, "done", true, nil),
			bind(k.Cancel, "cancel", true, nil),
		}
	}
	table := []binding{
		bind(k.Send, "open", true, c.open),
		bind(k.New, "new", true, do(func() { c.startEdit(editNew, "") })),
		bind(k.Rename, "rename", true, do(func() {
			if cv := c.selected(); cv != nil {
				c.startEdit(editRename, cv.Title)
			}
		})),
		bind(k.Delete, "delete", true, do(func() {
			if c.selected() != nil {
				c.editing = editConfirmDelete
			}
		})),
		bind(k.Filter, "filter", true, nil), // the list's own
	}
	if c.e.conv != nil {
		table = append(table, closeBinding(c.e), bind(k.Conversations, "back", false, c.e.emitter(closeModalMsg{})))
	}
	return append(table, helpBinding(c.e))
}

func (c *convList) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		if c.editing != editNone {
			return c.editKey(msg)
		}
		if !c.list.SettingFilter() {
			if cmd, ok := dispatch(msg, c.bindings()); ok {
				return cmd
			}
		}
	case tea.PasteMsg:
		if c.editing != editNone {
			var cmd tea.Cmd
			c.field, cmd = c.field.Update(msg)
			return cmd
		}
	case convsMsg:
		// a refresh waits while a prompt is open: the prompt is about the selected row
		if msg.err == nil && (c.editing == editNone || !msg.poll) {
			return c.setList(msg.list)
		}
		return nil
	case list.FilterMatchesMsg:
		// the list filters in a command, one per key typed, whose answers may come in
		// any order: the matches for "e" after those for "e2e" showed rows "e2e" does
		// not match. The filter is applied at once instead (refilter); these are stale.
		return nil
	}
	var cmd tea.Cmd
	c.list, cmd = c.list.Update(msg)
	switch msg.(type) {
	case tea.KeyPressMsg, tea.PasteMsg:
		c.refilter()
	}
	return cmd
}

// refilter applies the list's filter to its rows now, as setList does.
func (c *convList) refilter() {
	if c.list.FilterState() == list.Unfiltered {
		return
	}
	if cmd := c.list.SetItems(c.list.Items()); cmd != nil {
		c.list, _ = c.list.Update(cmd())
	}
}

func (c *convList) open() tea.Cmd {
	cv := c.selected()
	if cv == nil {
		return nil
	}
	conv := *cv
	ctx, b := c.e.ctx, c.e.b
	return func() tea.Msg {
		br, err := b.Branches(ctx, conv.ID)
		if err != nil {
			err = fmt.Errorf("open conversation %q: %w", conv.Title, err)
		}
		return convOpenedMsg{conv: conv, branches: br, err: err}
	}
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

// editKey answers the prompts: the delete confirmation, the new title, the new name.
func (c *convList) editKey(k tea.KeyPressMsg) tea.Cmd {
	keys := c.e.keys
	if c.editing == editConfirmDelete {
		c.editing = editNone
		cv := c.selected()
		if !key.Matches(k, keys.Confirm) || cv == nil {
			return c.e.say("delete cancelled")
		}
		id, title := cv.ID, cv.Title
		return tea.Sequence(c.e.op(func(ctx context.Context, b Backend) opMsg {
			if err := b.DeleteConversation(ctx, id); err != nil {
				return opMsg{err: fmt.Errorf("delete %q: %w", title, err)}
			}
			return opMsg{status: "deleted " + termtext.OneLine(title), deleted: id}
		}), loadConversations(c.e, false))
	}
	switch {
	case key.Matches(k, keys.Cancel):
		c.editing = editNone
		c.field.Blur()
		return nil
	case c.editing == editNew && key.Matches(k, keys.NewAgent):
		if n := len(c.e.agents); n > 0 {
			c.agent = (c.agent + 1) % n
		}
		return nil
	case key.Matches(k, keys.Send):
		mode := c.editing
		c.editing = editNone
		c.field.Blur()
		val := c.field.Value()
		switch mode {
		case editNew:
			agent := ""
			if n := len(c.e.agents); n > 0 {
				agent = c.e.agents[c.agent%n].Name
			}
			if strings.TrimSpace(val) == "" {
				val = "untitled"
			}
			return newConversation(c.e, agent, val)
		case editRename:
			cv := c.selected()
			if cv == nil {
				return nil
			}
			id := cv.ID
			return tea.Sequence(c.e.op(func(ctx context.Context, b Backend) opMsg {
				if err := b.RenameConversation(ctx, id, val); err != nil {
					return opMsg{err: fmt.Errorf("rename: %w", err)}
				}
				return opMsg{status: "renamed to " + termtext.OneLine(val), renamed: id, title: val}
			}), loadConversations(c.e, false))
		}
		return nil
	}
	var cmd tea.Cmd
	c.field, cmd = c.field.Update(k)
	return cmd
}

func (c *convList) View() []string {
	s := c.e.st.s
	bw, bh := c.w-2, c.h-2
	body := []string{s.Muted.Render(fit(convRow(bw, "title", "agent", "status", "br", "turns", "updated"), bw))}
	if len(c.list.Items()) == 0 {
		body = append(body, s.Muted.Render("no conversations: "+c.e.keys.New.Help().Key+" starts one"))
	} else {
		body = append(body, strings.Split(c.list.View(), "\n")...)
	}
	body = fitBlock(body, bw, bh-1)
	var prompt string
	switch c.editing {
	case editRename:
		prompt = "rename to: " + c.field.View()
	case editNew:
		agent := "(none)"
		if n := len(c.e.agents); n > 0 {
			agent = termtext.OneLine(c.e.agents[c.agent%n].Name)
		}
		prompt = "new conversation with agent " + s.Accent.Render(agent) + " (" + c.e.keys.NewAgent.Help().Key + ": other agent) title: " + c.field.View()
	case editConfirmDelete:
		if cv := c.selected(); cv != nil {
			prompt = s.Error.Render(fmt.Sprintf("delete %q with all its branches and turns? %s to confirm, any other key cancels",
				termtext.OneLine(cv.Title), c.e.keys.Confirm.Help().Key))
		}
	default:
		if c.list.SettingFilter() {
			prompt = "filter: " + c.list.FilterInput.View()
		} else if f := c.list.FilterValue(); f != "" {
			prompt = s.Muted.Render("filter: " + termtext.Sanitize(f) + " (" + c.e.keys.Filter.Help().Key + " changes it)")
		}
	}
	body = append(body, prompt)
	title := fmt.Sprintf(" conversations (%d) ", len(c.list.VisibleItems()))
	return frame(s.PaneFocused, s.PaneTitle, title, hints(hintsOf(c.bindings())...), body, c.w, c.h)
}

// convRow lays out one row's columns for width w.
func convRow(w int, title, agent, status, branches, turns, updated string) string {
	tw := max(w-50, 10)
	return fmt.Sprintf("%-*s %-14s %-11s %4s %6s  %s", tw, fit(title, tw), fit(agent, 14), fit(status, 11), branches, turns, updated)
}

// convDelegate draws a conversation row: the selected one highlighted, the open one in
// the accent colour.
type convDelegate struct{ c *convList }

func (d convDelegate) Height() int                         { return 1 }
func (d convDelegate) Spacing() int                        { return 0 }
func (d convDelegate) Update(tea.Msg, *list.Model) tea.Cmd { return nil }

func (d convDelegate) Render(w io.Writer, m list.Model, index int, item list.Item) {
	it, ok := item.(convItem)
	if !ok {
		return
	}
	s := d.c.e.st.s
	cv := it.c
	bw := m.Width()
	line := fit(convRow(bw, termtext.OneLine(cv.Title)+keptCounts(cv.Kept), termtext.OneLine(cv.Agent), termtext.OneLine(string(cv.Status)), strconv.Itoa(cv.Branches),
		strconv.Itoa(cv.Turns), ago(cv.Updated)), bw)
	switch {
	case index == m.Index():
		line = s.Selected.Render(line)
	case d.c.e.conv != nil && cv.ID == d.c.e.conv.ID:
		line = s.Accent.Render(line)
	}
	_, _ = io.WriteString(w, line)
}

// loadConversations lists the conversations (start: the first load, which opens one).
func loadConversations(e *env, start bool) tea.Cmd {
	ctx, b := e.ctx, e.b
	return func() tea.Msg {
		list, err := b.Conversations(ctx)
		return convsMsg{list: list, err: err, start: start}
	}
}

// pollConversations is the poll's reading of the list (one query), while it is shown.
func pollConversations(e *env) tea.Cmd {
	ctx, b := e.ctx, e.b
	return func() tea.Msg {
		list, err := b.Conversations(ctx)
		return convsMsg{list: list, err: err, poll: true}
	}
}

// newConversation creates a conversation and opens it.
func newConversation(e *env, agent, title string) tea.Cmd {
	ctx, b := e.ctx, e.b
	return func() tea.Msg {
		c, err := b.NewConversation(ctx, agent, title)
		if err != nil {
			return convOpenedMsg{err: fmt.Errorf("new conversation: %w", err)}
		}
		br, err := b.Branches(ctx, c.ID)
		return convOpenedMsg{conv: c, branches: br, err: err}
	}
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

// steady stops a text field's cursor from blinking: a blink redraws twice a second and
// makes screens differ from one capture to the next.
func steady(t *textinput.Model) {
	st := t.Styles()
	st.Cursor.Blink = false
	t.SetStyles(st)
}
