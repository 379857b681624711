package trace

import (
	"strings"
	"testing"
	"time"
)

// draw writes a tree as indented lines: calls by ID, attempts as "step#N".
func draw(ns []*Node, indent string, b *strings.Builder) {
	for _, n := range ns {
		if n.Attempt != nil {
			b.WriteString(indent + n.Attempt.Step + "#" + string(rune('0'+n.Attempt.N)) + "\n")
		} else {
			b.WriteString(indent + n.Call.ID + "\n")
		}
		draw(n.Children, indent+"  ", b)
	}
}

func TestTreeArrangesCallsUnderAttempts(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	call := func(id string, s int, kids ...*Call) *Call { return &Call{ID: id, Started: at(s), Children: kids} }
	cases := []struct {
		name     string
		calls    []*Call
		attempts []*Attempt
		want     string
	}{
		{"no attempts", []*Call{call("c1", 1), call("c2", 2, call("c3", 3))}, nil, "c1\nc2\n  c3\n"},
		{"calls under their attempts", []*Call{call("c1", 1), call("c2", 2), call("c3", 3), call("c4", 4)},
			[]*Attempt{{Step: "plan", N: 1, Calls: []string{"c1", "c2"}}, {Step: "plan", N: 2, Calls: []string{"c3"}}},
			"plan#1\n  c1\n  c2\nplan#2\n  c3\nc4\n"},
		{"a nested step's attempts inside the outer one's", []*Call{call("c1", 1), call("c2", 2), call("c3", 3)},
			[]*Attempt{{Step: "outer.inner", N: 1, Calls: []string{"c1"}}, {Step: "outer.inner", N: 2, Calls: []string{"c2"}},
				{Step: "outer", N: 1, Calls: []string{"c1", "c2", "c3"}}},
			"outer#1\n  outer.inner#1\n    c1\n  outer.inner#2\n    c2\n  c3\n"},
		{"attempts without calls where their time puts them", []*Call{call("c1", 1), call("c5", 5)},
			[]*Attempt{{Step: "tool", N: 1, Time: at(2)}, {Step: "tool", N: 2, Time: at(3)}, {Step: "late", N: 1, Time: at(9)}},
			"c1\ntool#1\ntool#2\nc5\nlate#1\n"},
		{"a turn with no calls at all", nil, []*Attempt{{Step: "tool", N: 1, Time: at(1)}, {Step: "tool", N: 2, Time: at(2)}},
			"tool#1\ntool#2\n"},
		{"an attempt whose calls are not in the turn counts as callless", []*Call{call("c1", 1)},
			[]*Attempt{{Step: "gone", N: 1, Time: at(0), Calls: []string{"c9"}}}, "gone#1\nc1\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			draw(Tree(tc.calls, tc.attempts), "", &b)
			if b.String() != tc.want {
				t.Errorf("tree:\n%s\nwant:\n%s", b.String(), tc.want)
			}
		})
	}
}
