package ui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// pageSize is how many turns a chat pane loads at a time.
const pageSize = 200

// chatPane shows one branch's transcript. It holds a window of the branch's turns
// (loaded by pages) and memoises each finished turn's rendered lines per width, so a
// frame renders only the turns on screen and re-renders nothing that has not changed.
type chatPane struct {
	branch  string
	info    sessions.BranchInfo
	total   int           // turns on the path
	from    int           // position of turns[0]
	ids     []string      // TurnIDs of the loaded window
	turns   []*trace.Turn // the loaded window
	loading bool          // a page load is in flight
	loaded  bool          // the first page arrived
	// gen counts tail reloads; pages requested before the latest one are dropped, and
	// the first page after it replaces the window (the old turns stay on screen until
	// then: no "loading…" flash after undo, redo or fork)
	gen   int
	stale bool

	sel  int // selected turn (absolute position); -1 = none
	list vlist

	cache      map[string][]string // TurnID -> rendered lines at cacheWidth
	cacheWidth int

	stream *streamState // the turn in flight, nil when idle

	// usage sums the loaded turns' calls: the title falls back on it when the backend
	// reports no branch totals
	usage lm.Usage
}

// streamState is a turn being written.
type streamState struct {
	inputs  *sig.Map
	path    string
	field   string
	outputs map[string][]adapter.FieldText // completion so far per call path, by field (parallel calls interleave)
	try     lm.Try
	retryAt time.Time // when the next try starts, if retrying
	started time.Time
	calls   int
}

func newChatPane(branch string) *chatPane {
	return &chatPane{branch: branch, sel: -1, list: vlist{follow: true}, cache: map[string][]string{}}
}

// count is the number of rows the list scrolls over: every turn of the path (unloaded
// ones show a placeholder) plus the streaming turn.
func (p *chatPane) count() int {
	n := p.total
	if p.stream != nil {
		n++
	}
	return n
}

// turnAt returns the loaded turn at absolute position i.
func (p *chatPane) turnAt(i int) (string, *trace.Turn) {
	j := i - p.from
	if j < 0 || j >= len(p.turns) {
		return "", nil
	}
	return p.ids[j], p.turns[j]
}

// setPage merges a loaded page into the window. Pages adjacent to the window extend it;
// anything else replaces it (the window stays one contiguous run).
func (p *chatPane) setPage(pg sessions.TurnPage) {
	p.loading, p.loaded = false, true
	p.total = pg.Total
	if p.stale {
		p.from, p.ids, p.turns, p.stale = 0, nil, nil, false
	}
	end := p.from + len(p.turns)
	switch {
	case len(p.turns) > 0 && pg.From+len(pg.Turns) == p.from:
		p.ids = append(append([]string(nil), pg.IDs...), p.ids...)
		p.turns = append(append([]*trace.Turn(nil), pg.Turns...), p.turns...)
		p.from = pg.From
	case len(p.turns) > 0 && pg.From == end:
		p.ids = append(p.ids, pg.IDs...)
		p.turns = append(p.turns, pg.Turns...)
	default:
		p.from, p.ids, p.turns = pg.From, pg.IDs, pg.Turns
	}
	if p.sel >= p.total {
		p.sel = p.total - 1
	}
	p.usage = lm.Usage{}
	for _, t := range p.turns {
		trace.WalkCalls(t.Calls, func(c *trace.Call, _ int) { p.usage = p.usage.Add(c.Usage) })
	}
}

// reset forgets the loaded turns (after undo, redo or a branch switch).
func (p *chatPane) reset(branch string) {
	gen := p.gen // pages asked for before the reset must stay stale
	*p = *newChatPane(branch)
	p.gen = gen
}

// missing reports a page that should be loaded for the rows now visible, if any.
func (p *chatPane) missing(first, last int) (from int, ok bool) {
	if p.loading || p.total == 0 {
		return 0, false
	}
	for i := first; i <= last && i < p.total; i++ {
		if _, t := p.turnAt(i); t == nil {
			return max(0, min(i, p.total-1)/pageSize*pageSize), true
		}
	}
	return 0, false
}

// renderer knows how to draw turns; it is the root model's shared state.
type renderer struct {
	st *stylesheet
	md *markdown
}

