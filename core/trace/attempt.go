package trace

import (
	"sort"
	"time"

	"github.com/sessionbench/sessionbench/core/sig"
)

// Attempt is one try of a retrying workflow step with its score: seed 003's attempt
// record (attempt number, quality score, timestamp, review summary, details), plus the
// step it belongs to, whether it is its run's best attempt and the calls it made. A
// turn keeps its attempts (Turn.Attempts) in the order they were made.
type Attempt struct {
	Step    string    `json:"step"`           // the step's path: "attempt", "review.check"
	N       int       `json:"attempt"`        // 1-based within one run of the step
	Score   float64   `json:"quality_score"`  // 0 when the attempt had no usable score
	Time    time.Time `json:"timestamp"`      // when it was scored
	Summary string    `json:"review_summary"` // one line: what the attempt produced
	Details *sig.Map  `json:"details"`        // the fields the attempt produced; nil when it failed
	// Best marks the run's best attempt: the highest score, the earlier one on a tie.
	Best  bool     `json:"best,omitempty"`
	Error string   `json:"error,omitempty"` // why the attempt failed, when it did
	Calls []string `json:"calls,omitempty"` // IDs of the call records it made (Call.ID)
}

// Clone deep-copies the attempt.
func (a *Attempt) Clone() *Attempt {
	if a == nil {
		return nil
	}
	out := *a
	out.Details = a.Details.Clone()
	out.Calls = append([]string(nil), a.Calls...)
	return &out
}

// Node is one row of a turn's call tree as the workbench and `session show --tree` draw
// it: a call, or an attempt of a retrying step (seed 003) holding the calls it made.
// Exactly one of Call and Attempt is set.
type Node struct {
	Call     *Call
	Attempt  *Attempt
	Children []*Node // an attempt's calls; a call's inner calls
}

// Tree arranges a turn's calls under the attempts they were made in: a run of sibling
// calls made in one attempt hangs under a node of that attempt. An attempt of a step
// nested in another retrying step lists a subset of the outer attempt's calls, so the
// outer one (more calls; recorded later on a tie) holds the inner one. An attempt that
// made no call (a tool step, a set step) stands alone among the top-level rows, where
// its time puts it.
func Tree(calls []*Call, attempts []*Attempt) []*Node {
	order := map[*Attempt]int{}
	chains := map[string][]*Attempt{} // by call ID: its attempts, outermost first
	for i, a := range attempts {
		order[a] = i
		for _, id := range a.Calls {
			chains[id] = append(chains[id], a)
		}
	}
	for _, chain := range chains {
		sort.SliceStable(chain, func(i, j int) bool {
			if len(chain[i].Calls) != len(chain[j].Calls) {
				return len(chain[i].Calls) > len(chain[j].Calls)
			}
			return order[chain[i]] > order[chain[j]]
		})
	}
	var group func(cs []*Call, d int) []*Node
	group = func(cs []*Call, d int) []*Node {
		var out []*Node
		var open []*Call // the calls of the attempt node being filled
		flush := func() {
			if len(open) > 0 {
				out[len(out)-1].Children = group(open, d+1)
				open = nil
			}
		}
		for _, c := range cs {
			var a *Attempt
			if chain := chains[c.ID]; d < len(chain) {
				a = chain[d]
			}
			if n := len(out); a != nil && n > 0 && out[n-1].Attempt == a {
				open = append(open, c)
				continue
			}
			flush()
			if a != nil {
				out = append(out, &Node{Attempt: a})
				open = []*Call{c}
				continue
			}
			out = append(out, &Node{Call: c, Children: group(c.Children, 0)})
		}
		flush()
		return out
	}
	nodes := group(calls, 0)
	seen := map[string]bool{}
	WalkCalls(calls, func(c *Call, _ int) { seen[c.ID] = true })
	for _, a := range attempts {
		made := false
		for _, id := range a.Calls {
			made = made || seen[id]
		}
		if made {
			continue
		}
		at := len(nodes)
		for i, n := range nodes {
			if a.Time.Before(n.start()) {
				at = i
				break
			}
		}
		nodes = append(nodes[:at], append([]*Node{{Attempt: a}}, nodes[at:]...)...)
	}
	return nodes
}

// start is when a node began: its call's start, its first call's, or an attempt's time.
func (n *Node) start() time.Time {
	switch {
	case n.Call != nil:
		return n.Call.Started
	case len(n.Children) > 0:
		return n.Children[0].start()
	}
	return n.Attempt.Time
}
