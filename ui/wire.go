package ui

import (
	"fmt"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"strings"

	"charm.land/lipgloss/v2"
)

// wirePane shows the exact messages of the selected call under a strategy (0 = actual),
// or two strategies side by side with their differences marked, or, while the user is
// typing, the dry run of the text being typed.
type wirePane struct {
	strategy   int // 0 actual, 1-5
	compare    bool
	cmpA, cmpB int
	top        int

	// memo of the last drawn body, keyed by what it was drawn from
	memoKey   string
	memoLines []string
}

func newWirePane() *wirePane { return &wirePane{strategy: 0, cmpA: 1, cmpB: 2} }

// previewResult is a sessions.Rendering being fetched or fetched.
type previewResult struct {
	pending bool
	r       sessions.Rendering
	err     error
}

func strategyLabel(strats []sessions.Strategy, n int) string {
	if n == 0 {
		return "actual"
	}
	for _, s := range strats {
		if s.N == n {
			return fmt.Sprintf("%d %s", n, s.Name)
		}
	}
	return fmt.Sprintf("%d", n)
}

// renderingText is a rendering as logical lines (not yet wrapped), each with the style
// it is drawn in: role headers, warnings, content.
type styledLine struct {
	text string
	st   lipgloss.Style
	warn bool
}