// lines returns row i's lines at width w (memoised for finished turns).
func (p *chatPane) lines(r renderer, i, w int) []string {
	if p.cacheWidth != w {
		p.cache = map[string][]string{}
		p.cacheWidth = w
	}
	if i == p.total && p.stream != nil {
		return p.streamLines(r, w)
	}
	id, t := p.turnAt(i)
	if t == nil {
		return []string{r.st.s.Muted.Render(fmt.Sprintf(" #%d …", i+1)), ""}
	}
	if ls, ok := p.cache[id]; ok {
		return ls
	}
	ls := renderTurn(r, t, w)
	p.cache[id] = ls
	return ls
}

func renderTurn(r renderer, t *trace.Turn, w int) []string {
	s := r.st.s
	var out []string
	calls, tok, lat, errs := turnStats(t)
	head := s.UserLabel.Render(fmt.Sprintf("#%d you", t.Index+1))
	out = append(out, head)
	out = append(out, indent(fieldLines(r, t.Inputs, w-2), "  ")...)
	meta := fmt.Sprintf(" · %d call", calls)
	if calls != 1 {
		meta += "s"
	}
	meta += " · " + usageLabel(tok) + " tok · " + fmtDuration(lat)
	out = append(out, s.AssistantLabel.Render("assistant")+s.Muted.Render(meta))
	if t.Outputs.Len() == 1 {
		k := t.Outputs.Keys()[0]
		v, _ := t.Outputs.Get(k)
		out = append(out, r.md.render(py.Text(v), w)...)
	} else {
		t.Outputs.Range(func(k string, v any) bool {
			text := py.Text(v)
			if label := "  " + termtext.OneLine(k) + ": "; plainShort(text, w-len(label)) {
				// a short plain value (a score, a flag, a label) reads best beside its name
				out = append(out, s.Muted.Render(label)+termtext.Sanitize(text))
				return true
			}
			out = append(out, s.Muted.Render("  "+termtext.OneLine(k)+":"))
			out = append(out, r.md.render(text, w)...)
			return true
		})
	}
	for _, e := range errs {
		out = append(out, indent(wrapLines(s.Error.Render("✗ ")+termtext.Sanitize(e), w-2), "  ")...)
	}
	return append(out, "")
}

// plainShort reports a one-line value of at most w cells with nothing markdown would
// render differently.
func plainShort(text string, w int) bool {
	if text == "" || len(text) > w || strings.ContainsAny(text, "\n\r\t*_`[]#|<>\\~") {
		return false
	}
	if strings.HasPrefix(text, "- ") || strings.HasPrefix(text, "+ ") {
		return false
	}
	if i := strings.IndexByte(text, '.'); i > 0 && i+1 < len(text) && text[i+1] == ' ' && strings.Trim(text[:i], "0123456789") == "" {
		return false // "1. step" is a list item
	}
	return true
}

// fieldLines shows inputs: a lone field as plain text, several as "name: value".
func fieldLines(r renderer, m *sig.Map, w int) []string {
	if m.Len() == 1 {
		v, _ := m.Get(m.Keys()[0])
		return wrapLines(termtext.Sanitize(py.Text(v)), w)
	}
	var out []string
	m.Range(func(k string, v any) bool {
		out = append(out, wrapLines(r.st.s.Muted.Render(termtext.OneLine(k)+": ")+termtext.Sanitize(py.Text(v)), w)...)
		return true
	})
	return out
}

func indent(ls []string, pre string) []string {
	for i := range ls {
		ls[i] = pre + ls[i]
	}
	return ls
}

// turnStats sums a turn's calls: count, usage, wall time and error texts.
func turnStats(t *trace.Turn) (calls int, usage lm.Usage, lat time.Duration, errs []string) {
	trace.WalkCalls(t.Calls, func(c *trace.Call, depth int) {
		calls++
		usage = usage.Add(c.Usage)
		if c.Error != "" {
			errs = append(errs, c.Path+": "+c.Error)
		}
	})
	if !t.Ended.IsZero() && !t.Started.IsZero() {
		lat = t.Ended.Sub(t.Started)
	} else {
		for _, c := range t.Calls {
			lat += c.Latency
		}
	}
	return
}

func fmtDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return strconv.Itoa(int(d/time.Millisecond)) + "ms"
	case d < time.Minute:
		return trimZero(d.Seconds()) + "s"
	default:
		return d.Round(time.Second).String()
	}
}

