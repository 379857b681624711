package storage

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/sessionbench/sessionbench/core/sig"
)

// HistoryReader reads the recorded histories of calls, one call at a time, keeping the
// lists it read. A keep-predictor's history is the history of its previous call plus
// that call's entry, and storage keeps it so: a chain of list nodes, each call's history
// ending one node further down the same chain. So a call's history is read by walking up
// from the node it ends at only until a list read before, and extending that one: a
// preview of a turn next to one previewed reads one entry, not the thousand before it.
// A list node is immutable while it exists, but a sweep may delete it and a later write
// reuse its id; every list kept is therefore checked against the node's chain hash
// before it is used. It is safe for concurrent use; the histories it returns are shared
// with later reads and must not be changed.
type HistoryReader struct {
	s     *Store
	mu    sync.Mutex
	lists map[int64]keptList // by the list node they end at
	order []int64            // least recently used first
}

// keptList is a list read before and the chain hash of the node it ends at.
type keptList struct {
	hash []byte
	msgs []*sig.Map
}

// maxKeptLists bounds a HistoryReader: the calls of the turns around those previewed.
// The lists share their entries, so each costs about one pointer per entry.
const maxKeptLists = 64

// NewHistoryReader returns a reader of the store's call histories.
func (s *Store) NewHistoryReader() *HistoryReader {
	return &HistoryReader{s: s, lists: map[int64]keptList{}}
}

// CallHistory is the history call id of turn key ran with, as LoadTurnsWith reads it
// (LoadOptions{HistoryOf: id}), for the turn started at started: a turn key whose turn
// is another (its id reused after a sweep) is an error, as is an unknown call
// (ErrNotFound).
func (r *HistoryReader) CallHistory(ctx context.Context, key string, started time.Time, id string) (sig.History, error) {
	tid, err := parseTurnKey(key)
	if err != nil {
		return sig.History{}, err
	}
	var head sql.NullInt64
	var headHash []byte
	var tail tailRef
	var at string
	err = r.s.r.QueryRowContext(ctx, `SELECT c.history_node, n.hash, coalesce(c.history_tail, 0), c.history_tail_len, t.started_at
		FROM calls c JOIN turns t ON t.id = c.turn_id LEFT JOIN list_nodes n ON n.id = c.history_node
		WHERE c.turn_id = ? AND c.call_key = ?`, tid, id).Scan(&head, &headHash, &tail.id, &tail.n, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return sig.History{}, fmt.Errorf("storage: call %s of turn %s: %w", id, key, ErrNotFound)
	}
	if err != nil {
		return sig.History{}, fmt.Errorf("storage: history of call %s of turn %s: %w", id, key, err)
	}
	if !parseTime(at).Equal(started) {
		return sig.History{}, fmt.Errorf("storage: turn %s changed while it was read", key)
	}
	dec := newDecoder()
	var msgs []*sig.Map
	if head.Valid {
		if msgs, err = r.list(ctx, head.Int64, headHash, dec); err != nil {
			return sig.History{}, fmt.Errorf("storage: history of call %s of turn %s: %w", id, key, err)
		}
	}
	if tail.n > 0 {
		runs, err := loadTails(ctx, r.s.r, []tailRef{tail}, dec.historyEntry)
		if err != nil {
			return sig.History{}, fmt.Errorf("storage: history of call %s of turn %s: %w", id, key, err)
		}
		msgs = joinRun(msgs, tail, runs)
	}
	return sig.History{Messages: msgs}, nil
}

// list is the list ending at node leaf (whose chain hash is hash): as kept, or read up
// to the nearest list kept and appended to it.
func (r *HistoryReader) list(ctx context.Context, leaf int64, hash []byte, dec *decoder) ([]*sig.Map, error) {
	if l, ok := r.kept(leaf, hash); ok {
		return l, nil
	}
	for {
		msgs, stale, err := r.read(ctx, leaf, dec)
		if err != nil || stale == 0 {
			if err == nil {
				r.keep(leaf, hash, msgs)
			}
			return msgs, err
		}
		r.forget(stale) // then walk on past it
	}
}

