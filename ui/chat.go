package ui

import (
	"context"
	"fmt"

	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/core/lm"
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
	e    *env
	w, h int // the frame's size (SetSize)

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

	sel int // selected turn (absolute position); -1 = the last one, implicitly
	// note is which kept turn drawn as a line before turn sel is selected (its index in
	// notes[sel]), -1 for the turn itself (kept.go)
	note int
	// want is a kept turn to select once the branch's kept turns arrive (the navigator's
	// enter on one)
	want string
	list vlist

	cache      map[string][]string // TurnID -> rendered lines at cacheWidth
	cacheWidth int
	cacheGen   int // the env's styleGen the cache was drawn in

	stream *streamState // the turn in flight, nil when idle

	// tail are the turns kept beside the branch after its tip (a failed, cancelled or
	// interrupted last turn): items after the path's, selectable, to inspect, retry or
	// delete. notes are the kept turns placed earlier on the path (their branch went on),
	// drawn as one line before the turn that took their place. See kept.go.
	tail  []sessions.KeptTurn
	notes map[int][]sessions.KeptTurn

	// usage sums the loaded turns' calls: the title falls back on it when the backend
	// reports no branch totals
	usage lm.Usage
}

// pageMsg is a loaded page of a pane's branch.
type pageMsg struct {
	pane   *chatPane
	gen    int // the pane's generation when the page was asked for
	branch string
	page   sessions.TurnPage
	err    error
	// kept are the branch's kept turns, read with its last page (withKept)
	kept     []sessions.KeptTurn
	withKept bool
	keptErr  error
}

// focusTreeMsg asks the root to focus the call tree (enter on a turn).
type focusTreeMsg struct{}

func newChatPane(e *env, branch string) *chatPane {
	p := &chatPane{e: e, branch: branch, sel: -1, note: -1, list: vlist{follow: true}, cache: map[string][]string{}}
	p.info, _ = e.branchInfo(branch)
	return p
}

// SetSize sets the frame's size; the body is two cells narrower and lower.
func (p *chatPane) SetSize(w, h int) { p.w, p.h = w, h }

func (p *chatPane) bodyW() int { return max(p.w-2, 1) }
func (p *chatPane) bodyH() int { return max(p.h-2, 1) }

// bindings is the pane's key table.
func (p *chatPane) bindings() []binding {
	k := p.e.keys
	return []binding{
		bind(k.Up, "previous turn", true, do(func() { p.selectTurn(-1) })),
		bind(k.Down, "next turn", false, do(func() { p.selectTurn(1) })),
		bind(k.PageUp, "page up", false, do(func() { p.scroll(-p.bodyH()) })),
		bind(k.PgDown, "page down", false, do(func() { p.scroll(p.bodyH()) })),
		bind(k.Top, "first turn", false, do(p.top)),
		bind(k.Bottom, "last turn", false, do(p.bottom)),
		bind(k.Send, "calls", true, p.e.emitter(focusTreeMsg{})),
		bind(k.Fork, "fork", true, p.fork),
		// a recorded conversation's turns come from a program outside: nothing to run them
		bind(k.Edit, "edit & resubmit", true, p.edit).only(func() bool { return !p.keptSelected() && p.noteAt() == nil && !p.e.recorded() }),
		bind(k.Edit, "edit & retry", true, p.edit).only(func() bool { return p.keptSelected() && !p.e.recorded() }),
		bind(k.Retry, "retry from the failure", true, p.retry).only(func() bool { return (p.keptSelected() || p.noteAt() != nil) && !p.e.recorded() }),
		bind(k.Delete, "delete this turn", true, p.deleteKept).only(p.keptSelected),
		bind(k.Undo, "undo", true, p.undo),
		bind(k.Redo, "redo", true, p.redo),
	}
}

// Update handles a key press (when focused), the wheel and its pages.
func (p *chatPane) Update(msg tea.Msg) tea.Cmd {
	if cmd, ok := keyOrWheel(msg, p.bindings(), p.scroll); ok {
		return cmd
	}
	switch msg := msg.(type) {
	case pageMsg:
		if msg.branch != p.branch || msg.gen != p.gen {
			return nil // the pane changed branch or reloaded since
		}
		if msg.err != nil {
			p.loading = false
			return p.e.fail(msg.err)
		}
		p.setPage(msg.page)
		if msg.withKept {
			p.setKept(msg.kept)
		}
		if msg.keptErr != nil {
			return p.e.fail(fmt.Errorf("turns kept beside %s: %w", p.branch, msg.keptErr))
		}
	}
	return nil
}

// click selects the turn drawn at body row y.
func (p *chatPane) click(y int) {
	item, line, ok := p.itemAtRow(y)
	if ok && item < p.items() {
		p.sel, p.note = item, -1
		if line < p.noteCount(item) {
			p.note = line // a kept turn's line before the turn
		}
	}
}

