package ui

import (
	"context"
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

type treeMsg struct {
	conv  string
	nodes []storage.TurnNode
	err   error
}

// navigator is the branch navigator: the conversation's turn tree, walked depth-first.
// A straight run of turns stays at one indentation; only a fork point indents its
// children, so a long linear conversation does not march off the right edge.
type navigator struct {
	nodes    []storage.TurnNode
	byID     map[string]int
	children map[string][]int // parent ID ("" = roots) -> node indices
	folded   map[string]bool
	tips     map[string][]string // turn ID -> branches whose tip it is
	onPath   map[string]string   // turn ID -> a branch whose path contains it
	active   string              // tip of the focused pane's branch
	rows     []navRow
	sel, top int
	loading  bool
}

type navRow struct {
	node   int
	indent int
	fork   bool // has more than one child
}

func (m *Model) openNavigator() tea.Cmd {
	if m.conv == nil {
		m.setStatus("no conversation open")
		return nil
	}
	m.nav = &navigator{loading: true, folded: map[string]bool{}}
	if p := m.pane(); p != nil {
		m.nav.active = p.info.Tip
	}
	m.overlay = overlayBranches
	ctx, b, conv := m.ctx, m.b, m.conv.ID
	return func() tea.Msg {
		nodes, err := b.TurnTree(ctx, conv)
		if err != nil {
			err = fmt.Errorf("turn tree: %w", err)
		}
		return treeMsg{conv: conv, nodes: nodes, err: err}
	}
}

func (n *navigator) setNodes(msg treeMsg, branches []sessions.BranchInfo) {
	n.loading = false
	n.nodes = msg.nodes
	n.byID = make(map[string]int, len(msg.nodes))
	n.children = map[string][]int{}
	for i, nd := range msg.nodes {
		n.byID[nd.Key] = i
		n.children[nd.Parent] = append(n.children[nd.Parent], i)
	}
	n.tips = map[string][]string{}
	n.onPath = map[string]string{}
	for _, b := range branches {
		if b.Tip == "" {
			continue
		}
		n.tips[b.Tip] = append(n.tips[b.Tip], b.Name)
		for id := b.Tip; id != ""; {
			if _, seen := n.onPath[id]; seen {
				break
			}
			n.onPath[id] = b.Name
			i, ok := n.byID[id]
			if !ok {
				break
			}
			id = n.nodes[i].Parent
		}
	}
	n.flatten()
	// start on the active tip
	for i, r := range n.rows {
		if n.nodes[r.node].Key == n.active {
			n.sel = i
		}
	}
}

// flatten lists the visible rows depth-first (iteratively: a path may be 100,000 deep).
func (n *navigator) flatten() {
	n.rows = n.rows[:0]
	type item struct{ node, indent int }
	var stack []item
	roots := n.children[""]
	rootIndent := 0
	if len(roots) > 1 {
		rootIndent = 1 // first turns edited and resubmitted: siblings like any fork's
	}
	for i := len(roots) - 1; i >= 0; i-- {
		stack = append(stack, item{roots[i], rootIndent})
	}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		nd := n.nodes[it.node]
		kids := n.children[nd.Key]
		n.rows = append(n.rows, navRow{node: it.node, indent: it.indent, fork: len(kids) > 1})
		if n.folded[nd.Key] {
			continue
		}
		ind := it.indent
		if len(kids) > 1 {
			ind++
		}
		for i := len(kids) - 1; i >= 0; i-- {
			stack = append(stack, item{kids[i], ind})
		}
	}
	n.sel = max(0, min(n.sel, len(n.rows)-1))
}

func (n *navigator) selected() *storage.TurnNode {
	if n.sel < 0 || n.sel >= len(n.rows) {
		return nil
	}
	return &n.nodes[n.rows[n.sel].node]
}

