package ui

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/core/wirediff"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// compareView is the full-screen compare of one recorded call: what it sends under two
// strategies (or as actually sent), each side chosen on its own, the right side also
// from the same call on another branch. Messages are aligned by role and position, runs
// of identical lines folded, changed words marked; n and N jump between differences.
type compareView struct {
	e      *env
	w, h   int
	target compareCall
	sides  [2]cmpSide
	active int // the side the strategy keys change

	layout     compareLayout
	autoLayout bool // follow the width until the user picks a layout
	all        bool // every fold open
	open       map[int]bool

	diffKey string // the renderings the diff was asked for
	hasKey  string // the renderings the diff below is of
	diff    []wirediff.MessageDiff
	a, b    sessions.Rendering // the renderings diff was computed from

	rowsKey string
	rows    []cmpRow

	vp        viewport.Model
	layoutKey string
	anchors   []int
	folds     map[int]int
	at        int // the difference n / N last went to (1-based; 0: none)
}

// compareCall is the call being compared.
type compareCall struct {
	conv, branch string
	turn         string
	index        int
	call, path   string
	ordinal      int // which call of this path in the turn (the same call on other branches)
}

// cmpSide is one side: a strategy (0 = as actually sent) of the call on a branch.
type cmpSide struct {
	strategy int
	branch   string // the call's own branch, or another one (compare runs)
	// turn and call on another branch, once looked up
	turn, call string
	resolving  bool
	err        error
}

type (
	// compareTarget names the call to compare (from the tree, the call detail, the
	// global compare key); the root completes it with the pane's branch.
	compareTarget  struct{ turn, call string }
	openCompareMsg struct{ t compareTarget }

	compareDiffMsg struct {
		key  string
		diff []wirediff.MessageDiff
		a, b sessions.Rendering
	}
	compareResolvedMsg struct {
		side       int
		branch     string
		turn, call string
		err        error
	}
	savedMsg struct {
		path string
		err  error
	}
)

// newCompareView opens on turn's call c of branch: keep on the left, inherit on the
// right (the comparison the workbench is for), both changeable.
func newCompareView(e *env, branch, turnID string, t *trace.Turn, c *trace.Call) *compareView {
	target := compareCall{conv: e.convID(), branch: branch, turn: turnID, index: t.Index, call: c.ID, path: c.Path}
	trace.WalkCalls(t.Calls, func(x *trace.Call, _ int) {
		if x.Path == c.Path && len(x.Children) == 0 && x != c && callBefore(t.Calls, x, c) {
			target.ordinal++
		}
	})
	v := &compareView{e: e, target: target, autoLayout: true, open: map[int]bool{}, vp: viewport.New(), folds: map[int]int{}}
	left, right := 1, 2
	if len(e.strats) < 2 {
		left, right = 0, 1
	}
	v.sides[0] = cmpSide{strategy: left, branch: branch}
	v.sides[1] = cmpSide{strategy: right, branch: branch}
	return v
}

// callBefore reports whether x comes before c in the tree's order.
func callBefore(calls []*trace.Call, x, c *trace.Call) bool {
	before, found := false, false
	trace.WalkCalls(calls, func(y *trace.Call, _ int) {
		if found {
			return
		}
		if y == c {
			found = true
		} else if y == x {
			before = true
		}
	})
	return before
}

func (v *compareView) SetSize(w, h int) {
	v.w, v.h = w, h
	if v.autoLayout {
		v.layout = layoutSide
		if w < 100 {
			v.layout = layoutStacked
		}
	}
	v.vp.SetWidth(max(w-2, 1))
	v.vp.SetHeight(max(h-4, 1)) // frame, the sides' header and the summary
}

// req is side i's preview request (nil while its call on another branch is looked up).
func (v *compareView) req(i int) *sessions.PreviewRequest {
	s := v.sides[i]
	t := v.target
	r := sessions.PreviewRequest{Conv: t.conv, Branch: s.branch, Turn: t.turn, Call: t.call, Strategy: s.strategy}
	if s.branch != t.branch {
		if s.turn == "" {
			return nil
		}
		r.Turn, r.Call = s.turn, s.call
	}
	return &r
}

