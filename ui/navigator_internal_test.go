package ui

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/themes"
	"github.com/sessionbench/sessionbench/ui/sessions"
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
		// a kept turn is a leaf one step in, right under the turn it followed; no fork
		{"a failed turn beside", []storage.TurnNode{{Key: "a"}, {Key: "b", Parent: "a", Index: 1}, {Key: "k", Parent: "a", Index: 1, Status: trace.StatusFailed},
			{Key: "c", Parent: "b", Index: 2}}, []int{0, 1, 0, 0}},
		{"a cancelled first turn, before the first turn", []storage.TurnNode{{Key: "a"}, {Key: "k", Status: trace.StatusCancelled}}, []int{1, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for i := range c.nodes {
				if c.nodes[i].Status == "" {
					c.nodes[i].Status = trace.StatusCompleted
				}
			}
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

// pagedTree serves a turn tree by pages, as the real backend does.
type pagedTree struct {
	Backend
	nodes []storage.TurnNode
	asked int
}

func (p *pagedTree) TurnTreePage(_ context.Context, _, after string, limit int) ([]storage.TurnNode, string, error) {
	p.asked++
	from := 0
	for i, n := range p.nodes {
		if n.Key == after {
			from = i + 1
		}
	}
	end := min(from+limit, len(p.nodes))
	next := ""
	if end < len(p.nodes) {
		next = p.nodes[end-1].Key
	}
	return p.nodes[from:end], next, nil
}

// A long conversation's tree arrives page by page: the navigator draws each page as it
// comes, says it is still loading, and ends with every turn, the selection on the active
// tip; a page asked for by a navigator closed since is dropped.
func TestNavigatorPagesTheTree(t *testing.T) {
	const total = 2*navPage + 17
	tree := &pagedTree{}
	for i := range total {
		nd := storage.TurnNode{Key: fmt.Sprintf("t%d", i), Index: i, Status: trace.StatusCompleted, InputPreview: fmt.Sprint("question ", i)}
		if i > 0 {
			nd.Parent = fmt.Sprintf("t%d", i-1)
		}
		tree.nodes = append(tree.nodes, nd)
	}
	th := themes.Dark()
	tip := tree.nodes[total-1].Key
	e := &env{ctx: context.Background(), b: tree, conv: &sessions.ConversationInfo{ID: "c1"}, st: &stylesheet{theme: th, s: th.Styles()},
		branches: []sessions.BranchInfo{{Name: "main", Tip: tip, Turns: total}}, status: &statusBar{}}
	n, cmd := newNavigator(e, "main", tip)
	n.SetSize(80, 20)
	_, oldCmd := newNavigator(e, "main", tip)
	pages := 0
	for cmd != nil {
		msg := cmd()
		if pages++; pages > 10 {
			t.Fatal("the tree never finished loading")
		}
		cmd = n.Update(msg)
		view := strings.Join(n.View(), "\n")
		if cmd != nil && !strings.Contains(view, "turns so far") {
			t.Errorf("page %d: the view does not say the tree is still loading", pages)
		}
		// before main's tip has come, its path is not known: nothing is called undone
		if strings.Contains(view, "undone") {
			t.Errorf("page %d: turns marked undone while the tree loads:\n%s", pages, view)
		}
	}
	if pages != 3 || len(n.nodes) != total || len(n.rows) != total || n.loading {
		t.Fatalf("%d pages, %d nodes, %d rows, loading %v; want 3 pages of %d turns", pages, len(n.nodes), len(n.rows), n.loading, total)
	}
	if nd := n.selected(); nd == nil || nd.Key != tip {
		t.Fatalf("selection %+v, want the active tip %s", nd, tip)
	}
	if n.Update(oldCmd()) != nil || len(n.nodes) != total {
		t.Fatal("a closed navigator's page was taken in")
	}
}