func (m *Model) navKey(k tea.KeyPressMsg) tea.Cmd {
	n := m.nav
	h := m.h - 6
	switch {
	case key.Matches(k, m.keys.Cancel), key.Matches(k, m.keys.Branches):
		m.overlay = overlayNone
		return nil
	case key.Matches(k, m.keys.Up):
		n.sel = max(0, n.sel-1)
	case key.Matches(k, m.keys.Down):
		n.sel = min(len(n.rows)-1, n.sel+1)
	case key.Matches(k, m.keys.PageUp):
		n.sel = max(0, n.sel-h)
	case key.Matches(k, m.keys.PgDown):
		n.sel = min(len(n.rows)-1, n.sel+h)
	case key.Matches(k, m.keys.Top):
		n.sel = 0
	case key.Matches(k, m.keys.Bottom):
		n.sel = len(n.rows) - 1
	case key.Matches(k, m.keys.Collapse), key.Matches(k, m.keys.Expand):
		if nd := n.selected(); nd != nil && len(n.children[nd.Key]) > 0 {
			n.folded[nd.Key] = key.Matches(k, m.keys.Collapse)
			n.flatten()
		}
	case key.Matches(k, m.keys.Send):
		return m.navSwitch()
	case key.Matches(k, m.keys.Fork):
		nd := n.selected()
		if nd == nil {
			return nil
		}
		m.overlay = overlayNone
		conv, id, idx := m.conv.ID, nd.Key, nd.Index
		return m.op(func(ctx context.Context, b Backend) opMsg {
			name, err := b.Fork(ctx, conv, id, "")
			if err != nil {
				return opMsg{err: fmt.Errorf("fork at turn %d: %w", idx+1, err)}
			}
			return opMsg{status: fmt.Sprintf("forked %s at turn %d", name, idx+1), reload: true, openBranch: name}
		})
	case key.Matches(k, m.keys.Edit):
		nd := n.selected()
		if nd == nil {
			return nil
		}
		ctx, b, conv, id, idx := m.ctx, m.b, m.conv.ID, nd.Key, nd.Index
		return func() tea.Msg {
			t, err := b.Turn(ctx, conv, id)
			if err != nil {
				return opMsg{err: fmt.Errorf("edit turn %d: %w", idx+1, err)}
			}
			return editMsg{turn: id, index: idx, inputs: inputsOf(t)}
		}
	}
	return nil
}

// navSwitch shows the selected turn's branch in the focused pane.
func (m *Model) navSwitch() tea.Cmd {
	nd := m.nav.selected()
	if nd == nil {
		return nil
	}
	branch := ""
	if names := m.nav.tips[nd.Key]; len(names) > 0 {
		branch = names[0]
	} else {
		branch = m.nav.onPath[nd.Key]
	}
	if branch == "" {
		m.setStatus("no branch reaches this turn: f forks one here")
		return nil
	}
	m.overlay = overlayNone
	for i, p := range m.panes {
		if p.branch == branch {
			m.cur, m.focus = i, focusChat
			m.selectOnPane(p, nd.Index)
			return nil
		}
	}
	p := m.pane()
	if p == nil {
		return m.openBranch(branch)
	}
	p.reset(branch)
	for _, bi := range m.branches {
		if bi.Name == branch {
			p.info = bi
		}
	}
	p.loading = true
	p.sel = nd.Index
	m.focus = focusChat
	m.setStatus("switched to " + termtext.OneLine(branch))
	return m.loadPage(p, max(0, nd.Index/pageSize*pageSize))
}

func (m *Model) selectOnPane(p *chatPane, index int) {
	r := m.chatRect()
	p.sel = index
	p.list.show(index, p.count(), r.h-2, func(i int) []string { return p.lines(m.rend(), i, r.w-3) })
}

// editMsg carries a turn's inputs into the editor.
type editMsg struct {
	turn   string
	index  int
	inputs *sig.Map
}

func (m *Model) navView(w, h int) []string {
	s := m.st.s
	n := m.nav
	bh := h - 2
	var body []string
	switch {
	case n.loading:
		body = []string{s.Muted.Render("loading the turn tree…")}
	case len(n.rows) == 0:
		body = []string{s.Muted.Render("no turns yet")}
	default:
		if n.sel < n.top {
			n.top = n.sel
		}
		if n.sel >= n.top+bh {
			n.top = n.sel - bh + 1
		}
		for i := n.top; i < len(n.rows) && len(body) < bh; i++ {
			body = append(body, n.rowView(m, i, w-2))
		}
	}
	k := m.keys
	footer := hints(as(k.Send, "switch"), k.Fork, k.Edit, as(k.Collapse, "fold"), as(k.Expand, "unfold"), as(k.Cancel, "back"))
	return frame(s.PaneFocused, s.PaneTitle, " branches · turn tree ", footer, body, w, h)
}

func (n *navigator) rowView(m *Model, i, w int) string {
	s := m.st.s
	r := n.rows[i]
	nd := n.nodes[r.node]
	ind := strings.Repeat("│ ", min(r.indent, 20))
	mark := "• "
	switch {
	case nd.Key == n.active:
		mark = "● "
	case r.fork && n.folded[nd.Key]:
		mark = "▸ "
	case r.fork:
		mark = "▾ "
	}
	// the number, branch tags and tip marker come before the text, so a narrow
	// terminal truncates the text, never them
	num := fmt.Sprintf("#%d ", nd.Index+1)
	tags := ""
	for _, b := range n.tips[nd.Key] {
		tags += "[" + termtext.OneLine(b) + "] "
	}
	if nd.Key == n.active {
		tags += "← active tip "
	}
	text := termtext.OneLine(nd.InputPreview)
	if nd.OutputPreview != "" {
		text += " → " + termtext.OneLine(nd.OutputPreview)
	}
	if i == n.sel {
		return s.Selected.Render(fit(ind+mark+num+tags+text, w))
	}
	return s.TreeBranch.Render(ind) + s.Accent.Render(mark) + s.Text.Render(num) + s.Tip.Render(tags) + s.Text.Render(text)
}