// sync fetches what the view needs now: the sides' calls on other branches, their
// renderings, the diff of the two. It runs after every update while the view is open.
func (v *compareView) sync() tea.Cmd {
	var cmds []tea.Cmd
	var res [2]*previewResult
	for i := range v.sides {
		s := &v.sides[i]
		if s.branch != v.target.branch && s.turn == "" && !s.resolving && s.err == nil {
			s.resolving = true
			cmds = append(cmds, resolveCall(v.e, i, v.target, s.branch))
			continue
		}
		if r := v.req(i); r != nil {
			cmds = append(cmds, v.e.previews.fetch(v.e, *r))
			res[i] = v.e.previews.get(*r)
		}
	}
	if res[0] != nil && res[1] != nil && !res[0].pending && !res[1].pending && res[0].err == nil && res[1].err == nil {
		key := fmt.Sprintf("%p|%p", res[0], res[1])
		if key != v.diffKey {
			v.diffKey = key
			a, b := res[0].r, res[1].r
			cmds = append(cmds, func() tea.Msg {
				return compareDiffMsg{key: key, diff: wirediff.Diff(messagesOf(a), messagesOf(b)), a: a, b: b}
			})
		}
	}
	return tea.Batch(cmds...)
}

// resolveCall finds the same call on another branch: the turn at the same index, the
// call of the same path (the same one of several).
func resolveCall(e *env, side int, t compareCall, branch string) tea.Cmd {
	ctx, b := e.ctx, e.b
	return func() tea.Msg {
		msg := compareResolvedMsg{side: side, branch: branch}
		pg, err := b.LoadTurns(ctx, t.conv, branch, t.index, 1)
		switch {
		case err != nil:
			msg.err = fmt.Errorf("branch %s: %w", branch, err)
			return msg
		case len(pg.Turns) == 0:
			msg.err = fmt.Errorf("branch %s has no %s", branch, turnLabel(t.index))
			return msg
		}
		n := 0
		trace.WalkCalls(pg.Turns[0].Calls, func(c *trace.Call, _ int) {
			if c.Path == t.path && len(c.Children) == 0 {
				if n == t.ordinal && msg.call == "" {
					msg.call = c.ID
				}
				n++
			}
		})
		if msg.call == "" {
			msg.err = fmt.Errorf("%s of branch %s made no call %s", turnLabel(t.index), branch, t.path)
		}
		msg.turn = pg.IDs[0]
		return msg
	}
}

func messagesOf(r sessions.Rendering) []lm.Message {
	out := make([]lm.Message, len(r.Messages))
	for i, m := range r.Messages {
		out[i] = m.Message
	}
	return out
}

func (v *compareView) bindings() []binding {
	k := v.e.keys
	table := []binding{
		bind(k.NextDiff, "next difference", true, do(func() { v.jump(1) })),
		bind(k.PrevDiff, "previous difference", false, do(func() { v.jump(-1) })),
		bind(k.Side, "other side", true, do(func() { v.active = 1 - v.active })),
		bind(k.Strategy, "strategy", true, do(func() { v.setStrategy((v.sides[v.active].strategy + 1) % (len(v.e.strats) + 1)) })),
		bind(k.Actual, "actual request", false, do(func() { v.setStrategy(0) })),
		bind(k.OtherBranch, "branch on the right", true, do(v.nextBranch)),
		bind(k.Layout, "layout", true, do(func() {
			v.autoLayout = false
			v.layout = (v.layout + 1) % 4
		})),
		bind(k.Fold, "fold / unfold all", true, do(func() { v.all = !v.all })),
		bind(k.Send, "unfold the fold on screen", false, do(v.unfoldVisible)),
		bind(k.CopyText, "copy as text", true, func() tea.Cmd { return v.copy(false) }),
		bind(k.CopyJSON, "copy as JSON", false, func() tea.Cmd { return v.copy(true) }),
		bind(k.SaveText, "save as text file", false, func() tea.Cmd { return v.save(false) }),
		bind(k.SaveJSON, "save as JSON file", false, func() tea.Cmd { return v.save(true) }),
	}
	table = append(table, viewportKeys(k, &v.vp, v.scrolled)...)
	return append(table, closeBinding(v.e), helpBinding(v.e))
}

