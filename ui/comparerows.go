package ui

import (
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/sessionbench/sessionbench/core/wirediff"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// The compare view's text is built in two steps: the diff of the two requests becomes
// logical rows (cmpRows: a line on the left, the right or both, message headers, lint
// warnings, folds of identical lines), once per diff and fold state; the rows are then
// laid out for a width and a layout (side by side, stacked, one side), once per size.

type rowKind int

const (
	rowSame   rowKind = iota // the same line on both sides
	rowChange                // a line that differs: removed on the left, added on the right, or both (paired)
	rowHeader                // a message's role and tokens
	rowWarn                  // a lint warning on one side
	rowFold                  // identical lines folded away
)

// cmpRow is one logical row of the compare.
type cmpRow struct {
	kind       rowKind
	l, r       []wirediff.Span
	hasL, hasR bool
	role       string // rowHeader: the style
	fold       int    // rowFold: its id; hidden lines
	hidden     int
	anchor     bool // the first row of a difference (n / N jump there)
}

// foldContext is how many identical lines stay visible next to a difference.
const foldContext = 2

// compareRows turns the diff of a and b into rows. open says which folds are open (by
// id); all opens every fold.
func compareRows(a, b sessions.Rendering, diff []wirediff.MessageDiff, open map[int]bool, all bool) []cmpRow {
	var rows []cmpRow
	plain := func(s string) []wirediff.Span { return []wirediff.Span{{Text: s}} }
	warn := func(r sessions.Rendering, msg int, lines []string) map[int][]string {
		// warnings at the line that mentions their field (-1: under the header)
		at := map[int][]string{}
		for _, w := range r.Warnings {
			if w.Message != msg {
				continue
			}
			i := warnLine(lines, w.Field)
			at[i] = append(at[i], "⚠ "+termtext.OneLine(w.Text))
		}
		return at
	}
	for _, side := range []struct {
		r    sessions.Rendering
		left bool
	}{{a, true}, {b, false}} {
		if side.r.Err != "" {
			rows = append(rows, warnRow("✗ "+termtext.OneLine(side.r.Err), side.left))
		}
		for _, w := range side.r.Warnings {
			if w.Message < 0 {
				rows = append(rows, warnRow("⚠ "+termtext.OneLine(w.Text), side.left))
			}
		}
	}
	fold := 0
	for _, md := range diff {
		h := cmpRow{kind: rowHeader, role: md.Role}
		var la, lb []string
		if md.A >= 0 {
			m := a.Messages[md.A]
			h.l, h.hasL = plain(fmt.Sprintf("── %s · %s tok ──", termtext.OneLine(m.Role), humanTokens(m.Tokens))), true
			la = strings.Split(m.Content, "\n")
		}
		if md.B >= 0 {
			m := b.Messages[md.B]
			text := fmt.Sprintf("── %s · %s tok", termtext.OneLine(m.Role), humanTokens(m.Tokens))
			if md.A >= 0 {
				text += " (" + signed(m.Tokens-a.Messages[md.A].Tokens) + ")"
			}
			h.r, h.hasR = plain(text+" ──"), true
			lb = strings.Split(m.Content, "\n")
		}
		h.anchor = md.Op == wirediff.Added || md.Op == wirediff.Removed
		rows = append(rows, h)
		wa, wb := map[int][]string{}, map[int][]string{}
		if md.A >= 0 {
			wa = warn(a, md.A, la)
		}
		if md.B >= 0 {
			wb = warn(b, md.B, lb)
		}
		emitWarns := func(ia, ib int) {
			for _, t := range wa[ia] {
				rows = append(rows, warnRow(t, true))
			}
			for _, t := range wb[ib] {
				rows = append(rows, warnRow(t, false))
			}
		}
		emitWarns(-1, -1)
		// the message's lines: runs of identical lines (folded when long), changes paired
		// line by line so their changed words can be marked
		lines := md.Lines
		for i := 0; i < len(lines); {
			if lines[i].Op == wirediff.Same {
				j := i
				for j < len(lines) && lines[j].Op == wirediff.Same && len(wa[lines[j].A]) == 0 && len(wb[lines[j].B]) == 0 {
					j++
				}
				if j == i { // a same line carrying a warning
					j = i + 1
				}
				run := lines[i:j]
				keepHead, keepTail := foldContext, foldContext
				if i == 0 {
					keepHead = 0
				}
				if j == len(lines) {
					keepTail = 0
				}
				hidden := len(run) - keepHead - keepTail
				id := fold
				if hidden >= 2 {
					fold++
				}
				if hidden < 2 || all || open[id] {
					keepHead, hidden = len(run), 0
				}
				for _, l := range run[:keepHead] {
					rows = append(rows, cmpRow{kind: rowSame, l: plain(l.Text), r: plain(l.Text), hasL: true, hasR: true})
					emitWarns(l.A, l.B)
				}
				if hidden > 0 {
					rows = append(rows, cmpRow{kind: rowFold, fold: id, hidden: hidden})
					for _, l := range run[len(run)-keepTail:] {
						rows = append(rows, cmpRow{kind: rowSame, l: plain(l.Text), r: plain(l.Text), hasL: true, hasR: true})
						emitWarns(l.A, l.B)
					}
				}
				i = j
				continue
			}
			// a run of changes: removed lines and added lines, paired in order
			j := i
			var del, add []wirediff.Line
			for j < len(lines) && lines[j].Op != wirediff.Same {
				if lines[j].Op == wirediff.Removed {
					del = append(del, lines[j])
				} else {
					add = append(add, lines[j])
				}
				j++
			}
			for k := 0; k < max(len(del), len(add)); k++ {
				row := cmpRow{kind: rowChange, anchor: k == 0 && !h.anchor}
				switch {
				case k < len(del) && k < len(add):
					row.l, row.r = wirediff.DiffWords(del[k].Text, add[k].Text)
					row.hasL, row.hasR = true, true
				case k < len(del):
					row.l, row.hasL = []wirediff.Span{{Text: del[k].Text, Changed: md.Op != wirediff.Removed}}, true
				default:
					row.r, row.hasR = []wirediff.Span{{Text: add[k].Text, Changed: md.Op != wirediff.Added}}, true
				}
				rows = append(rows, row)
				ia, ib := -2, -2
				if k < len(del) {
					ia = del[k].A
				}
				if k < len(add) {
					ib = add[k].B
				}
				emitWarns(ia, ib)
			}
			i = j
		}
	}
	return rows
}

func warnRow(text string, left bool) cmpRow {
	s := []wirediff.Span{{Text: text}}
	if left {
		return cmpRow{kind: rowWarn, l: s, hasL: true}
	}
	return cmpRow{kind: rowWarn, r: s, hasR: true}
}

// warnLine is the line of a message a warning about field refers to: the first that
// names it as a ChatAdapter header, a template placeholder or a "name:" label (-1 when
// none does, or there is no field: the warning goes under the message's header).
func warnLine(lines []string, field string) int {
	if field == "" {
		return -1
	}
	for _, pat := range []string{"## " + field + " ##", "{" + field, field + ":", `"` + field + `"`} {
		for i, l := range lines {
			if strings.Contains(l, pat) {
				return i
			}
		}
	}
	return -1
}

// signed is a token delta with its sign: "+12", "−3", "±0".
func signed(n int) string {
	switch {
	case n > 0:
		return "+" + humanTokens(n)
	case n < 0:
		return "−" + humanTokens(-n)
	}
	return "±0"
}

// compareLayout is how the two sides share the width.
type compareLayout int

const (
	layoutSide    compareLayout = iota // two columns
	layoutStacked                      // one column: - left lines, then + right lines
	layoutLeft                         // the left side alone
	layoutRight                        // the right side alone
)

func (l compareLayout) String() string {
	return [...]string{"side by side", "stacked", "left side only", "right side only"}[l]
}

// compareStyles are the styles the rows are drawn in.
type compareStyles struct {
	text, muted, warn, fold lipgloss.Style
	del, add, delW, addW    lipgloss.Style
	sep                     lipgloss.Style
	role                    func(string) lipgloss.Style
}

func newCompareStyles(st *stylesheet) compareStyles {
	s := st.s
	return compareStyles{
		text: s.Text, muted: s.Muted, warn: s.Warning, fold: s.Muted.Italic(true),
		del: s.DiffDel, add: s.DiffAdd,
		delW: s.DiffDel.Bold(true).Underline(true), addW: s.DiffAdd.Bold(true).Underline(true),
		sep:  s.TreeBranch,
		role: func(r string) lipgloss.Style { return roleStyle(st, r) },
	}
}

// layoutRows draws rows at width w; labels name the two sides (stacked, a warning says
// whose it is in words). It returns the lines, the line each difference starts on (for
// n / N) and the line of each fold (by fold id).
func layoutRows(rows []cmpRow, w int, layout compareLayout, cs compareStyles, labels [2]string) (lines []string, anchors []int, folds map[int]int) {
	folds = map[int]int{}
	colW := w
	if layout == layoutSide {
		colW = (w - 3) / 2
	}
	sep := cs.sep.Render(" │ ")
	// side draws one side of a row: its marker on every wrapped line (NO_COLOR keeps
	// the -/+), changed words in their own style.
	side := func(r cmpRow, left bool) []string {
		spans, has := r.r, r.hasR
		mark, st, word := "+", cs.add, cs.addW
		if left {
			spans, has = r.l, r.hasL
			mark, st, word = "-", cs.del, cs.delW
		}
		if !has {
			return nil
		}
		switch r.kind {
		case rowSame:
			return wrapSpans(spans, colW, " ", cs.text, cs.text)
		case rowHeader:
			return wrapSpans(spans, colW, "", cs.role(r.role), cs.role(r.role))
		case rowWarn:
			whose := ""
			if layout == layoutStacked {
				whose = labels[1]
				if left {
					whose = labels[0]
				}
			}
			return warnLines(spans, whose, colW, cs.warn)
		}
		return wrapSpans(spans, colW, mark, st, word)
	}
	for _, r := range rows {
		if r.anchor {
			anchors = append(anchors, len(lines))
		}
		if r.kind == rowFold {
			folds[r.fold] = len(lines)
			text := fmt.Sprintf("… %d identical lines", r.hidden)
			lines = append(lines, cs.fold.Render(fit(text, w)))
			continue
		}
		switch layout {
		case layoutSide:
			l, rr := side(r, true), side(r, false)
			for i := 0; i < max(len(l), len(rr)); i++ {
				var x, y string
				if i < len(l) {
					x = l[i]
				}
				if i < len(rr) {
					y = rr[i]
				}
				lines = append(lines, fit(x, colW)+sep+fit(y, colW))
			}
		case layoutStacked:
			switch {
			case r.kind == rowSame:
				lines = append(lines, side(r, true)...)
			case r.kind == rowHeader && r.hasL && r.hasR:
				lines = append(lines, side(r, false)...) // the right header carries both counts
			default:
				lines = append(lines, side(r, true)...)
				lines = append(lines, side(r, false)...)
			}
		case layoutLeft:
			lines = append(lines, side(r, true)...)
		case layoutRight:
			lines = append(lines, side(r, false)...)
		}
	}
	return lines, anchors, folds
}

// warnLines draws a warning row: an annotation, not request content, so it never takes
// a -/+ marker: " ⚠ text", wrapped lines indented under the text, and (stacked, where
// both sides' lines alternate) the side it belongs to named after the sign.
func warnLines(spans []wirediff.Span, whose string, w int, st lipgloss.Style) []string {
	var b strings.Builder
	for _, sp := range spans {
		b.WriteString(sp.Text)
	}
	sign, text, _ := strings.Cut(termtext.Sanitize(b.String()), " ")
	if whose != "" {
		text = whose + ": " + text
	}
	lead := " " + sign + " "
	indent := strings.Repeat(" ", ansi.StringWidth(lead))
	wrapped := wrapLines(text, max(w-len(indent), 1))
	out := make([]string, len(wrapped))
	for i, l := range wrapped {
		if i == 0 {
			out[i] = st.Render(lead + l)
		} else {
			out[i] = st.Render(indent + l)
		}
	}
	return out
}

// wrapSpans wraps spans to width w, mark (when set) leading every line, plain text in
// st and changed spans in word. Words break at spaces where they can, anywhere when a
// word is wider than the line.
func wrapSpans(spans []wirediff.Span, w int, mark string, st, word lipgloss.Style) []string {
	avail := max(w-ansi.StringWidth(mark), 1)
	var out []string
	var line strings.Builder
	used := 0
	flush := func() {
		out = append(out, st.Render(mark)+line.String())
		line.Reset()
		used = 0
	}
	put := func(text string, changed bool) {
		stl := st
		if changed {
			stl = word
		}
		line.WriteString(stl.Render(text))
	}
	for _, sp := range spans {
		text := termtext.Sanitize(sp.Text)
		for text != "" {
			// the next word with the spaces before it
			i := 0
			for i < len(text) && text[i] == ' ' {
				i++
			}
			for i < len(text) && text[i] != ' ' {
				i++
			}
			tok := text[:i]
			tw := ansi.StringWidth(tok)
			switch {
			case used+tw <= avail:
				put(tok, sp.Changed)
				used += tw
				text = text[i:]
			case used > 0:
				flush()
				text = strings.TrimLeft(text, " ")
			default:
				// a word wider than the line: cut it
				cut := ansi.Truncate(tok, avail, "")
				if cut == "" {
					cut = string([]rune(tok)[:1])
				}
				put(cut, sp.Changed)
				used += ansi.StringWidth(cut)
				text = text[len(cut):]
				flush()
			}
		}
	}
	if used > 0 || len(out) == 0 {
		flush()
	}
	return out
}