// count is the number of rows the list scrolls over: every turn of the path (unloaded
// ones show a placeholder), the kept turns after its tip, and the streaming turn.
func (p *chatPane) count() int {
	n := p.items()
	if p.stream != nil {
		n++
	}
	return n
}

// items are the selectable rows: the path's turns, then the kept turns after its tip.
func (p *chatPane) items() int { return p.total + len(p.tail) }

// turnAt returns the loaded turn at absolute position i.
func (p *chatPane) turnAt(i int) (string, *trace.Turn) {
	j := i - p.from
	if j < 0 || j >= len(p.turns) {
		return "", nil
	}
	return p.ids[j], p.turns[j]
}

// selected is the selected turn (a kept one after the tip included), or the last one.
func (p *chatPane) selected() (string, *trace.Turn) {
	if p.items() == 0 {
		return "", nil
	}
	i := p.sel
	if i < 0 {
		i = p.items() - 1
	}
	if k := p.keptAt(i); k != nil {
		return k.Key, k.Turn
	}
	if k := p.noteAt(); k != nil {
		return k.Key, k.Turn
	}
	return p.turnAt(i)
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
	if p.sel >= p.items() {
		p.sel = p.items() - 1
	}
	p.usage = lm.Usage{}
	for _, t := range p.turns {
		trace.WalkCalls(t.Calls, func(c *trace.Call, _ int) { p.usage = p.usage.Add(c.Usage) })
	}
}

// show moves the pane to another branch: its turns are dropped and loaded again.
func (p *chatPane) show(branch string) {
	gen := p.gen // pages asked for before must stay stale
	*p = *newChatPane(p.e, branch)
	p.gen = gen + 1
}

// load fetches a page of the pane's branch; from < 0 means the last page, which reloads
// the pane: pages still in flight are dropped and the new one replaces the window.
func (p *chatPane) load(from int) tea.Cmd {
	conv := p.e.convID()
	if conv == "" {
		return nil
	}
	if from < 0 {
		p.gen++
		p.stale = true
	}
	p.loading = true
	ctx, b, branch, gen := p.e.ctx, p.e.b, p.branch, p.gen
	return func() tea.Msg {
		f := from
		if f < 0 {
			f = -pageSize // the last page, read with the branch's length
		}
		pg, err := b.LoadTurns(ctx, conv, branch, f, pageSize)
		if err != nil {
			return pageMsg{pane: p, gen: gen, branch: branch, err: fmt.Errorf("load branch %q: %w", branch, err)}
		}
		msg := pageMsg{pane: p, gen: gen, branch: branch, page: pg}
		if from < 0 {
			// the tail is reloaded: the turns kept after it (or before) may have changed
			msg.kept, msg.keptErr = b.KeptTurns(ctx, conv, branch)
			msg.withKept = msg.keptErr == nil
		}
		return msg
	}
}

// ensureLoaded asks for the page holding the first visible turn that is not loaded.
func (p *chatPane) ensureLoaded() tea.Cmd {
	if p.loading || p.total == 0 {
		return nil
	}
	first, last := p.visibleRange()
	for i := first; i <= last && i < p.total; i++ {
		if _, t := p.turnAt(i); t == nil {
			return p.load(max(0, min(i, p.total-1)/pageSize*pageSize))
		}
	}
	return nil
}

// lines returns row i's lines at width w (memoised for finished turns).
func (p *chatPane) lines(i, w int) []string {
	if p.cacheWidth != w || p.cacheGen != p.e.styleGen {
		p.cache = map[string][]string{}
		p.cacheWidth, p.cacheGen = w, p.e.styleGen
	}
	if i == p.items() && p.stream != nil {
		return streamLines(p.e.rend(), p.stream, w)
	}
	if k := p.keptAt(i); k != nil {
		if ls, ok := p.cache[k.Key]; ok {
			return ls
		}
		ls := renderKept(p.e, *k, w)
		p.cache[k.Key] = ls
		return ls
	}
	id, t := p.turnAt(i)
	if t == nil {
		return []string{p.e.st.s.Muted.Render(fmt.Sprintf(" #%d …", i)), ""}
	}
	if ls, ok := p.cache[id]; ok {
		return ls
	}
	ls := append(noteLines(p.e, p.notes[t.Index], w), renderTurn(p.e.rend(), t, w)...)
	p.cache[id] = ls
	return ls
}

// linesFunc gives the rows at the body's width (minus the selection gutter).
func (p *chatPane) linesFunc() linesFunc {
	w := p.bodyW() - 1
	return func(i int) []string { return p.lines(i, w) }
}