func (v *compareView) Update(msg tea.Msg) tea.Cmd {
	if cmd, ok := keyOrWheel(msg, v.bindings(), func(d int) { scrollViewport(&v.vp, d); v.scrolled() }); ok {
		return cmd
	}
	switch msg := msg.(type) {
	case compareDiffMsg:
		if msg.key == v.diffKey {
			v.diff, v.a, v.b, v.hasKey = msg.diff, msg.a, msg.b, msg.key
			v.rowsKey = ""
		}
	case compareResolvedMsg:
		s := &v.sides[msg.side]
		if s.branch == msg.branch {
			s.resolving, s.turn, s.call, s.err = false, msg.turn, msg.call, msg.err
		}
	case savedMsg:
		if msg.err != nil {
			return v.e.fail(msg.err)
		}
		return v.e.say("saved " + msg.path)
	}
	return nil
}

func (v *compareView) setStrategy(n int) {
	v.sides[v.active].strategy = n
}

// nextBranch moves the right side to the next branch (the call's own branch included).
func (v *compareView) nextBranch() {
	bs := v.e.branches
	if len(bs) < 2 {
		v.e.status.set("no other branch: fork one (" + v.e.keys.Fork.Help().Key + ") or replay (" + v.e.keys.Replay.Help().Key + ")")
		return
	}
	cur := 0
	for i, b := range bs {
		if b.Name == v.sides[1].branch {
			cur = i
		}
	}
	name := bs[(cur+1)%len(bs)].Name
	v.sides[1] = cmpSide{strategy: v.sides[1].strategy, branch: name}
	v.active = 1
}

// results are the two sides' renderings as fetched so far.
func (v *compareView) results() [2]*previewResult {
	var res [2]*previewResult
	for i := range v.sides {
		if r := v.req(i); r != nil {
			res[i] = v.e.previews.get(*r)
		}
	}
	return res
}

// ready reports whether the diff is of the sides chosen now.
func (v *compareView) ready() bool {
	res := v.results()
	return res[0] != nil && res[1] != nil && v.hasKey == fmt.Sprintf("%p|%p", res[0], res[1])
}

// build lays the rows out for the current size, layout and folds.
func (v *compareView) build() {
	foldKey := fmt.Sprint(v.all, len(v.open))
	if rk := v.hasKey + "|" + foldKey; rk != v.rowsKey {
		v.rowsKey = rk
		v.rows = compareRows(v.a, v.b, v.diff, v.open, v.all)
		v.layoutKey = ""
	}
	lk := fmt.Sprintf("%s|%d|%d|%d", v.rowsKey, v.vp.Width(), v.layout, v.e.styleGen)
	if lk == v.layoutKey {
		return
	}
	v.layoutKey = lk
	lines, anchors, folds := layoutRows(v.rows, v.vp.Width(), v.layout, newCompareStyles(v.e.st), [2]string{v.sideLabel(0), v.sideLabel(1)})
	v.anchors, v.folds = anchors, folds
	off := v.vp.YOffset()
	v.vp.SetContentLines(lines)
	v.vp.SetYOffset(off)
}

// jump goes to the next (dir 1) or previous (-1) difference: it scrolls it to the top,
// one line of context above it.
func (v *compareView) jump(dir int) {
	v.build()
	next := v.at + dir
	if next < 1 || next > len(v.anchors) {
		if len(v.anchors) == 0 {
			v.e.status.set("no differences")
		} else {
			v.e.status.set("no more differences that way")
		}
		return
	}
	v.at = next
	v.vp.SetYOffset(max(v.anchors[next-1]-1, 0))
}

