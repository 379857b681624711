package ui

import (
	"fmt"
	"strconv"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// callTree shows one turn's CallRecords as a collapsible tree drawn with lipgloss/tree's
// glyphs. The calls made in one scored attempt of a retrying step (seed 003) hang under a
// row of that attempt, the best one marked; an attempt that made no call (a tool step)
// is a row of its own (trace.Tree arranges them). The visible rows are flattened once per
// change (expand, collapse, new turn); a frame then formats only the rows on screen.
type callTree struct {
	e         *env
	w, h      int
	turnID    string
	index     int // the turn's Index
	roots     []*trace.Call
	nodes     []*trace.Node // roots arranged under their attempts (trace.Tree)
	nAttempts int
	collapsed map[string]bool // by row key
	rows      []treeRow
	sel, top  int
}

// treeRow is a call, or an attempt (c nil) whose calls follow one level deeper.
type treeRow struct {
	c      *trace.Call
	att    *trace.Attempt
	key    string // the call's ID, or an attempt's (nodeKey)
	prefix string // "│   ├── " etc.
	kids   bool
}

func newCallTree(e *env) *callTree { return &callTree{e: e, collapsed: map[string]bool{}} }

// SetSize sets the frame's size.
func (t *callTree) SetSize(w, h int) { t.w, t.h = w, h }

func (t *callTree) bodyH() int { return max(t.h-2, 1) }

// set shows a turn's calls (nil: no turn), keeping the fold state when it is the same
// turn.
func (t *callTree) set(turnID string, turn *trace.Turn) {
	if turnID != t.turnID {
		t.collapsed = map[string]bool{}
		t.sel, t.top = 0, 0
	}
	t.turnID, t.roots, t.index, t.nodes, t.nAttempts = turnID, nil, 0, nil, 0
	if turn != nil {
		t.roots, t.index = turn.Calls, turn.Index
		t.nodes, t.nAttempts = trace.Tree(turn.Calls, turn.Attempts), len(turn.Attempts)
	}
	t.flatten()
}

// bindings is the tree's key table.
func (t *callTree) bindings() []binding {
	k := t.e.keys
	open, shut := true, false
	return []binding{
		bind(k.Up, "previous call", true, do(func() { t.move(-1) })),
		bind(k.Down, "next call", false, do(func() { t.move(1) })),
		bind(k.PageUp, "page up", false, do(func() { t.move(-t.bodyH()) })),
		bind(k.PgDown, "page down", false, do(func() { t.move(t.bodyH()) })),
		bind(k.Top, "first call", false, do(func() { t.move(-len(t.rows)) })),
		bind(k.Bottom, "last call", false, do(func() { t.move(len(t.rows)) })),
		bind(k.Send, "call detail", true, t.detail),
		bind(k.Expand, "expand", true, do(func() { t.toggle(&open) })),
		bind(k.Collapse, "collapse", true, do(func() { t.toggle(&shut) })),
		bind(k.ExpandAll, "expand all", false, do(func() { t.setAll(true) })),
		bind(k.CollapseAll, "collapse all", false, do(func() { t.setAll(false) })),
	}
}

// Update handles a key press (when focused) and the wheel.
func (t *callTree) Update(msg tea.Msg) tea.Cmd {
	cmd, _ := keyOrWheel(msg, t.bindings(), t.move)
	return cmd
}

// click selects the call drawn at body row y.
func (t *callTree) click(y int) {
	if i := t.top + y; y >= 0 && i < len(t.rows) {
		t.sel = i
	}
}

// detail opens the selected call's full record, or the selected attempt's.
func (t *callTree) detail() tea.Cmd {
	if a := t.selectedAttempt(); a != nil {
		st := t.e.st
		t.e.emit(openModalMsg{newTextView(t.e, attemptTitle(a), func(w int) []string { return attemptDetail(st, a, w) })})
		return nil
	}
	c := t.selected()
	if c == nil {
		return nil
	}
	conv, turn, id := t.e.convID(), t.turnID, c.ID
	ctx, b := t.e.ctx, t.e.b
	return func() tea.Msg {
		// a page's turns come without their calls' requests: the detail reads the turn
		// whole
		msg := callDetailMsg{turn: turn, call: c}
		if conv == "" || turn == "" {
			return msg
		}
		whole, err := b.Turn(ctx, conv, turn)
		if err != nil {
			msg.err = fmt.Errorf("call %s: %w", id, err)
			return msg
		}
		trace.WalkCalls(whole.Calls, func(x *trace.Call, _ int) {
			if x.ID == id {
				msg.call = x
			}
		})
		return msg
	}
}

// callDetailMsg is a call read whole (with its request), for its detail view.
type callDetailMsg struct {
	turn string
	call *trace.Call
	err  error
}

// callDetailView is the detail view of a call read whole.
func callDetailView(e *env, msg callDetailMsg) *textView {
	st, c := e.st, msg.call
	tv := newTextView(e, "call "+termtext.OneLine(c.Path), func(w int) []string { return callDetail(st, c, w) })
	if !isModuleRecord(c) {
		req := compareTarget{turn: msg.turn, call: c.ID}
		tv.extra = []binding{bind(e.keys.Compare, "compare strategies", true, e.emitter(openCompareMsg{req}))}
	}
	return tv
}

func (t *callTree) flatten() {
	t.rows = t.rows[:0]
	t.emit(t.nodes, "")
	t.sel = max(0, min(t.sel, len(t.rows)-1))
}

// emit appends the rows of sibling nodes and, unless folded, of their children.
func (t *callTree) emit(ns []*trace.Node, pre string) {
	for i, n := range ns {
		branch, cont := "├── ", "│   "
		if i == len(ns)-1 {
			branch, cont = "└── ", "    "
		}
		r := treeRow{c: n.Call, att: n.Attempt, key: nodeKey(n), prefix: pre + branch, kids: len(n.Children) > 0}
		t.rows = append(t.rows, r)
		if r.kids && !t.collapsed[r.key] {
			t.emit(n.Children, pre+cont)
		}
	}
}

// nodeKey names a row for folding: a call's ID, or its attempt's step, number and first
// call (its time when it made none).
func nodeKey(n *trace.Node) string {
	if a := n.Attempt; a != nil {
		at := a.Time.Format(time.RFC3339Nano)
		if len(a.Calls) > 0 {
			at = a.Calls[0]
		}
		return "attempt " + a.Step + " #" + strconv.Itoa(a.N) + " " + at
	}
	return n.Call.ID
}

// selected is the call under the cursor (nil when the tree is empty or an attempt is
// selected).
func (t *callTree) selected() *trace.Call {
	if t.sel < 0 || t.sel >= len(t.rows) {
		return nil
	}
	return t.rows[t.sel].c
}

// selectedAttempt is the attempt under the cursor (nil when a call is selected).
func (t *callTree) selectedAttempt() *trace.Attempt {
	if t.sel < 0 || t.sel >= len(t.rows) {
		return nil
	}
	return t.rows[t.sel].att
}

func (t *callTree) move(delta int) {
	if len(t.rows) == 0 {
		return
	}
	t.sel = max(0, min(len(t.rows)-1, t.sel+delta))
	t.scrollTo(t.bodyH())
}

func (t *callTree) scrollTo(h int) {
	if t.sel < t.top {
		t.top = t.sel
	}
	if h > 0 && t.sel >= t.top+h {
		t.top = t.sel - h + 1
	}
	t.top = max(0, min(t.top, len(t.rows)-1))
}

// toggle expands or collapses the selected call or attempt; open forces the direction
// when set.
func (t *callTree) toggle(open *bool) {
	if t.sel < 0 || t.sel >= len(t.rows) || !t.rows[t.sel].kids {
		return
	}
	key := t.rows[t.sel].key
	want := !t.collapsed[key]
	if open != nil {
		want = !*open
	}
	t.collapsed[key] = want
	t.flatten()
}

// setAll expands (open) or collapses every call and attempt.
func (t *callTree) setAll(open bool) {
	cur := ""
	if t.sel >= 0 && t.sel < len(t.rows) {
		cur = t.rows[t.sel].key
	}
	t.collapsed = map[string]bool{}
	if !open {
		var fold func(ns []*trace.Node)
		fold = func(ns []*trace.Node) {
			for _, n := range ns {
				if len(n.Children) > 0 {
					t.collapsed[nodeKey(n)] = true
					fold(n.Children)
				}
			}
		}
		fold(t.nodes)
	}
	t.flatten()
	// keep the cursor on the same row when it is still visible, else on its root
	for i, r := range t.rows {
		if r.key == cur {
			t.sel = i
			return
		}
	}
	t.sel = 0
	t.top = 0
}

// View draws the tree's frame at its size.
func (t *callTree) View(focused bool) []string {
	fs, ts := paneStyle(t.e.st, focused)
	title := " calls "
	if t.turnID != "" {
		title = " calls · " + turnLabel(t.index) + " "
	}
	return frame(fs, ts, title, t.footer(), t.body(t.w-2, t.bodyH(), focused), t.w, t.h)
}

// body formats the rows on screen.
func (t *callTree) body(w, h int, focused bool) []string {
	s := t.e.st.s
	if len(t.rows) == 0 {
		return []string{s.Muted.Render("no calls: select a turn with a recorded call")}
	}
	t.scrollTo(h)
	out := make([]string, 0, h)
	for i := t.top; i < len(t.rows) && len(out) < h; i++ {
		r := t.rows[i]
		if r.att != nil {
			out = append(out, t.attemptRow(r, w, i == t.sel, focused))
			continue
		}
		c := r.c
		mark := "  "
		if r.kids {
			mark = "▾ "
			if t.collapsed[c.ID] {
				mark = "▸ "
			}
		}
		meta := fmt.Sprintf("  %s  %s  %s tok", termtext.OneLine(c.PredictorType), fmtDuration(c.Latency), usageLabel(callUsage(c)))
		if len(c.Tries) > 1 {
			meta += fmt.Sprintf("  ×%d", len(c.Tries))
		}
		path := termtext.OneLine(c.Path)
		line := s.TreeBranch.Render(r.prefix+mark) + s.TreePath.Render(path) + s.TreeMeta.Render(meta)
		if c.Error != "" {
			line += s.Error.Render("  ✗ error")
		}
		if i == t.sel {
			plain := r.prefix + mark + path + meta
			if c.Error != "" {
				plain += "  ✗ error"
			}
			if focused {
				line = s.Selected.Render(fit(plain, w))
			} else {
				line = s.Cursor.Render(fit(plain, w))
			}
		}
		out = append(out, line)
	}
	return out
}

// attemptRow draws an attempt's row: its number and step, score, and the best mark or
// the failure.
func (t *callTree) attemptRow(r treeRow, w int, sel, focused bool) string {
	s, a := t.e.st.s, r.att
	mark := "  " // an attempt that made no call (a tool step) holds nothing
	switch {
	case r.kids && t.collapsed[r.key]:
		mark = "▸ "
	case r.kids:
		mark = "▾ "
	}
	name := "attempt " + strconv.Itoa(a.N) + " · " + termtext.OneLine(a.Step)
	meta := "  score " + strconv.FormatFloat(a.Score, 'g', -1, 64)
	flag, flagStyle := "", s.Success
	switch {
	case a.Error != "":
		meta, flag, flagStyle = "", "  ✗ failed", s.Error
	case a.Best:
		flag = "  ★ best"
	}
	if sel {
		plain := fit(r.prefix+mark+name+meta+flag, w)
		if focused {
			return s.Selected.Render(plain)
		}
		return s.Cursor.Render(plain)
	}
	return s.TreeBranch.Render(r.prefix+mark) + s.TreePath.Render(name) + s.TreeMeta.Render(meta) + flagStyle.Render(flag)
}

// attemptTitle names an attempt in the detail page's title.
func attemptTitle(a *trace.Attempt) string {
	return "attempt " + strconv.Itoa(a.N) + " of " + termtext.OneLine(a.Step)
}

// isModuleRecord: the engine's record of a nested module, which holds its inner calls
// and sends no request itself (no adapter), unlike a predictor call.
func isModuleRecord(c *trace.Call) bool { return len(c.Children) > 0 && c.Adapter == "" }

// callUsage is a call's own usage, or for a module record (which sends nothing itself)
// the sum over its inner calls, so the tree shows what the module cost.
func callUsage(c *trace.Call) lm.Usage {
	if len(c.Children) == 0 || c.Usage != (lm.Usage{}) {
		return c.Usage
	}
	var u lm.Usage
	for _, ch := range c.Children {
		u = u.Add(callUsage(ch))
	}
	return u
}

// footer summarises the tree.
func (t *callTree) footer() string {
	n := 0
	trace.WalkCalls(t.roots, func(*trace.Call, int) { n++ })
	if len(t.rows) == 0 {
		return ""
	}
	if t.nAttempts > 0 {
		return fmt.Sprintf(" %d/%d · %s · %s ", t.sel+1, len(t.rows), termtext.Count(n, "call"), termtext.Count(t.nAttempts, "attempt"))
	}
	return fmt.Sprintf(" %d/%d · %s ", t.sel+1, len(t.rows), termtext.Count(n, "call"))
}
