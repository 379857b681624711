package ui

import (
	"fmt"

	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// callTree shows one turn's CallRecords as a collapsible tree drawn with lipgloss/tree's
// glyphs. The visible rows are flattened once per change (expand, collapse, new turn);
// a frame then formats only the rows on screen.
type callTree struct {
	e         *env
	w, h      int
	turnID    string
	index     int // the turn's Index
	roots     []*trace.Call
	collapsed map[string]bool // by call ID
	rows      []treeRow
	sel, top  int
}

type treeRow struct {
	c      *trace.Call
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
	t.turnID, t.roots, t.index = turnID, nil, 0
	if turn != nil {
		t.roots, t.index = turn.Calls, turn.Index
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

// detail opens the selected call's full record.
func (t *callTree) detail() tea.Cmd {
	c := t.selected()
	if c == nil {
		return nil
	}
	st := t.e.st
	tv := newTextView(t.e, "call "+termtext.OneLine(c.Path), func(w int) []string { return callDetail(st, c, w) })
	if !isModuleRecord(c) {
		req := compareTarget{turn: t.turnID, call: c.ID}
		tv.extra = []binding{bind(t.e.keys.Compare, "compare strategies", true, t.e.emitter(openCompareMsg{req}))}
	}
	t.e.emit(openModalMsg{tv})
	return nil
}

func (t *callTree) flatten() {
	t.rows = t.rows[:0]
	var rec func(cs []*trace.Call, pre string)
	rec = func(cs []*trace.Call, pre string) {
		for i, c := range cs {
			last := i == len(cs)-1
			branch, cont := "├── ", "│   "
			if last {
				branch, cont = "└── ", "    "
			}
			t.rows = append(t.rows, treeRow{c: c, prefix: pre + branch, kids: len(c.Children) > 0})
			if len(c.Children) > 0 && !t.collapsed[c.ID] {
				rec(c.Children, pre+cont)
			}
		}
	}
	rec(t.roots, "")
	t.sel = max(0, min(t.sel, len(t.rows)-1))
}

// selected is the call under the cursor (nil when the tree is empty).
func (t *callTree) selected() *trace.Call {
	if t.sel < 0 || t.sel >= len(t.rows) {
		return nil
	}
	return t.rows[t.sel].c
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

// toggle expands or collapses the selected call; open forces the direction when set.
func (t *callTree) toggle(open *bool) {
	c := t.selected()
	if c == nil || len(c.Children) == 0 {
		return
	}
	want := !t.collapsed[c.ID]
	if open != nil {
		want = !*open
	}
	t.collapsed[c.ID] = want
	t.flatten()
}

// setAll expands (open) or collapses every call.
func (t *callTree) setAll(open bool) {
	cur := t.selected()
	t.collapsed = map[string]bool{}
	if !open {
		trace.WalkCalls(t.roots, func(c *trace.Call, _ int) {
			if len(c.Children) > 0 {
				t.collapsed[c.ID] = true
			}
		})
	}
	t.flatten()
	// keep the cursor on the same call when it is still visible, else on its root
	for i, r := range t.rows {
		if r.c == cur {
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
	if len(t.roots) == 0 {
		return []string{s.Muted.Render("no calls: select a turn with a recorded call")}
	}
	t.scrollTo(h)
	out := make([]string, 0, h)
	for i := t.top; i < len(t.rows) && len(out) < h; i++ {
		r := t.rows[i]
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
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" %d/%d · %d calls ", t.sel+1, len(t.rows), n)
}
