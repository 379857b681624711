package ui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/wirediff"
	"github.com/sessionbench/sessionbench/themes"
	"github.com/sessionbench/sessionbench/ui/sessions"
)

func rendering(strategy int, msgs ...string) sessions.Rendering {
	r := sessions.Rendering{Strategy: strategy, CallID: "c1", Path: "respond"}
	for i := 0; i+1 < len(msgs); i += 2 {
		r.Messages = append(r.Messages, sessions.RenderedMessage{Message: lm.Message{Role: msgs[i], Content: msgs[i+1]}, Tokens: len(msgs[i+1]) / 4})
		r.Tokens += len(msgs[i+1]) / 4
	}
	return r
}

// lines of n identical filler lines, numbered
func filler(n int) string {
	var ls []string
	for i := 0; i < n; i++ {
		ls = append(ls, fmt.Sprintf("same line %d", i))
	}
	return strings.Join(ls, "\n")
}

func plainLayout(rows []cmpRow, w int, l compareLayout) ([]string, []int, map[int]int) {
	th := themes.Dark()
	st := &stylesheet{theme: th, s: th.Styles()}
	lines, anchors, folds := layoutRows(rows, w, l, newCompareStyles(st), [2]string{"1 per-predictor", "2 outer, signature-filtered"})
	for i := range lines {
		lines[i] = ansi.Strip(lines[i])
	}
	return lines, anchors, folds
}