func (p *chatPane) scroll(delta int) { p.list.scroll(delta, p.count(), p.bodyH(), p.linesFunc()) }

func (p *chatPane) top() { p.sel, p.note, p.list = 0, -1, vlist{} }

func (p *chatPane) bottom() { p.sel, p.note, p.list = p.items()-1, -1, vlist{follow: true} }

// selectTurn moves the selection by delta and scrolls it into view. One step (up or
// down) also stops on each kept turn's line drawn before a turn, as on a row of its own.
func (p *chatPane) selectTurn(delta int) {
	if p.items() == 0 {
		return
	}
	if p.sel < 0 {
		p.sel = p.items() - 1 // the implicit selection is the last turn
	}
	switch n := p.noteCount(p.sel); {
	case delta == -1 && p.note < 0 && n > 0:
		p.note = n - 1
	case delta == -1 && p.note > 0:
		p.note--
	case delta == 1 && p.note >= 0:
		if p.note++; p.note >= n {
			p.note = -1 // the turn after the lines
		}
	default:
		p.selectAt(max(0, min(p.items()-1, p.sel+delta)))
		if delta == 1 && p.sel > 0 && p.noteCount(p.sel) > 0 {
			p.note = 0 // coming from above: the first line before the turn
		}
		return
	}
	p.list.show(p.sel, p.count(), p.bodyH(), p.linesFunc())
}

// selectAt selects turn i and scrolls it into view.
func (p *chatPane) selectAt(i int) {
	p.sel, p.note = i, -1
	p.list.show(i, p.count(), p.bodyH(), p.linesFunc())
}

// View draws the pane's frame at its size; the selected turn is marked in a one-cell
// gutter.
func (p *chatPane) View(focused bool) []string {
	fs, ts := paneStyle(p.e.st, focused)
	return frame(fs, ts, p.title(), p.footer(), p.body(focused), p.w, p.h)
}

