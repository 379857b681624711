package ui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// wirePane shows the exact messages of the selected call under a strategy (0 = actual)
// or, while the user is typing, the dry run of the text being typed. The compare key
// opens the full-screen compare view instead of squeezing two columns in here.
type wirePane struct {
	e        *env
	w, h     int
	strategy int // 0 actual, 1-5

	target wireTarget
	dry    dryState
	asked  dryAsk // the dry run last scheduled
	vp     viewport.Model
	// memoKey names what the viewport's content was drawn from
	memoKey string
}

// wireTarget is what the pane shows, as the root derives it from the focus and the
// selection: the dry run of the editor's text, a recorded call, or why there is none.
type wireTarget struct {
	dry   bool
	req   *sessions.PreviewRequest
	empty string
}

// dryState is the dry run of the text being typed.
type dryState struct {
	version  int // input version it was computed for
	strategy int
	rs       []sessions.Rendering
	err      error
}

// dryAsk is an input version and strategy a dry run was scheduled for.
type dryAsk struct{ version, strategy int }

type (
	dryTickMsg struct{ version int }
	dryMsg     struct {
		version, strategy int
		rs                []sessions.Rendering
		err               error
	}
)

func newWirePane(e *env) *wirePane { return &wirePane{e: e, vp: viewport.New()} }

// SetSize sets the frame's size.
func (p *wirePane) SetSize(w, h int) {
	if w-2 != p.vp.Width() {
		p.memoKey = ""
	}
	p.w, p.h = w, h
	p.vp.SetWidth(max(w-2, 1))
	p.vp.SetHeight(max(h-2, 1))
}

// bindings is the pane's own key table (the strategy keys work from every pane and are
// the root's).
func (p *wirePane) bindings() []binding {
	return viewportKeys(p.e.keys, &p.vp, nil)
}

func (p *wirePane) Update(msg tea.Msg) tea.Cmd {
	if cmd, ok := keyOrWheel(msg, p.bindings(), func(d int) { scrollViewport(&p.vp, d) }); ok {
		return cmd
	}
	switch msg := msg.(type) {
	case dryMsg:
		p.dry = dryState(msg)
		p.memoKey = ""
	}
	return nil
}

// cycle moves to the next strategy: actual, 1, ..., n, actual.
func (p *wirePane) cycle() {
	p.strategy = (p.strategy + 1) % (len(p.e.strats) + 1)
	p.vp.GotoTop()
}

func (p *wirePane) setActual() {
	p.strategy = 0
	p.vp.GotoTop()
}

// show sets what the pane shows; it returns the commands fetching what is missing.
func (p *wirePane) show(t wireTarget) tea.Cmd {
	p.target = t
	if t.req == nil || t.dry {
		return nil
	}
	r := *t.req
	r.Strategy = p.strategy
	return p.e.previews.fetch(p.e, r)
}

// scheduleDry debounces: the dry run starts when typing pauses for 250ms. It is asked
// after every update, so it schedules each input version once.
func (p *wirePane) scheduleDry(version int) tea.Cmd {
	want := dryAsk{version, p.strategy}
	if p.dry.version == version && p.dry.strategy == p.strategy || p.asked == want {
		return nil
	}
	p.asked = want
	return tea.Tick(250*time.Millisecond, func(time.Time) tea.Msg { return dryTickMsg{version: version} })
}

// runDry renders the next turn with inputs under the pane's strategy.
func (p *wirePane) runDry(conv, branch string, version int, inputs *sig.Map, err error) tea.Cmd {
	strategy := p.strategy
	if err != nil {
		p.dry = dryState{version: version, strategy: strategy, err: err}
		p.memoKey = ""
		return nil
	}
	ctx, b := p.e.ctx, p.e.b
	return func() tea.Msg {
		rs, err := b.DryRun(ctx, conv, branch, inputs, strategy)
		return dryMsg{version: version, strategy: strategy, rs: rs, err: err}
	}
}

// mode is the header's name for what the pane shows.
func (p *wirePane) mode() string { return strategyLabel(p.e.strats, p.strategy) }

