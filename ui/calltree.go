package ui

import (
	"fmt"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// callTree shows one turn's CallRecords as a collapsible tree drawn with lipgloss/tree's
// glyphs. The visible rows are flattened once per change (expand, collapse, new turn);
// a frame then formats only the rows on screen.
type callTree struct {
	turnID    string
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

func newCallTree() *callTree { return &callTree{collapsed: map[string]bool{}} }

// set shows a turn's calls, keeping the fold state when it is the same turn.
func (t *callTree) set(turnID string, calls []*trace.Call) {
	if turnID != t.turnID {
		t.collapsed = map[string]bool{}
		t.sel, t.top = 0, 0
	}
	t.turnID, t.roots = turnID, calls
	t.flatten()
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

func (t *callTree) move(delta, h int) {
	if len(t.rows) == 0 {
		return
	}
	t.sel = max(0, min(len(t.rows)-1, t.sel+delta))
	t.scrollTo(h)
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

// view formats the rows on screen.
func (t *callTree) view(st *stylesheet, w, h int, focused bool) []string {
	s := st.s
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

// callDetail is the full text of one call: inputs, outputs, raw completion, the exact
// request, attempts and error, for the detail view.
func callDetail(st *stylesheet, c *trace.Call, w int) []string {
	s := st.s
	var out []string
	sec := func(name string) { out = append(out, "", s.Title.Render(name)) }
	kv := func(k, v string) {
		out = append(out, wrapLines(s.Muted.Render(k+": ")+termtext.Sanitize(v), w)...)
	}
	if isModuleRecord(c) {
		out = append(out, s.Title.Render(termtext.OneLine(c.Path))+s.Muted.Render("  "+termtext.OneLine(c.PredictorType)+" · module: "+
			count(len(c.Children), "inner call")+", no request of its own"))
	} else {
		out = append(out, s.Title.Render(termtext.OneLine(c.Path))+s.Muted.Render("  "+termtext.OneLine(c.PredictorType)+" · "+termtext.OneLine(c.Adapter)+" adapter · "+termtext.OneLine(c.Model)))
	}
	kv("id", c.ID)
	kv("latency", fmtDuration(c.Latency))
	u, of := callUsage(c), ""
	if u != c.Usage {
		of = " (sum of its inner calls)"
	}
	if u.Estimated {
		of += " (≈ estimated with tiktoken: the server reported no usage)"
	}
	kv("usage", fmt.Sprintf("%d prompt + %d completion = %d tokens (%d cached)%s", u.PromptTokens, u.CompletionTokens, u.TotalTokens, u.CachedTokens, of))
	if c.Error != "" {
		out = append(out, wrapLines(s.Error.Render("error: ")+termtext.Sanitize(c.Error), w)...)
	}
	sec("Inputs")
	c.Inputs.Range(func(k string, v any) bool { kv(k, pyStr(v)); return true })
	sec("Outputs")
	if c.Outputs == nil {
		out = append(out, s.Muted.Render("(none: the call failed)"))
	}
	c.Outputs.Range(func(k string, v any) bool { kv(k, pyStr(v)); return true })
	sec(fmt.Sprintf("History seen (%d messages)", len(c.History.Messages)))
	for i, m := range c.History.Messages {
		out = append(out, s.Muted.Render(fmt.Sprintf("[%d]", i)))
		m.Range(func(k string, v any) bool { kv("  "+k, pyStr(v)); return true })
	}
	sec("Raw completion")
	out = append(out, wrapLines(termtext.Sanitize(c.Completion), w)...)
	sec(fmt.Sprintf("Exact request (%d messages)", len(c.Messages)))
	for _, m := range c.Messages {
		out = append(out, roleStyle(st, m.Role).Render("── "+termtext.OneLine(m.Role)+" ──"))
		out = append(out, wrapLines(termtext.Sanitize(m.Content), w)...)
	}
	if len(c.Tries) > 0 {
		sec("Tries")
		for _, a := range c.Tries {
			line := fmt.Sprintf("#%d  status %d  %s", a.N, a.Status, fmtDuration(a.Latency))
			if a.Err != "" {
				line += "  " + a.Err
			}
			if a.Retrying {
				line += "  (retried after " + fmtDuration(a.Wait) + ")"
			}
			if a.Adapter != "" {
				line += "  · " + a.Adapter + " adapter, given up"
			}
			out = append(out, wrapLines(termtext.Sanitize(line), w)...)
			// a request the call gave up on (the ChatAdapter -> JSONAdapter fallback):
			// what was sent and what came back, as for the call's own request
			if len(a.Messages) > 0 {
				out = append(out, s.Muted.Render(fmt.Sprintf("  request sent (%d messages, %s adapter):", len(a.Messages), termtext.OneLine(a.Adapter))))
				for _, m := range a.Messages {
					out = append(out, roleStyle(st, m.Role).Render("  ── "+termtext.OneLine(m.Role)+" ──"))
					out = append(out, indent(wrapLines(termtext.Sanitize(m.Content), w-2), "  ")...)
				}
			}
			if a.Completion != "" {
				out = append(out, s.Muted.Render("  completion received:"))
				out = append(out, indent(wrapLines(termtext.Sanitize(a.Completion), w-2), "  ")...)
			}
		}
	}
	if c.RawRequest != "" {
		sec("HTTP request body")
		out = append(out, wrapLines(termtext.Sanitize(c.RawRequest), w)...)
	}
	if c.RawResponse != "" {
		sec("HTTP response body")
		out = append(out, wrapLines(termtext.Sanitize(c.RawResponse), w)...)
	}
	return out
}

func pyStr(v any) string { return py.Text(v) }
