package storage

import (
	"context"
	"database/sql"
)

// A list that grows at one end and drops elements at the other (a history window that
// slides on) shares no prefix with the list before it; it is stored as a run instead:
// the elements it shares with the previous list's run, then new nodes after them (see
// putList).

// runFrom is the number of new elements from which a list that continues no stored path
// is looked for as a run of an earlier list's elements instead.
const runFrom = 4

// runSlack is how many elements of a run before the last window the write cache keeps
// (putRun), so that the windows of turns sent again after an undo of up to about that
// many messages find their nodes rather than store them again.
const runSlack = 64

// nodeRun is the run of list nodes the last list under a key ended with (nodes[from:]),
// after up to runSlack nodes of the same chain before it (nodes[:from]).
type nodeRun struct {
	nodes []nodeRef
	from  int
}

// putRun stores items (after the head node) as a run continuing the last run stored under
// key: items[:r] are that run's elements from some position j on, and the rest are new
// nodes after them. The position is looked for in the last list's run first (a window
// that slid on), then in the nodes before it (a window sent again after an undo). ok is
// false when no element lines up.
func putRun(ctx context.Context, wc *writeCache, tx *wtx, key string, head nodeRef, items []listItem) (storedList, bool, error) {
	run := wc.run(key)
	prev := run.nodes
	if len(prev) == 0 {
		return storedList{}, false, nil
	}
	first, ok := wc.content(items[0].Body)
	if !ok {
		return storedList{}, false, nil
	}
	j := -1
	for _, span := range [][2]int{{run.from, len(prev)}, {0, run.from}} {
		for i := span[0]; i < span[1] && j < 0; i++ {
			if n := prev[i]; n.content == first.id && n.role == items[0].key() {
				j = i
			}
		}
	}
	if j < 0 {
		return storedList{}, false, nil
	}
	r := 1
	for r < len(items) && j+r < len(prev) {
		c, ok := wc.content(items[r].Body)
		if !ok || prev[j+r].content != c.id || prev[j+r].role != items[r].key() {
			break
		}
		r++
	}
	last, nodes, err := appendNodes(ctx, wc, tx, key, prev[j+r-1], items[r:])
	if err != nil {
		return storedList{}, false, err
	}
	if len(items) == r {
		last = prev[j+r-1]
	}
	// The run kept for the next list starts up to runSlack elements before this window:
	// a list sent again after an undo of a few turns begins there, and finds its nodes.
	from := max(j-runSlack, 0)
	wc.stRuns[key] = nodeRun{nodes: append(prev[from:j+r:j+r], nodes...), from: j - from}
	l := storedList{tail: sql.NullInt64{Int64: last.id, Valid: true}, tailLen: len(items)}
	if head.id != 0 {
		l.head = sql.NullInt64{Int64: head.id, Valid: true}
	}
	return l, true, nil
}