// scrolled follows a scroll: the difference at the top is the current one.
func (v *compareView) scrolled() {
	y := v.vp.YOffset()
	v.at = 0
	for i, a := range v.anchors {
		if a-1 <= y {
			v.at = i + 1
		}
	}
}

// unfoldVisible opens the first fold on screen.
func (v *compareView) unfoldVisible() {
	v.build()
	y, h := v.vp.YOffset(), v.vp.Height()
	best, at := -1, 0
	for id, line := range v.folds {
		if line >= y && line < y+h && (best < 0 || line < at) {
			best, at = id, line
		}
	}
	if best < 0 {
		v.e.status.set("no folded lines on screen (" + v.e.keys.Fold.Help().Key + " unfolds all)")
		return
	}
	v.open[best] = true
}

// sideLabel names a side: its strategy, and its branch when that is another one.
func (v *compareView) sideLabel(i int) string {
	s := v.sides[i]
	l := strategyLabel(v.e.strats, s.strategy)
	if s.branch != v.target.branch {
		l += " on " + termtext.OneLine(s.branch)
	}
	return l
}

// rendering is side i's rendering, if fetched.
func (v *compareView) rendering(i int) (sessions.Rendering, bool) {
	res := v.results()[i]
	if res == nil || res.pending || res.err != nil {
		return sessions.Rendering{}, false
	}
	return res.r, true
}

func (v *compareView) View() []string {
	s := v.e.st.s
	w := v.w - 2
	title := fmt.Sprintf(" compare · %s · %s ", turnLabel(v.target.index), termtext.OneLine(v.target.path))
	var head []string
	res := v.results()
	label := func(i int) string {
		mark := "  "
		if i == v.active {
			mark = "▸ "
		}
		if v.layout == layoutStacked {
			mark += [2]string{"- ", "+ "}[i] // the stacked lines' markers
		}
		text := mark + v.sideLabel(i)
		if r, ok := v.rendering(i); ok {
			text += fmt.Sprintf(" · %d messages · %s tok", len(r.Messages), humanTokens(r.Tokens))
			if a, ok := v.rendering(0); ok && i == 1 {
				text += " (" + signed(r.Tokens-a.Tokens) + ")"
			}
		}
		st := s.Muted
		if i == v.active {
			st = s.Title
		}
		return st.Render(text)
	}
	if v.layout == layoutSide {
		colW := (w - 3) / 2
		head = append(head, fit(label(0), colW)+s.TreeBranch.Render(" │ ")+fit(label(1), colW))
	} else {
		// one column: a line per side, so neither label is cut
		head = append(head, fit(label(0), w), fit(label(1), w))
	}
	v.vp.SetHeight(max(v.h-2-len(head)-1, 1)) // frame, the labels and the summary
	var body []string
	var problem string
	for i, r := range res {
		sd := v.sides[i]
		switch {
		case sd.err != nil:
			problem = "✗ " + v.sideLabel(i) + ": " + termtext.OneLine(sd.err.Error())
		case r != nil && r.err != nil:
			problem = "✗ " + v.sideLabel(i) + ": " + termtext.OneLine(r.err.Error())
		case r != nil && !r.pending && r.r.Err != "" && len(r.r.Messages) == 0:
			problem = "✗ " + v.sideLabel(i) + " cannot render this call: " + termtext.OneLine(r.r.Err)
		}
	}
	switch {
	case problem != "":
		head = append(head, s.Error.Render(fit(problem, w)))
	case !v.ready():
		head = append(head, s.Muted.Render("rendering both sides…"))
	default:
		v.build()
		head = append(head, s.Muted.Render(fit(v.summary(), w)))
		body = strings.Split(v.vp.View(), "\n")
	}
	n := v.vp.TotalLineCount()
	pos := fmt.Sprintf(" %d/%d", min(v.vp.YOffset()+v.vp.Height(), n), n)
	switch cur := v.at; {
	case len(v.anchors) == 0:
	case cur == 0:
		pos += " · " + termtext.Count(len(v.anchors), "difference") + " (" + v.e.keys.NextDiff.Help().Key + " jumps)"
	default:
		pos += fmt.Sprintf(" · difference %d/%d", cur, len(v.anchors))
	}
	footer := pos + " · " + v.layout.String() + " "
	return frame(s.PaneFocused, s.PaneTitle, title, footer, append(head, body...), v.w, v.h)
}