func (p *chatPane) body(focused bool) []string {
	st := p.e.st.s
	n := p.count()
	if n == 0 {
		if !p.loaded {
			return []string{st.Muted.Render("loading…")}
		}
		if p.e.recorded() {
			return []string{st.Muted.Render("no turns yet: they appear as your program's calls reach the proxy")}
		}
		return []string{st.Muted.Render("no turns yet: type below and press enter")}
	}
	lf := p.linesFunc()
	h := p.bodyH()
	rows := make([]string, 0, h)
	// walk the same rows vlist shows, remembering which item each row belongs to
	body := p.list.view(n, h, lf)
	item, line := p.list.idx, p.list.line
	for _, row := range body {
		g := " "
		// the selected item's rows; when it has kept turns' lines before it, the line
		// selected or else the turn's own rows
		on := item == p.sel && (p.note == line || p.note < 0 && line >= p.noteCount(item))
		if on || p.sel < 0 && item == p.items()-1 && focused {
			g = st.Cursor.Render("▌")
			if !focused {
				g = st.Muted.Render("▏")
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

// itemAtRow is the item drawn at body row y and the line of it that row shows.
func (p *chatPane) itemAtRow(y int) (int, int, bool) {
	n := p.count()
	if n == 0 || y < 0 {
		return 0, 0, false
	}
	lf := p.linesFunc()
	item, rows := p.list.idx, -p.list.line
	for item < n {
		l := len(lf(item))
		if y < rows+l {
			return item, y - rows, true
		}
		rows += l
		item++
	}
	return 0, 0, false
}

// visibleRange is the first and last item on screen. A pane following its end is
// anchored first, as View would: before the first frame of a long branch the offset
// still says the top, and the pages asked for would be the wrong ones.
func (p *chatPane) visibleRange() (int, int) {
	n := p.count()
	lf := p.linesFunc()
	if p.list.follow && n > 0 {
		p.list.anchorBottom(n, p.bodyH(), lf)
	}
	first := p.list.idx
	rows := -p.list.line
	last := first
	for last < n {
		rows += len(lf(last))
		if rows >= p.bodyH() {
			break
		}
		last++
	}
	return first, min(last, n-1)
}

// title is the frame title: branch, model, tokens, and what a redo would bring back.
func (p *chatPane) title() string {
	m := p.info.Model
	if m == "" {
		m = p.e.model
	}
	u, partial := p.info.Usage, ""
	if u.TotalTokens == 0 {
		u = p.usage
		if p.from > 0 || len(p.turns) < p.total {
			partial = " in loaded turns"
		}
	}
	redo := "" // next to the name, so a narrow pane still shows it
	if p.info.Redo > 0 {
		redo = fmt.Sprintf(" · %d to redo", p.info.Redo)
	}
	est := "" // counted with tiktoken: the server reported none
	if u.Estimated {
		est = "≈"
	}
	return fmt.Sprintf(" %s%s · %s · %s tok%s (%s%s in / %s%s out) ", termtext.OneLine(p.branch), redo, termtext.OneLine(m),
		usageLabel(u), partial, est, humanTokens(u.PromptTokens), est, humanTokens(u.CompletionTokens))
}

// footer is the pane's own status: turns, selection, state.
func (p *chatPane) footer() string {
	s := " " + termtext.Count(p.total, "turn")
	if k := p.keptAt(p.sel); k != nil {
		s += " · " + string(k.Status) + " " + turnLabel(k.Index) + " selected"
	} else if k := p.noteAt(); k != nil {
		// the branch went on past it: a retry makes a branch of its own
		s += " · " + string(k.Status) + " " + turnLabel(k.Index) + " selected (kept)"
		if k.Retryable() && !p.e.recorded() {
			s += " · " + p.e.keys.Retry.Help().Key + " retries on a new branch"
		}
	} else if p.sel >= 0 {
		s += " · " + turnLabel(p.sel) + " selected"
	}
	if n := len(p.tail); n > 0 && p.keptAt(p.sel) == nil {
		s += " · " + termtext.Count(n, "kept turn") + " after the tip"
	}
	if p.info.Status != "" {
		s += " · " + termtext.OneLine(string(p.info.Status))
	}
	if p.stream != nil {
		s += " · running"
	}
	return s + " "
}

// fork makes a branch whose tip is the selected turn and opens it.
func (p *chatPane) fork() tea.Cmd {
	id, t := p.selected()
	conv := p.e.convID()
	if t == nil || conv == "" {
		return p.e.say("select a turn to fork from")
	}
	if !t.Completed() && p.e.recorded() {
		return p.e.say(fmt.Sprintf("a %s turn is not on the branch: there is nothing to fork from", t.Status))
	}
	if !t.Completed() {
		return p.e.say(fmt.Sprintf("a %s turn is not on the branch: %s retries it, %s edits and retries it", t.Status,
			p.e.keys.Retry.Help().Key, p.e.keys.Edit.Help().Key))
	}
	return forkCmd(p.e, conv, id, t.Index)
}

// forkCmd forks at a turn (from a pane or the navigator).
func forkCmd(e *env, conv, turn string, index int) tea.Cmd {
	return e.op(func(ctx context.Context, b Backend) opMsg {
		name, err := b.Fork(ctx, conv, turn, "")
		if err != nil {
			return opMsg{err: fmt.Errorf("fork at %s: %w", turnLabel(index), err)}
		}
		return opMsg{status: fmt.Sprintf("forked %s at %s", name, turnLabel(index)), branches: []string{name}, openBranch: name}
	})
}

// edit loads the selected turn's inputs into the editor; enter there resubmits them as
// a sibling branch.
func (p *chatPane) edit() tea.Cmd {
	id, t := p.selected()
	if t == nil {
		return p.e.say("select a turn to edit")
	}
	p.e.emit(editMsg{turn: id, index: t.Index, inputs: t.Inputs.Clone(), retry: !t.Completed()})
	return nil
}

// undo moves the branch's tip back one turn (its inner calls' histories follow: they
// are derived from the path, so there is nothing to cascade by hand).
func (p *chatPane) undo() tea.Cmd {
	conv := p.e.convID()
	if conv == "" || p.e.busy() {
		return nil
	}
	branch := p.branch
	return p.e.op(func(ctx context.Context, b Backend) opMsg {
		res, err := b.Undo(ctx, conv, branch, 1)
		switch {
		case err != nil:
			return opMsg{err: fmt.Errorf("undo on %s: %w", branch, err)}
		case res.Turns == 0:
			return opMsg{status: "nothing to undo on " + branch}
		}
		return opMsg{status: fmt.Sprintf("undid %s on %s (with its %s) · %s redoes", termtext.Count(res.Turns, "turn"), branch,
			termtext.Count(res.Calls, "inner call"), p.e.keys.Redo.Help().Key), branches: []string{branch}}
	})
}

// redo moves the tip forward again along the last undone path.
func (p *chatPane) redo() tea.Cmd {
	conv := p.e.convID()
	if conv == "" || p.e.busy() {
		return nil
	}
	branch := p.branch
	return p.e.op(func(ctx context.Context, b Backend) opMsg {
		n, err := b.Redo(ctx, conv, branch, 1)
		switch {
		case err != nil:
			return opMsg{err: fmt.Errorf("redo on %s: %w", branch, err)}
		case n == 0:
			return opMsg{status: "nothing to redo on " + branch}
		}
		return opMsg{status: "redid " + termtext.Count(n, "turn") + " on " + branch, branches: []string{branch}}
	})
}
