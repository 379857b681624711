package storage

import (
	"context"
	"database/sql"
	"fmt"
	"sort"

	"github.com/sessionbench/sessionbench/core/lm"
)

// loadLists reassembles the lists ending at the given nodes with two queries. Lists that
// extend one another share one backing array (each node's slot after it is claimed by its
// first child only), so a branch whose every request repeats the conversation so far
// costs memory linear in its unique messages, not quadratic.
func loadLists[T any](ctx context.Context, q querier, leaves []int64, conv func(role, body, extra string) (T, error)) (map[int64][]T, error) {
	out := map[int64][]T{}
	if len(leaves) == 0 {
		return out, nil
	}
	// The walk carries ids only (its de-duplication index stays small); the columns are
	// read once per node by rowid afterwards.
	rows, err := q.QueryContext(ctx, `WITH RECURSIVE n(id) AS (
			SELECT value FROM json_each(?)
			UNION SELECT l.parent_id FROM list_nodes l JOIN n ON l.id = n.id WHERE l.parent_id IS NOT NULL)
		SELECT l.id, l.parent_id, l.role, l.content_id, l.depth, coalesce(l.extra, '') FROM n JOIN list_nodes l ON l.id = n.id`,
		idsJSON(leaves))
	if err != nil {
		return nil, fmt.Errorf("load lists: %w", err)
	}
	type node struct {
		id, parent, content int64
		role, extra         string
		depth               int
	}
	var nodes []node
	var cids []int64
	roles := map[string]string{} // a handful of distinct roles: one string each
	for rows.Next() {
		var n node
		var parent sql.NullInt64
		var role sql.RawBytes
		if err := rows.Scan(&n.id, &parent, &role, &n.content, &n.depth, &n.extra); err != nil {
			rows.Close()
			return nil, fmt.Errorf("load lists: %w", err)
		}
		r, ok := roles[string(role)]
		if !ok {
			r = string(role)
			roles[r] = r
		}
		n.parent, n.role = parent.Int64, r
		nodes = append(nodes, n)
		cids = append(cids, n.content)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load lists: %w", err)
	}
	bodies, err := loadContents(ctx, q, cids)
	if err != nil {
		return nil, err
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].depth < nodes[j].depth })
	claimed := make(map[int64]bool, len(nodes))
	for _, n := range nodes {
		v, err := conv(n.role, bodies[n.content], n.extra)
		if err != nil {
			return nil, fmt.Errorf("list element %d: %w", n.id, err)
		}
		base := out[n.parent] // nil for a first element
		if claimed[n.parent] {
			base = append(make([]T, 0, len(base)+1), base...)
		}
		claimed[n.parent] = true
		out[n.id] = append(base, v)
	}
	return out, nil
}

// tailRef is a run of a stored list: the last n elements of the path ending at node id.
type tailRef struct {
	id int64
	n  int
}

// loadTails reads runs, each by walking up its n nodes (runs are short: windows), in two
// queries.
func loadTails[T any](ctx context.Context, q querier, tails []tailRef, conv func(role, body, extra string) (T, error)) (map[tailRef][]T, error) {
	out := map[tailRef][]T{}
	if len(tails) == 0 {
		return out, nil
	}
	var arg []byte
	seen := map[tailRef]bool{}
	for _, t := range tails {
		if seen[t] {
			continue
		}
		seen[t] = true
		if len(arg) > 0 {
			arg = append(arg, ',')
		}
		arg = fmt.Appendf(arg, "[%d,%d]", t.id, t.n)
	}
	rows, err := q.QueryContext(ctx, `WITH RECURSIVE w(start, n, k, id) AS (
			SELECT value ->> 0, value ->> 1, value ->> 1, value ->> 0 FROM json_each(?)
			UNION ALL SELECT w.start, w.n, w.k - 1, l.parent_id FROM w JOIN list_nodes l ON l.id = w.id WHERE w.k > 1)
		SELECT w.start, w.n, w.k, l.role, l.content_id, coalesce(l.extra, '') FROM w JOIN list_nodes l ON l.id = w.id`, "["+string(arg)+"]")
	if err != nil {
		return nil, fmt.Errorf("load runs: %w", err)
	}
	type elem struct {
		t       tailRef
		k       int
		role    string
		content int64
		extra   string
	}
	var elems []elem
	var cids []int64
	for rows.Next() {
		var e elem
		if err := rows.Scan(&e.t.id, &e.t.n, &e.k, &e.role, &e.content, &e.extra); err != nil {
			rows.Close()
			return nil, fmt.Errorf("load runs: %w", err)
		}
		elems = append(elems, e)
		cids = append(cids, e.content)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load runs: %w", err)
	}
	bodies, err := loadContents(ctx, q, cids)
	if err != nil {
		return nil, err
	}
	found := map[tailRef]int{}
	for _, e := range elems {
		run := out[e.t]
		if run == nil {
			run = make([]T, e.t.n)
			out[e.t] = run
		}
		v, err := conv(e.role, bodies[e.content], e.extra)
		if err != nil {
			return nil, fmt.Errorf("list element %d of run %d: %w", e.k, e.t.id, err)
		}
		run[e.k-1] = v
		found[e.t]++
	}
	for t := range seen {
		if found[t] != t.n {
			return nil, fmt.Errorf("load runs: the run of %d elements ending at list node %d has %d", t.n, t.id, found[t])
		}
	}
	return out, nil
}

// joinMessages is a request as joinRun makes it, sharing both parts instead of copying
// them: a loaded branch's requests repeat one another.
func joinMessages(head []lm.Message, t tailRef, runs map[tailRef][]lm.Message) lm.MessageList {
	l := lm.MessagesOf(head)
	if t.n == 0 {
		return l
	}
	return l.Concat(lm.MessagesOf(runs[t]))
}

// joinRun is a list's head followed by its run (a new slice: heads are shared).
func joinRun[T any](head []T, t tailRef, runs map[tailRef][]T) []T {
	if t.n == 0 {
		return head
	}
	out := make([]T, 0, len(head)+t.n)
	return append(append(out, head...), runs[t]...)
}
