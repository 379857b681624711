package ui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// runsLimit caps how many turns of each branch the runs compare loads.
const runsLimit = 5000

// runsView shows two branches turn by turn (a replay next to its original), marking the
// turns whose outputs differ.
type runsView struct {
	e             *env
	w, h          int
	left, right   string
	lt, rt        []*trace.Turn
	lu, ru        lm.Usage // token totals
	leftN, rightN int
	loading       bool
	differing     int
	vp            viewport.Model
	builtW        int
}

type runsMsg struct {
	left, right   []*trace.Turn
	leftN, rightN int
	err           error
}

// newRunsView opens on two branches and returns the command loading them.
func newRunsView(e *env, left, right string) (*runsView, tea.Cmd) {
	v := &runsView{e: e, left: left, right: right, loading: true, vp: viewport.New()}
	ctx, b, conv := e.ctx, e.b, e.convID()
	return v, func() tea.Msg {
		lp, err := b.LoadTurns(ctx, conv, left, 0, runsLimit)
		if err != nil {
			return runsMsg{err: fmt.Errorf("compare %s: %w", left, err)}
		}
		rp, err := b.LoadTurns(ctx, conv, right, 0, runsLimit)
		if err != nil {
			return runsMsg{err: fmt.Errorf("compare %s: %w", right, err)}
		}
		return runsMsg{left: lp.Turns, right: rp.Turns, leftN: lp.Total, rightN: rp.Total}
	}
}

func (v *runsView) SetSize(w, h int) {
	v.w, v.h = w, h
	v.vp.SetWidth(max(w-2, 1))
	v.vp.SetHeight(max(h-3, 1)) // frame and the column header
	if !v.loading && v.builtW != w-2 {
		v.build()
	}
}

func (v *runsView) bindings() []binding {
	return append(viewportKeys(v.e.keys, &v.vp, nil), closeBinding(v.e), helpBinding(v.e))
}

func (v *runsView) Update(msg tea.Msg) tea.Cmd {
	if cmd, ok := keyOrWheel(msg, v.bindings(), func(d int) { scrollViewport(&v.vp, d) }); ok {
		return cmd
	}
	switch msg := msg.(type) {
	case runsMsg:
		v.loading = false
		if msg.err != nil {
			return v.e.fail(msg.err)
		}
		v.lt, v.rt, v.leftN, v.rightN = msg.left, msg.right, msg.leftN, msg.rightN
		v.lu, v.ru = lm.Usage{}, lm.Usage{}
		for _, t := range v.lt {
			_, u, _, _ := turnStats(t)
			v.lu = v.lu.Add(u)
		}
		for _, t := range v.rt {
			_, u, _, _ := turnStats(t)
			v.ru = v.ru.Add(u)
		}
		v.build()
	}
	return nil
}

// build lays out every turn pair once per width.
func (v *runsView) build() {
	s := v.e.st.s
	w := v.w - 2
	v.builtW = w
	colW := (w - 3) / 2
	var rows []string
	v.differing = 0
	for i := 0; i < max(len(v.lt), len(v.rt)); i++ {
		var lt, rt *trace.Turn
		if i < len(v.lt) {
			lt = v.lt[i]
		}
		if i < len(v.rt) {
			rt = v.rt[i]
		}
		same := lt != nil && rt != nil && lt.Outputs.Equal(rt.Outputs)
		mark := s.Success.Render("=")
		if !same {
			mark = s.Error.Render("≠")
			v.differing++
		}
		in := lt
		if in == nil {
			in = rt
		}
		rows = append(rows, mark+s.UserLabel.Render(fmt.Sprintf(" #%d ", in.Index))+termtext.OneLine(mapText(in.Inputs)))
		l, r := runsSide(lt, colW), runsSide(rt, colW)
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
			rows = append(rows, fit(x, colW)+s.TreeBranch.Render(" │ ")+fit(y, colW))
		}
	}
	v.vp.SetContentLines(rows)
}

func runsSide(t *trace.Turn, w int) []string {
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
		v, _ := m.Get(m.Keys()[0])
		return py.Text(v)
	}
	var b strings.Builder
	m.Range(func(k string, v any) bool {
		b.WriteString(k + ": " + py.Text(v) + "\n")
		return true
	})
	return b.String()
}

func (v *runsView) View() []string {
	s := v.e.st.s
	if v.loading {
		return frame(s.PaneFocused, s.PaneTitle, " compare runs ", "", []string{s.Muted.Render("loading both branches…")}, v.w, v.h)
	}
	colW := (v.w - 2 - 3) / 2
	head := fit(fmt.Sprintf("%s · %s · %s tok", termtext.OneLine(v.left), termtext.Count(v.leftN, "turn"), usageLabel(v.lu)), colW) + " │ " +
		fit(fmt.Sprintf("%s · %s · %s tok", termtext.OneLine(v.right), termtext.Count(v.rightN, "turn"), usageLabel(v.ru)), colW)
	body := append([]string{s.Title.Render(head)}, strings.Split(v.vp.View(), "\n")...)
	footer := " " + termtext.Count(v.differing, "differing turn") + " ·" + hints(hintsOf(v.bindings())...)
	return frame(s.PaneFocused, s.PaneTitle, " compare runs ", footer, body, v.w, v.h)
}
