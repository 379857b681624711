package ui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// treeMsg is a page of the turn tree for navigator nav; next is the turn to continue
// after ("" when it was the last page).
type treeMsg struct {
	nav   *navigator
	conv  string
	nodes []storage.TurnNode
	next  string
	err   error
}

// navPage is how many turns a page of the turn tree holds.
const navPage = 2000

// navigator is the branch navigator: the conversation's turn tree, walked depth-first.
// A straight run of turns stays at one indentation; only a fork point indents its
// children, so a long linear conversation does not march off the right edge. A turn kept
// beside its branch (failed, cancelled, interrupted: trace.Status) is a leaf drawn with
// its mark under the turn it followed, one step in, before the turns that went on; it
// makes no fork.
type navigator struct {
	e        *env
	w, h     int
	nodes    []storage.TurnNode
	byID     map[string]int
	children map[string][]int // parent ID ("" = roots) -> node indices
	folded   map[string]bool
	tips     map[string][]string // turn ID -> branches whose tip it is
	onPath   map[string]string   // turn ID -> a branch whose path contains it
	allTips  bool                // every branch's tip is among nodes (onPath is whole)
	active   string              // tip of the focused pane's branch
	activeBr string              // that branch: the tip follows the branch list
	rows     []navRow
	sel, top int
	loading  bool
	onTip    bool // the selection was put on the active tip
}

type navRow struct {
	node   int
	indent int
	fork   bool // has more than one child
}

// switchBranchMsg asks the root to show branch in the focused pane with turn index
// selected (enter in the navigator).
type switchBranchMsg struct {
	branch string
	index  int
	kept   string // a kept turn to select instead (it stands at index, beside the branch)
}

// newNavigator opens on the tip of the branch active (the focused pane's) and returns
// the command loading the tree.
func newNavigator(e *env, branch, active string) (*navigator, tea.Cmd) {
	n := &navigator{e: e, loading: true, folded: map[string]bool{}, active: active, activeBr: branch}
	return n, n.page("")
}

// page loads the page of the tree after turn after: the tree arrives page by page, drawn
// as it comes, so a long conversation's navigator opens at once.
func (n *navigator) page(after string) tea.Cmd {
	ctx, b, conv := n.e.ctx, n.e.b, n.e.convID()
	return func() tea.Msg {
		nodes, next, err := b.TurnTreePage(ctx, conv, after, navPage)
		if err != nil {
			err = fmt.Errorf("turn tree: %w", err)
		}
		return treeMsg{nav: n, conv: conv, nodes: nodes, next: next, err: err}
	}
}

func (n *navigator) SetSize(w, h int) { n.w, n.h = w, h }

func (n *navigator) bindings() []binding {
	k := n.e.keys
	bh := func() int { return max(n.h-2, 1) }
	move := func(d int) func() tea.Cmd {
		return do(func() { n.sel = max(0, min(len(n.rows)-1, n.sel+d)) })
	}
	notKept := func(what string, f func() tea.Cmd) func() tea.Cmd {
		return func() tea.Cmd {
			if nd := n.selected(); nd != nil && nd.Status != trace.StatusCompleted {
				return n.e.say(fmt.Sprintf("a %s turn is on no branch, so it cannot be %s: %s shows it where it happened",
					nd.Status, what, k.Send.Help().Key))
			}
			return f()
		}
	}
	fold := func(shut bool) func() tea.Cmd {
		return do(func() {
			if nd := n.selected(); nd != nil && len(n.children[nd.Key]) > 0 {
				n.folded[nd.Key] = shut
				n.flatten()
			}
		})
	}
	return []binding{
		bind(k.Send, "switch", true, n.switchTo),
		bind(k.Fork, "fork", true, notKept("forked from", n.fork)),
		bind(k.Edit, "edit & resubmit", true, notKept("resubmitted from here", n.edit)),
		bind(k.Collapse, "fold", true, fold(true)),
		bind(k.Expand, "unfold", true, fold(false)),
		bind(k.Up, "up", false, move(-1)),
		bind(k.Down, "down", false, move(1)),
		bind(k.PageUp, "page up", false, func() tea.Cmd { return move(-bh())() }),
		bind(k.PgDown, "page down", false, func() tea.Cmd { return move(bh())() }),
		bind(k.Top, "first turn", false, do(func() { n.sel = 0 })),
		bind(k.Bottom, "last turn", false, do(func() { n.sel = len(n.rows) - 1 })),
		closeBinding(n.e),
		bind(k.Branches, "back", false, n.e.emitter(closeModalMsg{})),
		helpBinding(n.e),
	}
}