// streamLines draws the turn in flight: the inputs, then the text so far (plain: it is
// re-rendered as markdown once finished), the field being written and any retry wait.
func (p *chatPane) streamLines(r renderer, w int) []string {
	s := r.st.s
	st := p.stream
	out := []string{s.UserLabel.Render(fmt.Sprintf("#%d you", p.total+1))}
	out = append(out, indent(fieldLines(r, st.inputs, w-2), "  ")...)
	label := "assistant"
	if st.path != "" {
		label += " · " + termtext.OneLine(st.path)
	}
	if st.field != "" {
		label += " · writing " + termtext.OneLine(st.field)
	}
	if st.calls > 0 {
		label += fmt.Sprintf(" · %d call(s) done", st.calls)
	}
	out = append(out, s.AssistantLabel.Render(label))
	for _, f := range st.outputs[st.path] {
		if f.Name != "" {
			out = append(out, s.Muted.Render("  "+termtext.OneLine(f.Name)+":"))
		}
		if text := strings.Trim(f.Text, "\n"); text != "" {
			out = append(out, indent(wrapLines(termtext.Sanitize(text), w-2), "  ")...)
		}
	}
	if st.try.Retrying {
		left := time.Until(st.retryAt).Round(time.Second)
		out = append(out, s.Warning.Render(fmt.Sprintf("  try %d failed: %s · retrying in %s",
			st.try.N, termtext.OneLine(st.try.Err), fmtDuration(max(left, 0)))))
	}
	out = append(out, s.Muted.Render("  … esc cancels"), "")
	return out
}

// view draws the pane's body rows (without frame) at width w, height h, with the
// selected turn marked in a one-cell gutter.
func (p *chatPane) view(r renderer, w, h int, focused bool) []string {
	n := p.count()
	if n == 0 {
		if !p.loaded {
			return []string{r.st.s.Muted.Render("loading…")}
		}
		return []string{r.st.s.Muted.Render("no turns yet: type below and press enter")}
	}
	cw := w - 1
	lf := func(i int) []string { return p.lines(r, i, cw) }
	rows := make([]string, 0, h)
	// walk the same rows vlist shows, remembering which item each row belongs to
	body := p.list.view(n, h, lf)
	item, line := p.list.idx, p.list.line
	for _, row := range body {
		g := " "
		if item == p.sel {
			g = r.st.s.Cursor.Render("▌")
			if !focused {
				g = r.st.s.Muted.Render("▏")
			}
		}
		rows = append(rows, g+row)
		line++
		for item < n && line >= len(lf(item)) {
			item++
			line = 0
		}
	}
	return rows
}

// visibleRange is the first and last item on screen (valid after view).
func (p *chatPane) visibleRange(r renderer, w, h int) (int, int) {
	n := p.count()
	lf := func(i int) []string { return p.lines(r, i, w-1) }
	first := p.list.idx
	rows := -p.list.line
	last := first
	for last < n {
		rows += len(lf(last))
		if rows >= h {
			break
		}
		last++
	}
	return first, min(last, n-1)
}

// selectTurn moves the selection by delta and scrolls it into view.
func (p *chatPane) selectTurn(r renderer, delta, w, h int) {
	if p.total == 0 {
		return
	}
	if p.sel < 0 {
		p.sel = p.total - 1 // the implicit selection is the last turn
	}
	p.sel = max(0, min(p.total-1, p.sel+delta))
	p.list.show(p.sel, p.count(), h, func(i int) []string { return p.lines(r, i, w-1) })
}

// title is the frame title: branch, model, tokens.
func (p *chatPane) title(model string) string {
	m := p.info.Model
	if m == "" {
		m = model
	}
	u, partial := p.info.Usage, ""
	if u.TotalTokens == 0 {
		u = p.usage
		if p.from > 0 || len(p.turns) < p.total {
			partial = " in loaded turns"
		}
	}
	est := ""
	if u.Estimated {
		est = "≈"
	}
	return fmt.Sprintf(" %s · %s · %s tok%s (%s%s in / %s%s out) ", termtext.OneLine(p.branch), termtext.OneLine(m),
		usageLabel(u), partial, est, humanTokens(u.PromptTokens), est, humanTokens(u.CompletionTokens))
}

// statusLine is the pane's own footer: turns, selection, state.
func (p *chatPane) statusLine() string {
	s := " " + count(p.total, "turn")
	if p.sel >= 0 {
		s += fmt.Sprintf(" · turn %d selected", p.sel+1)
	}
	if p.info.Status != "" {
		s += " · " + termtext.OneLine(p.info.Status)
	}
	if p.stream != nil {
		s += " · running"
	}
	return s + " "
}
