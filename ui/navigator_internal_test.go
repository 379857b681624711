package ui

import (
	"testing"

	"github.com/sessionbench/sessionbench/storage"
)

// Sibling first turns (turn 1 edited and resubmitted) are indented like a fork's
// children; a single root stays flush left.
func TestNavigatorIndentsSiblingRoots(t *testing.T) {
	cases := []struct {
		name  string
		nodes []storage.TurnNode
		want  []int // indent per row
	}{
		{"one root", []storage.TurnNode{{Key: "a"}, {Key: "b", Parent: "a", Index: 1}}, []int{0, 0}},
		{"sibling roots", []storage.TurnNode{{Key: "a"}, {Key: "b", Parent: "a", Index: 1}, {Key: "a2"}}, []int{1, 1, 1}},
		{"fork below a root", []storage.TurnNode{{Key: "a"}, {Key: "b", Parent: "a", Index: 1}, {Key: "c", Parent: "a", Index: 1}}, []int{0, 1, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := &navigator{folded: map[string]bool{}}
			n.setNodes(c.nodes, nil)
			if len(n.rows) != len(c.want) {
				t.Fatalf("%d rows, want %d", len(n.rows), len(c.want))
			}
			for i, r := range n.rows {
				if r.indent != c.want[i] {
					t.Errorf("row %d (%s) indent %d, want %d", i, n.nodes[r.node].Key, r.indent, c.want[i])
				}
			}
		})
	}
}