func (n *navigator) Update(msg tea.Msg) tea.Cmd {
	if cmd, ok := keyOrWheel(msg, n.bindings(), func(d int) { n.sel = max(0, min(len(n.rows)-1, n.sel+d)) }); ok {
		return cmd
	}
	switch msg := msg.(type) {
	case treeMsg:
		if msg.nav != n {
			return nil // a page asked for by a navigator closed since
		}
		if msg.err != nil {
			n.loading = false
			return n.e.fail(msg.err)
		}
		n.setNodes(append(n.nodes, msg.nodes...), n.e.branches)
		if msg.next != "" {
			n.loading = true
			return n.page(msg.next)
		}
	}
	return nil
}

func (n *navigator) fork() tea.Cmd {
	nd := n.selected()
	if nd == nil {
		return nil
	}
	n.e.emit(closeModalMsg{})
	return forkCmd(n.e, n.e.convID(), nd.Key, nd.Index)
}

func (n *navigator) edit() tea.Cmd {
	nd := n.selected()
	if nd == nil {
		return nil
	}
	ctx, b, conv, id, idx := n.e.ctx, n.e.b, n.e.convID(), nd.Key, nd.Index
	return func() tea.Msg {
		t, err := b.Turn(ctx, conv, id)
		if err != nil {
			return opMsg{err: fmt.Errorf("edit %s: %w", turnLabel(idx), err)}
		}
		return editMsg{turn: id, index: idx, inputs: t.Inputs.Clone()}
	}
}

// switchTo shows the selected turn's branch in the focused pane.
func (n *navigator) switchTo() tea.Cmd {
	nd := n.selected()
	if nd == nil {
		return nil
	}
	msg := switchBranchMsg{index: nd.Index}
	if nd.Status != trace.StatusCompleted {
		// kept beside the branches that reach the turn it followed: shown in one of them
		msg.kept = nd.Key
		msg.branch = n.onPath[nd.Parent]
		if nd.Parent == "" {
			msg.branch = n.onPath[n.active] // a first turn: beside every branch
		}
		if msg.branch == "" {
			return n.e.say("no branch reaches the turn it followed")
		}
	} else {
		msg.branch = n.onPath[nd.Key]
		if names := n.tips[nd.Key]; len(names) > 0 {
			msg.branch = names[0]
		}
	}
	if msg.branch == "" {
		return n.e.say("no branch reaches this turn: " + n.e.keys.Fork.Help().Key + " forks one here")
	}
	n.e.emit(closeModalMsg{})
	n.e.emit(msg)
	return nil
}

// setNodes shows nodes, which extend the nodes shown (a later page) or replace them.
func (n *navigator) setNodes(nodes []storage.TurnNode, branches []sessions.BranchInfo) {
	n.loading = false
	from := len(n.nodes)
	if n.byID == nil || from > len(nodes) {
		n.byID, n.children, from = make(map[string]int, len(nodes)), map[string][]int{}, 0
	}
	n.nodes = nodes
	for i, nd := range nodes[from:] {
		n.byID[nd.Key] = from + i
		n.children[nd.Parent] = append(n.children[nd.Parent], from+i)
	}
	n.setBranches(branches)
}

