// Package wirediff compares two renderings of a request (for side-by-side display of
// adapters or strategies; the one diff of the project, down to changed words) and lints one rendering for the ways history silently goes
// wrong: outputs rendered as None, dropped user turns, back-to-back assistant messages,
// placeholders left in the text, turns cut by max_turns.
package wirediff

import (
	"strings"
	"unicode"

	"github.com/sessionbench/sessionbench/core/lm"
)

// Op is what happened to a line or a message.
type Op int

// Ops.
const (
	Same    Op = iota // present on both sides, unchanged
	Changed           // a message present on both sides whose content differs
	Added             // only on side B
	Removed           // only on side A
)

func (o Op) String() string {
	return [...]string{"same", "changed", "added", "removed"}[o]
}

// Line is one line of a message diff. A and B are 0-based line numbers on each side
// (-1 when the line is not on that side).
type Line struct {
	Op   Op
	Text string
	A, B int
}

// MessageDiff is one row of the side-by-side view: a message of A paired with a message
// of B (same role), or a message on one side only. A and B are message indices (-1 when
// absent).
type MessageDiff struct {
	Op    Op
	A, B  int
	Role  string // the role (B's when the roles are shown side by side)
	Lines []Line
}

// Diff aligns the messages of a and b and diffs each pair line by line. Messages pair
// only with a message of the same role; among alignments the one keeping the most
// identical messages, then the most same-role pairs, wins, so an inserted history turn
// shows as added messages instead of shifting every later pair.
func Diff(a, b []lm.Message) []MessageDiff {
	n, m := len(a), len(b)
	// score[i][j]: best alignment value of a[i:], b[j:]; identical pair 3, same role 1.
	score := make([][]int32, n+1)
	for i := range score {
		score[i] = make([]int32, m+1)
	}
	pair := func(i, j int) int32 {
		switch {
		case a[i].Role != b[j].Role:
			return -1
		case a[i].Content == b[j].Content:
			return 3
		}
		return 1
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			best := max(score[i+1][j], score[i][j+1])
			if p := pair(i, j); p > 0 && score[i+1][j+1]+p > best {
				best = score[i+1][j+1] + p
			}
			score[i][j] = best
		}
	}
	var out []MessageDiff
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && pair(i, j) > 0 && score[i][j] == score[i+1][j+1]+pair(i, j):
			d := MessageDiff{Op: Same, A: i, B: j, Role: b[j].Role, Lines: DiffLines(a[i].Content, b[j].Content)}
			if a[i].Content != b[j].Content {
				d.Op = Changed
			}
			out = append(out, d)
			i, j = i+1, j+1
		case i < n && (j == m || score[i][j] == score[i+1][j]):
			out = append(out, MessageDiff{Op: Removed, A: i, B: -1, Role: a[i].Role, Lines: wholeLines(a[i].Content, Removed)})
			i++
		default:
			out = append(out, MessageDiff{Op: Added, A: -1, B: j, Role: b[j].Role, Lines: wholeLines(b[j].Content, Added)})
			j++
		}
	}
	return out
}

func wholeLines(s string, op Op) []Line {
	ls := strings.Split(s, "\n")
	out := make([]Line, len(ls))
	for k, l := range ls {
		out[k] = Line{Op: op, Text: l, A: -1, B: -1}
		if op == Removed {
			out[k].A = k
		} else {
			out[k].B = k
		}
	}
	return out
}

// maxCells bounds the LCS table; beyond it the differing middle is shown as removed
// then added (common leading and trailing lines are still matched).
const maxCells = 4 << 20

// DiffLines is a line diff of two texts (split on "\n") by longest common subsequence.
func DiffLines(x, y string) []Line {
	a, b := strings.Split(x, "\n"), strings.Split(y, "\n")
	out := make([]Line, 0, max(len(a), len(b)))
	for _, e := range align(a, b) {
		switch e.op {
		case Same:
			out = append(out, Line{Same, a[e.a], e.a, e.b})
		case Removed:
			out = append(out, Line{Removed, a[e.a], e.a, -1})
		default:
			out = append(out, Line{Added, b[e.b], -1, e.b})
		}
	}
	return out
}

// Span is a piece of one side of a changed line: Changed marks text the other side
// does not have.
type Span struct {
	Text    string
	Changed bool
}

// DiffWords compares two versions of a line word by word (words, runs of spaces and
// single punctuation marks are the units) and returns each side as spans, the changed
// words marked, so a view can highlight what changed inside a changed line.
func DiffWords(x, y string) (left, right []Span) {
	a, b := words(x), words(y)
	add := func(side []Span, text string, changed bool) []Span {
		if n := len(side); n > 0 && side[n-1].Changed == changed {
			side[n-1].Text += text
			return side
		}
		return append(side, Span{text, changed})
	}
	for _, e := range align(a, b) {
		switch e.op {
		case Same:
			left, right = add(left, a[e.a], false), add(right, b[e.b], false)
		case Removed:
			left = add(left, a[e.a], true)
		default:
			right = add(right, b[e.b], true)
		}
	}
	return left, right
}

// words splits a line into words, runs of spaces and single other characters.
func words(s string) []string {
	var out []string
	kind := func(r rune) int {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_':
			return 1
		case unicode.IsSpace(r):
			return 2
		}
		return 3
	}
	start, prev := 0, 0
	for i, r := range s {
		k := kind(r)
		if i > 0 && (k != prev || k == 3) {
			out = append(out, s[start:i])
			start = i
		}
		prev = k
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// edit is one step of an alignment: an element of a (Removed), of b (Added) or of both
// (Same), by index.
type edit struct {
	op   Op
	a, b int
}

// align is a longest-common-subsequence alignment of a and b. Common leading and
// trailing elements are matched first; a middle too big for the table (maxCells) is
// shown as removed then added.
func align(a, b []string) []edit {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	out := make([]edit, 0, max(len(a), len(b)))
	for k := 0; k < pre; k++ {
		out = append(out, edit{Same, k, k})
	}
	out = append(out, lcs(a[pre:len(a)-suf], b[pre:len(b)-suf], pre)...)
	for k := suf; k > 0; k-- {
		out = append(out, edit{Same, len(a) - k, len(b) - k})
	}
	return out
}

func lcs(a, b []string, off int) []edit {
	n, m := len(a), len(b)
	var out []edit
	if n*m > maxCells {
		for k := range a {
			out = append(out, edit{Removed, off + k, -1})
		}
		for k := range b {
			out = append(out, edit{Added, -1, off + k})
		}
		return out
	}
	// t[i][j] = LCS length of a[i:], b[j:], flattened.
	w := m + 1
	t := make([]int32, (n+1)*w)
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i*w+j] = t[(i+1)*w+j+1] + 1
			} else {
				t[i*w+j] = max(t[(i+1)*w+j], t[i*w+j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			out = append(out, edit{Same, off + i, off + j})
			i, j = i+1, j+1
		case i < n && (j == m || t[(i+1)*w+j] >= t[i*w+j+1]):
			out = append(out, edit{Removed, off + i, -1})
			i++
		default:
			out = append(out, edit{Added, -1, off + j})
			j++
		}
	}
	return out
}