// Runs of identical lines fold to one line, context kept around each difference; the
// folds open one by one or all at once.
func TestCompareRowsFoldIdenticalRuns(t *testing.T) {
	sys := filler(40)
	a := rendering(1, "system", sys, "user", "question: old text\n"+filler(10))
	b := rendering(2, "system", sys, "user", "question: new text\n"+filler(10))
	diff := wirediff.Diff(messagesOf(a), messagesOf(b))
	rows := compareRows(a, b, diff, map[int]bool{}, false)
	lines, anchors, folds := plainLayout(rows, 120, layoutSide)
	text := strings.Join(lines, "\n")
	for _, want := range []string{"… 40 identical lines", "… 8 identical lines", "-question: old text", "+question: new text", "same line 0", "same line 1"} {
		if !strings.Contains(text, want) {
			t.Errorf("compare lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "same line 5") {
		t.Errorf("a folded line is shown:\n%s", text)
	}
	if len(anchors) != 1 || !strings.Contains(lines[anchors[0]], "old text") {
		t.Errorf("anchors %v; want the changed line", anchors)
	}
	if len(folds) != 2 {
		t.Fatalf("folds %v, want 2", folds)
	}
	// open the system message's fold: its 40 lines are back, the other fold stays
	rows = compareRows(a, b, diff, map[int]bool{0: true}, false)
	lines, _, _ = plainLayout(rows, 120, layoutSide)
	text = strings.Join(lines, "\n")
	if !strings.Contains(text, "same line 39") || !strings.Contains(text, "… 8 identical lines") {
		t.Errorf("fold 0 open:\n%s", text)
	}
	rows = compareRows(a, b, diff, nil, true)
	lines, _, folds = plainLayout(rows, 120, layoutSide)
	if len(folds) != 0 || strings.Contains(strings.Join(lines, "\n"), "identical lines") {
		t.Errorf("all folds open, yet some are folded")
	}
}

// Without colour the markers are the only cue: every changed line keeps its - or +, on
// its wrapped continuation lines too, in every layout.
func TestCompareMarkersOnWrappedLines(t *testing.T) {
	long := strings.Repeat("word ", 30)
	a := rendering(1, "user", "keep "+long)
	b := rendering(2, "user", "inherit "+long)
	rows := compareRows(a, b, wirediff.Diff(messagesOf(a), messagesOf(b)), nil, false)
	for _, l := range []compareLayout{layoutSide, layoutStacked, layoutLeft, layoutRight} {
		lines, _, _ := plainLayout(rows, 60, l)
		var minus, plus int
		for _, line := range lines {
			if strings.HasPrefix(line, "──") || strings.Contains(line, "── user") {
				continue
			}
			left, right := line, ""
			if l == layoutSide {
				left, right, _ = strings.Cut(line, " │ ")
			}
			if strings.TrimSpace(left) != "" {
				if !strings.HasPrefix(left, "-") && !strings.HasPrefix(left, "+") {
					t.Errorf("%v: a changed line without its marker: %q", l, line)
				}
				if strings.HasPrefix(left, "-") {
					minus++
				} else {
					plus++
				}
			}
			if strings.TrimSpace(right) != "" {
				if !strings.HasPrefix(right, "+") {
					t.Errorf("%v: a changed right line without +: %q", l, line)
				}
				plus++
			}
		}
		switch l {
		case layoutLeft:
			if minus < 2 || plus != 0 {
				t.Errorf("%v: %d - lines, %d + lines", l, minus, plus)
			}
		case layoutRight:
			if plus < 2 || minus != 0 {
				t.Errorf("%v: %d - lines, %d + lines", l, minus, plus)
			}
		default:
			if minus < 2 || plus < 2 {
				t.Errorf("%v: %d - lines, %d + lines; want the wrapped line marked on each piece", l, minus, plus)
			}
		}
		for _, line := range lines {
			if w := ansi.StringWidth(line); w > 60 {
				t.Errorf("%v: line %q is %d wide", l, line, w)
			}
		}
	}
}

// Changed words are drawn in their own style; the words both sides share are not.
func TestCompareHighlightsChangedWords(t *testing.T) {
	a := rendering(1, "user", "the quick brown fox")
	b := rendering(2, "user", "the slow brown fox")
	rows := compareRows(a, b, wirediff.Diff(messagesOf(a), messagesOf(b)), nil, false)
	th := themes.Dark()
	st := &stylesheet{theme: th, s: th.Styles()}
	cs := newCompareStyles(st)
	lines, _, _ := layoutRows(rows, 100, layoutSide, cs, [2]string{"1", "2"})
	joined := strings.Join(lines, "\n")
	for _, want := range []string{cs.delW.Render("quick"), cs.addW.Render("slow"), cs.del.Render("the")} {
		if !strings.Contains(joined, want) {
			t.Errorf("compare lacks %q", want)
		}
	}
	if strings.Contains(joined, cs.delW.Render("brown")) {
		t.Errorf("a word both sides share is marked as changed")
	}
}

// Lint warnings sit under the line they refer to, on their side, and token counts show
// per message with the right side's delta.
func TestCompareWarningsAtTheirLineAndTokenDeltas(t *testing.T) {
	a := rendering(1, "assistant", "[[ ## reasoning ## ]]\nthought\n\n[[ ## reply ## ]]\nok")
	b := rendering(2, "assistant", "[[ ## reasoning ## ]]\nNone\n\n[[ ## reply ## ]]\nok")
	b.Warnings = []sessions.Lint{{Message: 0, Field: "reasoning", Text: "missing-output: the reply shows None"}}
	a.Messages[0].Tokens, b.Messages[0].Tokens = 14, 11
	rows := compareRows(a, b, wirediff.Diff(messagesOf(a), messagesOf(b)), nil, false)
	lines, _, _ := plainLayout(rows, 120, layoutSide)
	at := -1
	for i, l := range lines {
		if strings.Contains(l, "⚠ missing-output") {
			at = i
		}
	}
	if at < 1 || !strings.Contains(lines[at-1], "[[ ## reasoning ## ]]") {
		t.Fatalf("the warning is not under its line:\n%s", strings.Join(lines, "\n"))
	}
	if l, _, _ := strings.Cut(lines[at], " │ "); strings.TrimSpace(l) != "" {
		t.Errorf("the right side's warning is drawn on the left: %q", lines[at])
	}
	head := lines[0]
	if !strings.Contains(head, "── assistant · 14 tok") || !strings.Contains(head, "── assistant · 11 tok (−3)") {
		t.Errorf("message header %q lacks the tokens and their delta", head)
	}
}

// A warning is an annotation, not request content: in no layout does it take a -/+
// marker (without colour that would read as a sent line), its wrapped lines are
// indented under its text, and stacked, where both sides' lines alternate, it names the
// side it belongs to.
func TestCompareWarningsAreNotContent(t *testing.T) {
	a := rendering(1, "assistant", "[[ ## reasoning ## ]]\nthought about the customer's question at length")
	b := rendering(2, "assistant", "[[ ## reasoning ## ]]\nNone")
	b.Warnings = []sessions.Lint{{Message: 0, Field: "reasoning", Text: "missing-output: the history entry renders None for reasoning: the outer history lacks this predictor's field"}}
	rows := compareRows(a, b, wirediff.Diff(messagesOf(a), messagesOf(b)), nil, false)
	for _, l := range []compareLayout{layoutStacked, layoutSide, layoutRight} {
		lines, _, _ := plainLayout(rows, 80, l)
		at := -1
		for i, line := range lines {
			if strings.Contains(line, "⚠") {
				at = i
			}
		}
		if at < 0 {
			t.Fatalf("%v: no warning:\n%s", l, strings.Join(lines, "\n"))
		}
		first := lines[at]
		if l == layoutSide {
			_, first, _ = strings.Cut(first, " │ ")
		}
		want := " ⚠ missing-output"
		if l == layoutStacked {
			want = " ⚠ 2 outer, signature-filtered: missing-output"
		}
		if !strings.HasPrefix(first, want) {
			t.Errorf("%v: warning line %q, want it to start %q", l, first, want)
		}
		// its continuation: indented under the text, no marker
		next := lines[at+1]
		if l == layoutSide {
			_, next, _ = strings.Cut(next, " │ ")
		}
		if !strings.HasPrefix(next, "   ") || strings.TrimSpace(next) == "" {
			t.Errorf("%v: the warning's second line %q is not indented under it:\n%s", l, next, strings.Join(lines, "\n"))
		}
		for _, line := range lines {
			if strings.HasPrefix(line, "+⚠") || strings.HasPrefix(line, "-⚠") || strings.Contains(line, "│ +⚠") {
				t.Errorf("%v: a warning with a diff marker: %q", l, line)
			}
		}
	}
}