// setBranches marks the branches' tips and the turns on their paths, and redraws: after
// each page, and when the branch list changes under the open navigator (an undo, a redo,
// a fork, another process's turn).
func (n *navigator) setBranches(branches []sessions.BranchInfo) {
	n.tips = map[string][]string{}
	n.onPath = map[string]string{}
	n.allTips = true
	for _, b := range branches {
		if b.Name == n.activeBr {
			n.active = b.Tip
		}
		if b.Tip == "" {
			continue
		}
		if _, ok := n.byID[b.Tip]; !ok {
			n.allTips = false // a turn not read yet (a later page, another process's)
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
	// start on the active tip (once its page has come)
	if !n.onTip {
		for i, r := range n.rows {
			if n.nodes[r.node].Key == n.active {
				n.sel, n.onTip = i, true
			}
		}
	}
}

// flatten lists the visible rows depth-first (iteratively: a path may be 100,000 deep).
func (n *navigator) flatten() {
	n.rows = n.rows[:0]
	type item struct{ node, indent int }
	var stack []item
	var roots, beside []int // first turns; kept first turns (beside every branch's first)
	for _, r := range n.children[""] {
		if n.nodes[r].Status == trace.StatusCompleted {
			roots = append(roots, r)
		} else {
			beside = append(beside, r)
		}
	}
	rootIndent := 0
	if len(roots) > 1 {
		rootIndent = 1 // first turns edited and resubmitted: siblings like any fork's
	}
	for i := len(roots) - 1; i >= 0; i-- {
		stack = append(stack, item{roots[i], rootIndent})
	}
	for i := len(beside) - 1; i >= 0; i-- {
		stack = append(stack, item{beside[i], rootIndent + 1})
	}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		nd := n.nodes[it.node]
		var goOn, beside []int // completed children; kept ones (leaves)
		for _, k := range n.children[nd.Key] {
			if n.nodes[k].Status == trace.StatusCompleted {
				goOn = append(goOn, k)
			} else {
				beside = append(beside, k)
			}
		}
		n.rows = append(n.rows, navRow{node: it.node, indent: it.indent, fork: len(goOn) > 1})
		if n.folded[nd.Key] {
			continue
		}
		ind := it.indent
		if len(goOn) > 1 {
			ind++
		}
		for i := len(goOn) - 1; i >= 0; i-- {
			stack = append(stack, item{goOn[i], ind})
		}
		for i := len(beside) - 1; i >= 0; i-- { // popped first: right under the turn
			stack = append(stack, item{beside[i], it.indent + 1})
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

func (n *navigator) View() []string {
	s := n.e.st.s
	w, h := n.w, n.h
	bh := h - 2
	var body []string
	switch {
	case n.loading && len(n.rows) == 0:
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
			body = append(body, n.rowView(i, w-2))
		}
		if n.loading && len(body) == bh {
			body[bh-1] = s.Muted.Render(fmt.Sprintf("loading the turn tree… %d turns so far", len(n.nodes)))
		} else if n.loading {
			body = append(body, s.Muted.Render(fmt.Sprintf("loading the turn tree… %d turns so far", len(n.nodes))))
		}
	}
	return frame(s.PaneFocused, s.PaneTitle, " branches · turn tree ", hints(hintsOf(n.bindings())...), body, w, h)
}

func (n *navigator) rowView(i, w int) string {
	s := n.e.st.s
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
	num := fmt.Sprintf("#%d ", nd.Index)
	tags := ""
	for _, b := range n.tips[nd.Key] {
		tags += "[" + termtext.OneLine(b) + "] "
	}
	if nd.Key == n.active {
		tags += "← active tip "
	}
	// A completed turn no branch reaches was undone: it waits on a redo list. Known only
	// once every tip is read (a tip on a later page reaches its ancestors).
	undone := nd.Status == trace.StatusCompleted && !n.loading && n.allTips && n.onPath[nd.Key] == ""
	if undone {
		mark, tags = "↶ ", "undone "
	}
	text := termtext.OneLine(nd.InputPreview)
	if nd.OutputPreview != "" {
		text += " → " + termtext.OneLine(nd.OutputPreview)
	}
	if nd.Status != trace.StatusCompleted {
		// kept beside the branch: its mark and status where a turn's would be, its
		// reason after the text
		mark, tags = nd.Status.Mark()+" ", string(nd.Status)+" "
		if nd.Error != "" {
			text += " · " + termtext.OneLine(nd.Error)
		}
		if i == n.sel {
			return s.Selected.Render(fit(ind+mark+tags+num+text, w))
		}
		return s.TreeBranch.Render(ind) + keptMark(n.e, nd.Status) + " " + s.Text.Render(num) + s.Muted.Render(text)
	}
	if i == n.sel {
		return s.Selected.Render(fit(ind+mark+num+tags+text, w))
	}
	if undone {
		return s.TreeBranch.Render(ind) + s.Muted.Render(mark+num+tags+text)
	}
	return s.TreeBranch.Render(ind) + s.Accent.Render(mark) + s.Text.Render(num) + s.Tip.Render(tags) + s.Text.Render(text)
}
