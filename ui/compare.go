package ui

import (
	"context"
	"fmt"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// compareLimit caps how many turns of each branch the compare view loads.
const compareLimit = 5000

// replayForm chooses what a replay changes: model, strategy or agent.
type replayForm struct {
	branch   string
	from     string // TurnID; "" = whole branch
	fromIdx  int
	strategy int // 0 keeps
	agent    int // -1 keeps
	model    textinput.Model
}

func (m *Model) openReplay() {
	p := m.pane()
	if p == nil || m.conv == nil {
		m.setStatus("no branch to replay")
		return
	}
	f := &replayForm{branch: p.branch, agent: -1, model: textinput.New()}
	if p.sel >= 0 {
		if id, t := p.turnAt(p.sel); t != nil {
			f.from, f.fromIdx = id, t.Index
		}
	}
	f.model.Placeholder = "model (empty keeps " + termtext.OneLine(m.b.ModelName()) + ")"
	f.model.Focus()
	m.replay = f
	m.overlay = overlayReplay
}

func (m *Model) replayKey(k tea.KeyPressMsg) tea.Cmd {
	f := m.replay
	switch {
	case key.Matches(k, m.keys.Cancel):
		m.overlay = overlayNone
		return nil
	case k.String() == "tab":
		f.strategy = (f.strategy + 1) % (len(m.strats) + 1)
		return nil
	case k.String() == "shift+tab":
		if n := len(m.b.Agents()); n > 0 {
			f.agent++
			if f.agent >= n {
				f.agent = -1
			}
		}
		return nil
	case k.String() == "enter":
		return m.startReplay()
	}
	var cmd tea.Cmd
	f.model, cmd = f.model.Update(k)
	return cmd
}

func (m *Model) startReplay() tea.Cmd {
	f := m.replay
	if m.run != nil {
		m.setStatus("a turn is running: esc cancels it")
		return nil
	}
	req := sessions.ReplayRequest{Conv: m.conv.ID, Branch: f.branch, From: f.from, Model: f.model.Value(), Strategy: f.strategy}
	if ags := m.b.Agents(); f.agent >= 0 && f.agent < len(ags) {
		req.Agent = ags[f.agent].Name
	}
	m.overlay = overlayNone
	m.setStatus("replaying " + termtext.OneLine(f.branch) + "…")
	b := m.b
	return m.startRun(m.pane(), "replay", func(ctx context.Context, ev chan<- sessions.Event) (string, *trace.Turn, error) {
		name, err := b.Replay(ctx, req, ev)
		return name, nil, err
	})
}

func (m *Model) replayView(w, h int) []string {
	s := m.st.s
	f := m.replay
	from := "the first turn"
	if f.from != "" {
		from = fmt.Sprintf("turn %d", f.fromIdx+1)
	}
	// "unchanged" rather than "keep": keep is also the name of strategy 1
	agent := "unchanged (" + termtext.OneLine(m.agent.Name) + ")"
	if ags := m.b.Agents(); f.agent >= 0 && f.agent < len(ags) {
		agent = termtext.OneLine(ags[f.agent].Name)
	}
	strat := "unchanged"
	if f.strategy > 0 {
		strat = strategyLabel(m.strats, f.strategy)
	}
	f.model.SetWidth(max(w-16, 10)) // frame, indent, label and the "> " prompt take the rest
	body := []string{
		"Replay " + s.Accent.Render(termtext.OneLine(f.branch)) + " from " + from + " into a new sibling branch,",
		"then compare both side by side, turn by turn.",
		"",
		s.Muted.Render("strategy (tab):      ") + strat,
		s.Muted.Render("agent (shift+tab):   ") + agent,
		s.Muted.Render("model: ") + f.model.View(),
	}
	return frame(s.PaneFocused, s.PaneTitle, " compare runs ", hints(as(m.keys.Send, "replay"), as(m.keys.Cancel, "back")), indent(body, " "), w, h)
}

// compareView shows two branches turn by turn, marking turns whose outputs differ.
type compareView struct {
	left, right   string
	lt, rt        []*trace.Turn
	lu, ru        lm.Usage // token totals
	loading       bool
	top           int
	rows          []string
	width         int
	differing     int
	leftN, rightN int
}

type compareMsg struct {
	left, right   []*trace.Turn
	leftN, rightN int
	err           error
}

func (m *Model) openCompare(left, right string) tea.Cmd {
	m.cmp = &compareView{left: left, right: right, loading: true}
	m.overlay = overlayCompare
	ctx, b, conv := m.ctx, m.b, m.conv.ID
	return func() tea.Msg {
		lp, err := b.LoadTurns(ctx, conv, left, 0, compareLimit)
		if err != nil {
			return compareMsg{err: fmt.Errorf("compare %s: %w", left, err)}
		}
		rp, err := b.LoadTurns(ctx, conv, right, 0, compareLimit)
		if err != nil {
			return compareMsg{err: fmt.Errorf("compare %s: %w", right, err)}
		}
		return compareMsg{left: lp.Turns, right: rp.Turns, leftN: lp.Total, rightN: rp.Total}
	}
}

func (c *compareView) apply(msg compareMsg) {
	c.loading = false
	c.lt, c.rt, c.leftN, c.rightN = msg.left, msg.right, msg.leftN, msg.rightN
	c.lu, c.ru = lm.Usage{}, lm.Usage{}
	for _, t := range c.lt {
		_, tok, _, _ := turnStats(t)
		c.lu = c.lu.Add(tok)
	}
	for _, t := range c.rt {
		_, tok, _, _ := turnStats(t)
		c.ru = c.ru.Add(tok)
	}
	c.width = 0
}

func (c *compareView) key(m *Model, k tea.KeyPressMsg) {
	h := m.h - 6
	switch {
	case key.Matches(k, m.keys.Up):
		c.top = max(0, c.top-1)
	case key.Matches(k, m.keys.Down):
		c.top = max(0, min(c.top+1, len(c.rows)-h))
	case key.Matches(k, m.keys.PageUp):
		c.top = max(0, c.top-h)
	case key.Matches(k, m.keys.PgDown):
		c.top = max(0, min(c.top+h, len(c.rows)-h))
	}
}

// build lays out every turn pair once per width.
func (c *compareView) build(m *Model, w int) {
	s := m.st.s
	colW := (w - 3) / 2
	c.rows, c.differing = nil, 0
	n := max(len(c.lt), len(c.rt))
	for i := 0; i < n; i++ {
		var lt, rt *trace.Turn
		if i < len(c.lt) {
			lt = c.lt[i]
		}
		if i < len(c.rt) {
			rt = c.rt[i]
		}
		same := lt != nil && rt != nil && lt.Outputs.Equal(rt.Outputs)
		mark := s.Success.Render("=")
		if !same {
			mark = s.Error.Render("≠")
			c.differing++
		}
		var in *trace.Turn = lt
		if in == nil {
			in = rt
		}
		c.rows = append(c.rows, mark+s.UserLabel.Render(fmt.Sprintf(" #%d ", i+1))+termtext.OneLine(mapText(in.Inputs)))
		l, r := compareSide(lt, colW), compareSide(rt, colW)
		if !same {
			for j := range l {
				l[j] = s.DiffDel.Render(l[j])
			}
			for j := range r {
				r[j] = s.DiffAdd.Render(r[j])
			}
		}
		for j := 0; j < max(len(l), len(r)); j++ {
			var x, y string
			if j < len(l) {
				x = l[j]
			}
			if j < len(r) {
				y = r[j]
			}
			c.rows = append(c.rows, fit(x, colW)+s.TreeBranch.Render(" │ ")+fit(y, colW))
		}
	}
	c.width = w
}

func compareSide(t *trace.Turn, w int) []string {
	if t == nil {
		return []string{"(no turn)"}
	}
	_, tok, _, errs := turnStats(t)
	out := wrapLines(termtext.Sanitize(mapText(t.Outputs)), w)
	out = append(out, usageLabel(tok)+" tok")
	for _, e := range errs {
		out = append(out, "✗ "+termtext.OneLine(e))
	}
	return out
}

// mapText shows a value map: a lone value as is, several as "k: v" lines.
func mapText(m *sig.Map) string {
	if m.Len() == 1 {
		return py.Text(mustGet(m, m.Keys()[0]))
	}
	var s string
	m.Range(func(k string, v any) bool {
		s += k + ": " + py.Text(v) + "\n"
		return true
	})
	return s
}

func mustGet(m *sig.Map, k string) any { v, _ := m.Get(k); return v }

func (c *compareView) view(m *Model, w, h int) []string {
	s := m.st.s
	bw, bh := w-2, h-2
	if c.loading {
		return frame(s.PaneFocused, s.PaneTitle, " compare ", "", []string{s.Muted.Render("loading both branches…")}, w, h)
	}
	if c.width != bw {
		c.build(m, bw)
	}
	colW := (bw - 3) / 2
	head := fit(fmt.Sprintf("%s · %s · %s tok", termtext.OneLine(c.left), count(c.leftN, "turn"), usageLabel(c.lu)), colW) + " │ " +
		fit(fmt.Sprintf("%s · %s · %s tok", termtext.OneLine(c.right), count(c.rightN, "turn"), usageLabel(c.ru)), colW)
	body := []string{s.Title.Render(head)}
	c.top = max(0, min(c.top, len(c.rows)-(bh-1)))
	body = append(body, c.rows[c.top:min(len(c.rows), c.top+bh-1)]...)
	footer := " " + count(c.differing, "differing turn") + " ·" + hints(as(m.keys.Down, "scroll"), as(m.keys.Cancel, "back"))
	return frame(s.PaneFocused, s.PaneTitle, " compare runs ", footer, body, w, h)
}