func renderingText(st *stylesheet, strats []sessions.Strategy, r sessions.Rendering) []styledLine {
	s := st.s
	var out []styledLine
	head := fmt.Sprintf("%s · %s · %d messages · %s tok", strategyLabel(strats, r.Strategy), OneLine(r.Path), len(r.Messages), humanTokens(r.Tokens))
	out = append(out, styledLine{text: head, st: s.Title})
	if r.Err != "" {
		out = append(out, styledLine{text: "✗ " + OneLine(r.Err), st: s.Error})
	}
	for _, l := range r.Warnings {
		if l.Message < 0 {
			out = append(out, styledLine{text: "⚠ " + OneLine(l.Text), st: s.Warning, warn: true})
		}
	}
	for i, m := range r.Messages {
		out = append(out, styledLine{text: fmt.Sprintf("── %s · %d tok ──", OneLine(m.Role), m.Tokens), st: roleStyle(st, m.Role)})
		for _, l := range r.Warnings {
			if l.Message == i {
				out = append(out, styledLine{text: "⚠ " + OneLine(l.Text), st: s.Warning, warn: true})
			}
		}
		for _, line := range strings.Split(Sanitize(m.Content), "\n") {
			out = append(out, styledLine{text: line, st: s.Text})
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

// wrapStyled wraps logical lines to w, styling each piece.
func wrapStyled(ls []styledLine, w int, mark func(i int) lipgloss.Style) []string {
	var out []string
	for i, l := range ls {
		stl := l.st
		if mark != nil {
			stl = mark(i)
		}
		for _, piece := range wrapLines(l.text, w) {
			out = append(out, stl.Render(piece))
		}
	}
	return out
}

// singleLines draws one or more renderings one after another.
func singleLines(st *stylesheet, strats []sessions.Strategy, rs []sessions.Rendering, w int) []string {
	var out []string
	for i, r := range rs {
		if i > 0 {
			out = append(out, "")
		}
		out = append(out, wrapStyled(renderingText(st, strats, r), w, nil)...)
	}
	return out
}

// compareLines draws two renderings side by side, aligned by a line diff: lines only on
// the left are marked as removed, lines only on the right as added. The two headers
// (strategy, path, tokens) always differ, so they head the columns instead of the diff.
func compareLines(st *stylesheet, strats []sessions.Strategy, a, b sessions.Rendering, w int) []string {
	colW := (w - 3) / 2
	left, right := renderingText(st, strats, a), renderingText(st, strats, b)
	ops := diffLines(plainTexts(left[1:]), plainTexts(right[1:]))
	s := st.s
	sep := s.TreeBranch.Render(" │ ")
	var out []string
	row := func(l, r []string) {
		for i := 0; i < max(len(l), len(r)); i++ {
			var x, y string
			if i < len(l) {
				x = l[i]
			}
			if i < len(r) {
				y = r[i]
			}
			out = append(out, fit(x, colW)+sep+fit(y, colW))
		}
	}
	row(wrapStyled(left[:1], colW, nil), wrapStyled(right[:1], colW, nil))
	differ := 0
	for _, op := range ops {
		if op.kind != diffEq {
			differ++
		}
	}
	summary := fmt.Sprintf("%d line(s) differ · tokens %s vs %s", differ, humanTokens(a.Tokens), humanTokens(b.Tokens))
	if differ == 0 {
		summary = "identical messages under both strategies"
	}
	out = append(out, s.Muted.Render(fit(summary, w)))
	marked := func(l styledLine, sign string, stl lipgloss.Style) []string {
		ps := wrapLines(l.text, colW-1)
		for i := range ps {
			pre := " "
			if i == 0 {
				pre = sign
			}
			ps[i] = stl.Render(pre + ps[i])
		}
		return ps
	}
	for _, op := range ops {
		switch op.kind {
		case diffEq:
			row(wrapStyled(left[op.a+1:op.a+2], colW, nil), wrapStyled(right[op.b+1:op.b+2], colW, nil))
		case diffDel:
			row(marked(left[op.a+1], "-", s.DiffDel), nil)
		case diffAdd:
			row(nil, marked(right[op.b+1], "+", s.DiffAdd))
		}
	}
	return out
}

func plainTexts(ls []styledLine) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.text
	}
	return out
}

type diffKind int

const (
	diffEq diffKind = iota
	diffDel
	diffAdd
)

type diffOp struct {
	kind diffKind
	a, b int // line indices into the left and right input
}

// maxDiffCells bounds the LCS table; larger inputs are compared positionally, which is
// still correct about what differs, only less clever about alignment.
const maxDiffCells = 4_000_000

// diffLines is a longest-common-subsequence line diff.
func diffLines(a, b []string) []diffOp {
	n, m := len(a), len(b)
	if n*m > maxDiffCells {
		var ops []diffOp
		for i := 0; i < max(n, m); i++ {
			switch {
			case i < n && i < m && a[i] == b[i]:
				ops = append(ops, diffOp{diffEq, i, i})
			default:
				if i < n {
					ops = append(ops, diffOp{diffDel, i, -1})
				}
				if i < m {
					ops = append(ops, diffOp{diffAdd, -1, i})
				}
			}
		}
		return ops
	}
	// lcs[i][j] = LCS length of a[i:], b[j:]
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []diffOp
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			ops = append(ops, diffOp{diffEq, i, j})
			i++
			j++
		case lcs[i+1][j] >= lcs[i][j+1]:
			ops = append(ops, diffOp{diffDel, i, -1})
			i++
		default:
			ops = append(ops, diffOp{diffAdd, -1, j})
			j++
		}
	}
	for ; i < n; i++ {
		ops = append(ops, diffOp{diffDel, i, -1})
	}
	for ; j < m; j++ {
		ops = append(ops, diffOp{diffAdd, -1, j})
	}
	return ops
}

// view draws body rows from the lines produced by build (memoised under key).
func (p *wirePane) view(key string, build func() []string, h int) []string {
	if key != p.memoKey {
		p.memoKey, p.memoLines = key, build()
	}
	ls := p.memoLines
	p.top = max(0, min(p.top, len(ls)-h))
	end := min(len(ls), p.top+h)
	return ls[p.top:end]
}

func (p *wirePane) scroll(delta, h int) {
	p.top = max(0, min(p.top+delta, len(p.memoLines)-h))
}

// cycle moves to the next strategy: actual, 1, ..., n, actual.
func (p *wirePane) cycle(n int) {
	p.strategy = (p.strategy + 1) % (n + 1)
	p.top = 0
}