// read walks up from leaf to the first node whose list is kept (or to the root) and
// returns the list; stale is a kept list found there whose node changed since, to be
// forgotten before reading again.
func (r *HistoryReader) read(ctx context.Context, leaf int64, dec *decoder) (msgs []*sig.Map, stale int64, err error) {
	rows, err := r.s.r.QueryContext(ctx, `WITH RECURSIVE n(id) AS (
			SELECT ?1
			UNION ALL SELECT l.parent_id FROM list_nodes l JOIN n ON l.id = n.id
				WHERE l.parent_id IS NOT NULL AND l.parent_id NOT IN (SELECT value FROM json_each(?2)))
		SELECT l.id, coalesce(l.parent_id, 0), l.role, l.content_id, l.depth, p.hash
		FROM n JOIN list_nodes l ON l.id = n.id LEFT JOIN list_nodes p ON p.id = l.parent_id`, leaf, idsJSON(r.keptIDs()))
	if err != nil {
		return nil, 0, fmt.Errorf("read list %d: %w", leaf, err)
	}
	type node struct {
		id, parent, content int64
		role                string
		depth               int
		parentHash          []byte
	}
	var nodes []node
	var cids []int64
	for rows.Next() {
		var n node
		if err := rows.Scan(&n.id, &n.parent, &n.role, &n.content, &n.depth, &n.parentHash); err != nil {
			rows.Close()
			return nil, 0, fmt.Errorf("read list %d: %w", leaf, err)
		}
		nodes = append(nodes, n)
		cids = append(cids, n.content)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("read list %d: %w", leaf, err)
	}
	if len(nodes) == 0 {
		return nil, 0, fmt.Errorf("list node %d is missing", leaf)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].depth < nodes[j].depth })
	top := nodes[0]
	var base []*sig.Map
	if top.parent != 0 {
		l, ok := r.kept(top.parent, top.parentHash)
		if !ok {
			return nil, top.parent, nil
		}
		base = l
	}
	if len(base) != top.depth-1 || nodes[len(nodes)-1].id != leaf || nodes[len(nodes)-1].depth != top.depth+len(nodes)-1 {
		return nil, 0, fmt.Errorf("list %d is not a chain of nodes (%d kept, %d read from depth %d)", leaf, len(base), len(nodes), top.depth)
	}
	bodies, err := loadContents(ctx, r.s.r, cids)
	if err != nil {
		return nil, 0, err
	}
	// A new backing array: the kept list's may be extended by another reader's list.
	msgs = make([]*sig.Map, len(base), len(base)+len(nodes))
	copy(msgs, base)
	for _, n := range nodes {
		m, err := dec.historyEntry(n.role, bodies[n.content], "")
		if err != nil {
			return nil, 0, fmt.Errorf("list element %d: %w", n.id, err)
		}
		msgs = append(msgs, m)
	}
	return msgs, 0, nil
}

// kept is the list kept for node id when its chain hash is still hash.
func (r *HistoryReader) kept(id int64, hash []byte) ([]*sig.Map, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.lists[id]
	if !ok || !bytes.Equal(l.hash, hash) {
		return nil, false
	}
	r.touch(id)
	return l.msgs[:len(l.msgs):len(l.msgs)], true
}

func (r *HistoryReader) keptIDs() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int64(nil), r.order...)
}

func (r *HistoryReader) keep(id int64, hash []byte, msgs []*sig.Map) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.lists[id]; !ok {
		r.order = append(r.order, id)
	} else {
		r.touch(id)
	}
	r.lists[id] = keptList{hash: bytes.Clone(hash), msgs: msgs}
	for len(r.order) > maxKeptLists {
		delete(r.lists, r.order[0])
		r.order = r.order[1:]
	}
}

func (r *HistoryReader) forget(id int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.lists, id)
	for i, o := range r.order {
		if o == id {
			r.order = append(r.order[:i], r.order[i+1:]...)
			break
		}
	}
}

// touch moves id to the most recently used end (caller holds r.mu).
func (r *HistoryReader) touch(id int64) {
	for i, o := range r.order {
		if o == id {
			r.order = append(append(r.order[:i], r.order[i+1:]...), id)
			return
		}
	}
}
