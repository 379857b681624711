package ui

import (
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/wirediff"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/termtext"
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
	head := fmt.Sprintf("%s · %s · %d messages · %s tok", strategyLabel(strats, r.Strategy), termtext.OneLine(r.Path), len(r.Messages), humanTokens(r.Tokens))
	out = append(out, styledLine{text: head, st: s.Title})
	if r.Err != "" {
		out = append(out, styledLine{text: "✗ " + termtext.OneLine(r.Err), st: s.Error})
	}
	for _, l := range r.Warnings {
		if l.Message < 0 {
			out = append(out, styledLine{text: "⚠ " + termtext.OneLine(l.Text), st: s.Warning, warn: true})
		}
	}
	for i, m := range r.Messages {
		out = append(out, styledLine{text: fmt.Sprintf("── %s · %d tok ──", termtext.OneLine(m.Role), m.Tokens), st: roleStyle(st, m.Role)})
		for _, l := range r.Warnings {
			if l.Message == i {
				out = append(out, styledLine{text: "⚠ " + termtext.OneLine(l.Text), st: s.Warning, warn: true})
			}
		}
		for _, line := range strings.Split(termtext.Sanitize(m.Content), "\n") {
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

// compareLines draws two renderings side by side, messages aligned by role and position
// (wirediff.Diff): lines only on the left are marked as removed, lines only on the right
// as added. The two headers (strategy, path, tokens) always differ, so they head the
// columns instead of the diff.
func compareLines(st *stylesheet, strats []sessions.Strategy, a, b sessions.Rendering, w int) []string {
	colW := (w - 3) / 2
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
	la, lb := renderingText(st, strats, sessions.Rendering{Strategy: a.Strategy, Path: a.Path, Messages: a.Messages, Tokens: a.Tokens}),
		renderingText(st, strats, sessions.Rendering{Strategy: b.Strategy, Path: b.Path, Messages: b.Messages, Tokens: b.Tokens})
	row(wrapStyled(la[:1], colW, nil), wrapStyled(lb[:1], colW, nil))
	d := wirediff.Diff(messagesOf(a), messagesOf(b))
	differ := 0
	for _, md := range d {
		for _, l := range md.Lines {
			if l.Op != wirediff.Same {
				differ++
			}
		}
	}
	summary := fmt.Sprintf("%d line(s) differ · tokens %s vs %s", differ, humanTokens(a.Tokens), humanTokens(b.Tokens))
	if differ == 0 {
		summary = "identical messages under both strategies"
	}
	out = append(out, s.Muted.Render(fit(summary, w)))
	plain := func(text string, stl lipgloss.Style) []string {
		return wrapStyled([]styledLine{{text: text, st: stl}}, colW, nil)
	}
	marked := func(text, sign string, stl lipgloss.Style) []string {
		ps := wrapLines(text, colW-1)
		for i := range ps {
			ps[i] = stl.Render(sign + ps[i])
		}
		return ps
	}
	notes := func(r sessions.Rendering, msg int) []string {
		var ls []string
		if msg < 0 && r.Err != "" {
			ls = append(ls, plain("✗ "+termtext.OneLine(r.Err), s.Error)...)
		}
		for _, l := range r.Warnings {
			if l.Message == msg {
				ls = append(ls, plain("⚠ "+termtext.OneLine(l.Text), s.Warning)...)
			}
		}
		return ls
	}
	row(notes(a, -1), notes(b, -1))
	head := func(r sessions.Rendering, i int) []string {
		if i < 0 {
			return nil
		}
		m := r.Messages[i]
		return append(plain(fmt.Sprintf("── %s · %d tok ──", termtext.OneLine(m.Role), m.Tokens), roleStyle(st, m.Role)), notes(r, i)...)
	}
	for _, md := range d {
		row(head(a, md.A), head(b, md.B))
		for _, l := range md.Lines {
			text := termtext.Sanitize(l.Text)
			switch l.Op {
			case wirediff.Same:
				row(plain(text, s.Text), plain(text, s.Text))
			case wirediff.Removed:
				row(marked(text, "-", s.DiffDel), nil)
			case wirediff.Added:
				row(nil, marked(text, "+", s.DiffAdd))
			}
		}
	}
	return out
}

// messagesOf is a rendering's messages without their token counts.
func messagesOf(r sessions.Rendering) []lm.Message {
	out := make([]lm.Message, len(r.Messages))
	for i, m := range r.Messages {
		out[i] = m.Message
	}
	return out
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