// summary counts what differs.
func (v *compareView) summary() string {
	msgs, lines := 0, 0
	for _, md := range v.diff {
		if md.Op != wirediff.Same {
			msgs++
		}
		for _, l := range md.Lines {
			if l.Op != wirediff.Same {
				lines++
			}
		}
	}
	if msgs == 0 {
		return "identical requests: both sides send the same messages"
	}
	verb := " differ ("
	if msgs == 1 {
		verb = " differs ("
	}
	return termtext.Count(msgs, "message") + verb + termtext.Count(lines, "line") + fmt.Sprintf(") · tokens %s → %s (%s)",
		humanTokens(v.a.Tokens), humanTokens(v.b.Tokens), signed(v.b.Tokens-v.a.Tokens))
}

// requestText is a rendering as plain text, the way the wire pane shows it.
func requestText(r sessions.Rendering) string {
	var b strings.Builder
	for i, m := range r.Messages {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "── %s ──\n%s\n", m.Role, m.Content)
	}
	return b.String()
}

// requestJSON is a rendering as JSON: the messages as the chat API takes them, with what
// they are.
func requestJSON(label string, r sessions.Rendering) (string, error) {
	type msg struct {
		Role    string `json:"role"`
		Content string `json:"content"`
		Tokens  int    `json:"tokens"`
	}
	out := struct {
		Strategy string `json:"strategy"`
		Call     string `json:"call"`
		Path     string `json:"path"`
		Tokens   int    `json:"tokens"`
		Messages []msg  `json:"messages"`
	}{Strategy: label, Call: r.CallID, Path: r.Path, Tokens: r.Tokens, Messages: []msg{}}
	for _, m := range r.Messages {
		out.Messages = append(out.Messages, msg{Role: m.Role, Content: m.Content, Tokens: m.Tokens})
	}
	data, err := json.MarshalIndent(out, "", "  ")
	return string(data) + "\n", err
}

// content is the active side's request as text or JSON.
func (v *compareView) content(asJSON bool) (string, string, error) {
	r, ok := v.rendering(v.active)
	if !ok {
		return "", "", fmt.Errorf("the %s side is not rendered yet", v.sideLabel(v.active))
	}
	label := v.sideLabel(v.active)
	if asJSON {
		s, err := requestJSON(label, r)
		return s, label, err
	}
	return requestText(r), label, nil
}

// copy puts the active side's request on the clipboard (OSC 52: it works over ssh and
// in tmux with set-clipboard on).
func (v *compareView) copy(asJSON bool) tea.Cmd {
	text, label, err := v.content(asJSON)
	if err != nil {
		return v.e.fail(err)
	}
	form := "text"
	if asJSON {
		form = "JSON"
	}
	v.e.status.set(fmt.Sprintf("copied the %s request as %s (%d bytes) to the clipboard", label, form, len(text)))
	return tea.SetClipboard(text)
}

// save writes the active side's request to a file in the save folder.
func (v *compareView) save(asJSON bool) tea.Cmd {
	text, label, err := v.content(asJSON)
	if err != nil {
		return v.e.fail(err)
	}
	ext := ".txt"
	if asJSON {
		ext = ".json"
	}
	name := fileSafe(fmt.Sprintf("request-%s-turn%d-%s-%s", v.target.conv, v.target.index, v.target.path, label)) + ext
	path := filepath.Join(v.e.saveDir, name)
	return func() tea.Msg {
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			return savedMsg{err: fmt.Errorf("save the request: %w", err)}
		}
		return savedMsg{path: path}
	}
}

// fileSafe keeps letters, digits, dots and dashes.
func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '-'
	}, s)
}