// View draws the pane's frame at its size.
func (p *wirePane) View(focused bool, inputVersion int) []string {
	fs, ts := paneStyle(p.e.st, focused)
	w := p.w - 2
	s := p.e.st.s
	title := " wire · " + p.mode() + " "
	var key string
	var build func() []string
	switch t := p.target; {
	case t.dry:
		// "actual" means what was sent; before sending, strategy 0 is what enter will send
		mode := p.mode()
		if p.strategy == 0 {
			mode = "as enter will send it"
		}
		title = " wire · dry run · " + mode + " "
		d := p.dry
		key = fmt.Sprintf("dry|%d|%d|%d|%d|%v", inputVersion, d.version, d.strategy, w, d.err)
		build = func() []string {
			switch {
			case d.err != nil:
				return wrapLines(s.Error.Render("✗ ")+termtext.Sanitize(d.err.Error()), w)
			case d.version != inputVersion || d.rs == nil:
				return []string{s.Muted.Render("rendering the text being typed…")}
			}
			return renderingLines(p.e, d.rs, w)
		}
	case t.req == nil:
		return frame(fs, ts, title, "", wrapLines(s.Muted.Render(t.empty), w), p.w, p.h)
	default:
		r := *t.req
		r.Strategy = p.strategy
		res := p.e.previews.get(r)
		key = previewKey(r) + fmt.Sprintf("|%d|%p", w, res)
		build = func() []string {
			switch {
			case res == nil || res.pending:
				return []string{s.Muted.Render("rendering…")}
			case res.err != nil:
				return wrapLines(s.Error.Render("✗ ")+termtext.Sanitize(res.err.Error()), w)
			}
			return renderingLines(p.e, []sessions.Rendering{res.r}, w)
		}
	}
	key += fmt.Sprintf("|%d", p.e.styleGen)
	if key != p.memoKey {
		p.memoKey = key
		p.vp.SetContentLines(build())
	}
	body := strings.Split(p.vp.View(), "\n")
	n := p.vp.TotalLineCount()
	footer := fmt.Sprintf(" %d/%d ", min(p.vp.YOffset()+p.vp.Height(), n), n)
	return frame(fs, ts, title, footer, body, p.w, p.h)
}

func strategyLabel(strats []core.StrategyInfo, n int) string {
	if n == 0 {
		return "actual"
	}
	for _, s := range strats {
		if s.Number == n {
			return fmt.Sprintf("%d %s", n, s.Name)
		}
	}
	return fmt.Sprintf("%d", n)
}

// renderingLines draws renderings one after another: a header, then each message under
// its role with its token count, lint warnings under the message they concern.
func renderingLines(e *env, rs []sessions.Rendering, w int) []string {
	s := e.st.s
	var out []string
	put := func(text string, st lipgloss.Style) {
		for _, piece := range wrapLines(text, w) {
			out = append(out, st.Render(piece))
		}
	}
	for i, r := range rs {
		if i > 0 {
			out = append(out, "")
		}
		put(fmt.Sprintf("%s · %s · %d messages · %s tok", strategyLabel(e.strats, r.Strategy), termtext.OneLine(r.Path), len(r.Messages), humanTokens(r.Tokens)), s.Title)
		if r.Err != "" {
			put("✗ "+termtext.OneLine(r.Err), s.Error)
		}
		for _, l := range r.Warnings {
			if l.Message < 0 {
				put("⚠ "+termtext.OneLine(l.Text), s.Warning)
			}
		}
		for j, m := range r.Messages {
			put(fmt.Sprintf("── %s · %d tok ──", termtext.OneLine(m.Role), m.Tokens), roleStyle(e.st, m.Role))
			for _, l := range r.Warnings {
				if l.Message == j {
					put("⚠ "+termtext.OneLine(l.Text), s.Warning)
				}
			}
			for _, line := range strings.Split(termtext.Sanitize(m.Content), "\n") {
				put(line, s.Text)
			}
		}
	}
	return out
}

func roleStyle(st *stylesheet, role string) lipgloss.Style {
	switch role {
	case "user":
		return st.s.UserLabel
	case "assistant":
		return st.s.AssistantLabel
	default:
		return st.s.SystemLabel
	}
}

// previewResult is a rendering being fetched, or fetched.
type previewResult struct {
	pending bool
	r       sessions.Rendering
	err     error
}

// previewMsg is a fetched rendering.
type previewMsg struct {
	key string
	r   sessions.Rendering
	err error
}

// previewCache holds the renderings the wire pane and the compare view asked for, by
// request; a reload (undo, redo, fork, a new turn) empties it.
type previewCache map[string]*previewResult

func previewKey(req sessions.PreviewRequest) string {
	return fmt.Sprintf("%s|%s|%s|%s|%d", req.Conv, req.Branch, req.Turn, req.Call, req.Strategy)
}

func (c previewCache) get(req sessions.PreviewRequest) *previewResult { return c[previewKey(req)] }

// fetch returns the command rendering req, unless it is fetched or on its way.
func (c previewCache) fetch(e *env, req sessions.PreviewRequest) tea.Cmd {
	k := previewKey(req)
	if _, ok := c[k]; ok {
		return nil
	}
	c[k] = &previewResult{pending: true}
	ctx, b := e.ctx, e.b
	return func() tea.Msg {
		r, err := b.Preview(ctx, req)
		return previewMsg{key: k, r: r, err: err}
	}
}

func (c previewCache) apply(msg previewMsg) {
	c[msg.key] = &previewResult{r: msg.r, err: msg.err}
}
