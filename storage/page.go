package storage

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/sessionbench/sessionbench/core/trace"
)

// Paged and lean reads for the workbench: its first frame needs the last page of a
// branch, not the whole path, and restoring a session needs the turns and the calls'
// values, not the requests the calls sent. These reads cost what they return (plus
// O(log n) jump-pointer steps), so they stay flat as a branch grows.

// pathCTE walks up from turn ?1 to depth ?2, then reads each turn's columns once; the
// rows come out tip first (callers reverse them; no sort): the CROSS JOIN keeps the
// walk as the outer loop. The walk carries ids only: a recursive CTE copies every
// column it carries through its queue (the texts too). A path holds completed turns
// only, which have no owner; their conversation is the caller's.
const pathCTE = `WITH RECURSIVE p(id, parent_id) AS (
	SELECT id, parent_id FROM turns WHERE id = ?1
	UNION ALL
	SELECT t.id, t.parent_id FROM turns t JOIN p ON t.id = p.parent_id WHERE t.depth >= ?2)
SELECT t.id, t.parent_id, t.depth, t.status, t.inputs, t.outputs, t.score, t.explicit,
	(SELECT count(*) FROM calls c WHERE c.turn_id = t.id), t.started_at, t.ended_at, t.error, t.snapshot_node, t.branch_id,
	t.input_preview, t.output_preview, '', NULL, NULL, NULL, NULL, t.retry_of
FROM p CROSS JOIN turns t ON t.id = p.id`

// pathUp returns the turns from top (a turn at depth >= from) up to depth from, root first.
func pathUp(ctx context.Context, q querier, top int64, from int) ([]*TurnNode, error) {
	nodes, err := queryNodes(ctx, q, pathCTE, top, from)
	if err != nil {
		return nil, fmt.Errorf("storage: load branch path: %w", err)
	}
	slices.Reverse(nodes)
	return nodes, nil
}

// ancestorQuery finds the ancestor of turn ?1 at depth ?2 in one statement, following a
// jump pointer whenever it does not overshoot (O(log depth) steps).
const ancestorQuery = `WITH RECURSIVE a(id, parent_id, jump_id, depth, jump_depth) AS (
	SELECT id, parent_id, jump_id, depth, jump_depth FROM turns WHERE id = ?1
	UNION ALL
	SELECT t.id, t.parent_id, t.jump_id, t.depth, t.jump_depth FROM turns t JOIN a
		ON t.id = CASE WHEN a.jump_id IS NOT NULL AND a.jump_depth >= ?2 THEN a.jump_id ELSE a.parent_id END
		WHERE a.depth > ?2)
SELECT id FROM a WHERE depth = ?2`

func ancestorAtDepth(ctx context.Context, q querier, id int64, depth int) (int64, error) {
	var out int64
	if err := q.QueryRowContext(ctx, ancestorQuery, id, depth).Scan(&out); err != nil {
		return 0, fmt.Errorf("storage: ancestor of turn %d at index %d: %w", id, depth, err)
	}
	return out, nil
}

// windowStart is where a window starting at from begins on a path of total turns: a
// negative from counts from the end (-50: the last 50 turns), clamped to the path.
func windowStart(from, total int) int {
	if from < 0 {
		from += total
	}
	return min(max(from, 0), total)
}

// windowBounds are the turns [start, end) of a window of limit turns from from on a path
// of total turns (limit <= 0: up to the tip; a negative from counts from the end).
func windowBounds(from, limit, total int) (start, end int) {
	start, end = windowStart(from, total), total
	if limit > 0 {
		end = min(start+limit, total)
	}
	return start, end
}

// pathWindow returns turns [from, from+limit) of the path ending at tip (total turns long);
// limit <= 0 means up to the tip, a negative from counts from the end.
func pathWindow(ctx context.Context, q querier, tip sql.NullInt64, total, from, limit int) ([]*TurnNode, error) {
	from, end := windowBounds(from, limit, total)
	if !tip.Valid || from >= end {
		return nil, nil
	}
	top := tip.Int64
	if end < total {
		var err error
		if top, err = ancestorAtDepth(ctx, q, top, end-1); err != nil {
			return nil, err
		}
	}
	return pathUp(ctx, q, top, from)
}

// BranchLen returns the number of turns on a branch's path (one indexed lookup).
func (s *Store) BranchLen(ctx context.Context, convID, branch string) (int, error) {
	b, err := branchByName(ctx, s.r, convID, branch)
	if err != nil {
		return 0, err
	}
	return b.Length, nil
}

// BranchPathRange returns turns [from, from+limit) of a branch's path without calls, root
// first, and the path's length; limit <= 0 means up to the tip, and a window past the end
// is empty. Its cost is the window plus O(log n), not the branch.
func (s *Store) BranchPathRange(ctx context.Context, convID, branch string, from, limit int) ([]*TurnNode, int, error) {
	b, err := branchByName(ctx, s.r, convID, branch)
	if err != nil {
		return nil, 0, err
	}
	nodes, err := pathWindow(ctx, s.r, b.tipID, b.Length, from, limit)
	return nodes, b.Length, err
}

// BranchPathTail returns the last n turns of a branch's path (all if n <= 0), root first,
// and the path's length: what a view scrolled to the bottom shows first.
func (s *Store) BranchPathTail(ctx context.Context, convID, branch string, n int) ([]*TurnNode, int, error) {
	b, err := branchByName(ctx, s.r, convID, branch)
	if err != nil {
		return nil, 0, err
	}
	from := 0
	if n > 0 {
		from = max(b.Length-n, 0)
	}
	nodes, err := pathWindow(ctx, s.r, b.tipID, b.Length, from, 0)
	return nodes, b.Length, err
}

// BranchPage is a window of a branch's turns with their calls.
type BranchPage struct {
	From  int           // index of Turns[0] on the path
	Total int           // turns on the whole path
	Keys  []string      // turn keys, parallel to Turns
	Turns []*trace.Turn // root first
	Nodes []*TurnNode   // the same turns without calls (parents, states, call counts)
}

// LoadBranchRange loads turns [from, from+limit) of a branch with their calls and exact
// requests (limit <= 0: up to the tip; a negative from counts from the end, so -n, n is
// the last page of n turns), in a fixed number of queries.
func (s *Store) LoadBranchRange(ctx context.Context, convID, branch string, from, limit int) (*BranchPage, error) {
	return s.LoadBranchRangeWith(ctx, convID, branch, from, limit, LoadOptions{})
}

// LoadBranchRangeWith is LoadBranchRange with options; with NoRequests and limit 0 it is
// LoadBranchWith's restore read plus the turns' keys and nodes.
func (s *Store) LoadBranchRangeWith(ctx context.Context, convID, branch string, from, limit int, o LoadOptions) (*BranchPage, error) {
	b, err := branchByName(ctx, s.r, convID, branch)
	if err != nil {
		return nil, err
	}
	return s.branchRange(ctx, s.r, b, from, limit, o)
}

// LoadBranchRangeAt is LoadBranchRangeWith on the branch as a BranchHead just read it,
// its tip (nil when it has no turns) and length, without reading the branch again: the
// turns before a tip never change, so the window read is the path through that tip even
// when the branch has moved since. It is the tail a windowed agent's session is restored
// from just before a turn: a short window is read on the writer connection, as the head
// was (hotread.go).
func (s *Store) LoadBranchRangeAt(ctx context.Context, convID, branch string, tip *TurnNode, total, from, limit int, o LoadOptions) (*BranchPage, error) {
	b := &Branch{ConvID: convID, Name: branch}
	if tip != nil {
		id, err := parseTurnKey(tip.Key)
		if err != nil {
			return nil, err
		}
		b.tipID, b.Length = sql.NullInt64{Int64: id, Valid: true}, total
	}
	return s.branchRange(ctx, s.hotReads(ctx), b, from, limit, o)
}

// branchRange is LoadBranchRangeWith on branch b as read, on q unless it is long enough
// to read in chunks on the readers at once.
func (s *Store) branchRange(ctx context.Context, q querier, b *Branch, from, limit int, o LoadOptions) (*BranchPage, error) {
	var err error
	var nodes []*TurnNode
	var turns []*trace.Turn
	start, end := windowBounds(from, limit, b.Length)
	if k := s.restoreChunks(ctx, end-start, o); k > 1 {
		nodes, turns, err = s.windowInChunks(ctx, b.tipID, b.Length, start, end, o, k)
	} else if nodes, err = pathWindow(ctx, q, b.tipID, b.Length, from, limit); err == nil {
		turns, err = s.turnsOfChunk(ctx, q, nodes, o)
	}
	if err != nil {
		return nil, err
	}
	p := &BranchPage{From: windowStart(from, b.Length), Total: b.Length, Turns: turns, Nodes: nodes}
	for _, n := range nodes {
		p.Keys = append(p.Keys, n.Key)
	}
	return p, nil
}

// LoadTurns loads the given turns (any state) with their calls, in the order given, in a
// fixed number of queries. An unknown key is ErrNotFound.
func (s *Store) LoadTurns(ctx context.Context, keys []string) ([]*trace.Turn, error) {
	return s.LoadTurnsWith(ctx, keys, LoadOptions{})
}

// LoadTurnsWith is LoadTurns with options (NoRequests: what restoring a session reads).
func (s *Store) LoadTurnsWith(ctx context.Context, keys []string, o LoadOptions) ([]*trace.Turn, error) {
	ids := make([]int64, len(keys))
	for i, k := range keys {
		id, err := parseTurnKey(k)
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	if len(ids) == 0 {
		return nil, nil
	}
	nodes, err := s.turnNodes(ctx, ids)
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if n == nil || n.Status == trace.StatusRunning || n.Status == trace.StatusInterrupted {
			return s.loadWithLive(ctx, keys, ids, nodes, o) // in flight, maybe
		}
	}
	return s.turnsOf(ctx, nodes, o)
}

// turnNodes are the stored turns ids, in their order: nil where one is not stored.
func (s *Store) turnNodes(ctx context.Context, ids []int64) ([]*TurnNode, error) {
	nodes, err := queryNodes(ctx, s.r, "SELECT "+nodeColumns+" FROM turns t WHERE t.id IN (SELECT value FROM json_each(?))", idsJSON(ids))
	if err != nil {
		return nil, fmt.Errorf("storage: load turns: %w", err)
	}
	byID := make(map[int64]*TurnNode, len(nodes))
	for _, n := range nodes {
		byID[n.id.Int64] = n
	}
	ordered := make([]*TurnNode, len(ids))
	for i, id := range ids {
		ordered[i] = byID[id]
	}
	return ordered, nil
}

// Locate finds a branch whose path holds turn key and the turn's index there, trying
// main first, then branches by creation (Branches' order). Each branch costs one
// O(log n) ancestor lookup (jump pointers), not a walk of its path. A turn no branch
// reaches (undone, pending, discarded, of another conversation) is ErrNotFound.
func (s *Store) Locate(ctx context.Context, convID, key string) (string, int, error) {
	id, err := parseTurnKey(key)
	if err != nil {
		return "", 0, err
	}
	p, err := readPos(ctx, s.r, id)
	if err != nil {
		return "", 0, err
	}
	if p.conv == convID && p.status == trace.StatusCompleted {
		// main comes first: a turn on its path (most are) is found without listing the
		// other branches
		if m, err := branchByName(ctx, s.r, convID, MainBranch); err == nil && m.tipID.Valid && m.Length > p.depth {
			a, err := ancestorAtDepth(ctx, s.r, m.tipID.Int64, p.depth)
			if err != nil {
				return "", 0, err
			}
			if a == id {
				return MainBranch, p.depth, nil
			}
		}
		rows, err := s.r.QueryContext(ctx, `SELECT b.name, b.tip_id, t.depth FROM branches b JOIN turns t ON t.id = b.tip_id
			WHERE b.conv_id = ? ORDER BY b.name <> 'main', b.created_at, b.id`, convID)
		if err != nil {
			return "", 0, fmt.Errorf("storage: locate turn %s: %w", key, err)
		}
		type tip struct {
			name  string
			id    int64
			depth int
		}
		var tips []tip
		for rows.Next() {
			var t tip
			if err := rows.Scan(&t.name, &t.id, &t.depth); err != nil {
				rows.Close()
				return "", 0, fmt.Errorf("storage: locate turn %s: %w", key, err)
			}
			tips = append(tips, t)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return "", 0, fmt.Errorf("storage: locate turn %s: %w", key, err)
		}
		for _, t := range tips {
			if t.depth < p.depth {
				continue
			}
			a, err := ancestorAtDepth(ctx, s.r, t.id, p.depth)
			if err != nil {
				return "", 0, err
			}
			if a == id {
				return t.name, p.depth, nil
			}
		}
	}
	return "", 0, fmt.Errorf("storage: turn %s is on no branch of conversation %q: %w", key, convID, ErrNotFound)
}

// CountRequests counts the model requests of the given turns: their calls that asked a
// model and got an answer (no inner calls, no error), without loading any.
func (s *Store) CountRequests(ctx context.Context, keys []string) (int, error) {
	ids := make([]int64, len(keys))
	for i, k := range keys {
		id, err := parseTurnKey(k)
		if err != nil {
			return 0, err
		}
		ids[i] = id
	}
	var n int
	err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM calls c WHERE c.turn_id IN (SELECT value FROM json_each(?))
		AND c.error = '' AND NOT EXISTS (SELECT 1 FROM calls ch WHERE ch.turn_id = c.turn_id AND ch.parent_key = c.call_key)`,
		idsJSON(ids)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("storage: count requests: %w", err)
	}
	return n, nil
}

// LoadOptions choose how much of each call LoadBranchWith reassembles.
type LoadOptions struct {
	// NoRequests leaves out each call's request messages, completion and raw HTTP bodies,
	// which are most of a long branch's bytes. The turns, and the calls' tree, values,
	// histories, usage and timings are kept: what core.Restore reads to rebuild a session.
	NoRequests bool
	// NoHistories leaves out each call's history too (a keep-predictor's grows with the
	// branch): restoring a session reads the calls' values, not what they saw.
	NoHistories bool
	// HistoryOf, when set, reads the history of the call with this ID alone (a preview
	// of one call needs no other's).
	HistoryOf string
	// ValuesOnly reads of each call only what restoring a session and rendering its
	// strategies read: its place in the call tree, values, adapter, model, timing, error
	// and recovery; not its usage, params, attempts or score (and, as NoRequests and
	// NoHistories, no request or history), nor the turn's attempts. Half the columns: the
	// query of a long branch's calls takes half the time.
	ValuesOnly bool
}

// effective is o with what ValuesOnly implies set.
func (o LoadOptions) effective() LoadOptions {
	if o.ValuesOnly {
		o.NoRequests, o.NoHistories = true, true
	}
	return o
}

// LoadBranchWith is LoadBranch with options; LoadBranchWith(ctx, c, b, LoadOptions{NoRequests:
// true}) is the cheap way to restore a long branch's session before running a turn.
func (s *Store) LoadBranchWith(ctx context.Context, convID, branch string, o LoadOptions) ([]*trace.Turn, error) {
	b, err := branchByName(ctx, s.r, convID, branch)
	if err != nil {
		return nil, err
	}
	nodes, err := pathNodes(ctx, s.r, b.tipID)
	if err != nil {
		return nil, err
	}
	return s.turnsOf(ctx, nodes, o)
}

// TurnTreePage returns up to limit turns of a conversation's tree (every state) after the
// turn key after ("" for the start), in key order, and the key to continue from ("" at the
// end): the navigator can show the first page and fetch the rest in the background. A
// parent always comes before its children. Branches marks branch tips as in TurnTree.
func (s *Store) TurnTreePage(ctx context.Context, convID, after string, limit int) ([]*TurnNode, string, error) {
	var afterID int64
	if after != "" {
		id, err := parseTurnKey(after)
		if err != nil {
			return nil, "", err
		}
		afterID = id
	}
	if limit <= 0 {
		return nil, "", fmt.Errorf("storage: turn tree page of %q: limit must be positive (got %d): %w", convID, limit, ErrInvalid)
	}
	nodes, err := queryNodes(ctx, s.r, "SELECT "+nodeColumns+` FROM turns t WHERE t.conv_id = ? AND t.id > ?
		ORDER BY t.id LIMIT ?`, convID, afterID, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("storage: turn tree of %q: %w", convID, err)
	}
	next := ""
	if len(nodes) > limit {
		nodes = nodes[:limit]
		next = nodes[limit-1].Key
	}
	if err := s.markTips(ctx, convID, nodes); err != nil {
		return nil, "", err
	}
	return nodes, next, nil
}

// markTips fills Branches on the nodes that are branch tips.
func (s *Store) markTips(ctx context.Context, convID string, nodes []*TurnNode) error {
	bs, err := s.Branches(ctx, convID)
	if err != nil {
		return err
	}
	// A map of the few tips, not of the (maybe 100,000) nodes.
	tips := map[string][]string{}
	for _, b := range bs {
		if b.Tip != "" {
			tips[b.Tip] = append(tips[b.Tip], b.Name)
		}
	}
	for _, n := range nodes {
		if names, ok := tips[n.Key]; ok {
			n.Branches = append([]string(nil), names...)
		}
	}
	return nil
}

// AppendTurns stores complete turns (with their calls) one after another at the tip of
// branch in a single transaction, for imports and fixtures: one commit (one fsync) for
// the lot instead of one per turn. It returns the turn keys; on error nothing is stored.
func (s *Store) AppendTurns(ctx context.Context, convID, branch string, turns []*trace.Turn) ([]string, error) {
	ins, err := turnInputs(turns)
	if err != nil {
		return nil, err
	}
	var keys []string
	err = s.moveTip(ctx, convID, branch, "stored", func(tx *wtx, _ *Branch) error {
		if err := requireOpen(ctx, tx, convID); err != nil {
			return err
		}
		keys, err = appendTurns(ctx, s.wc, tx, convID, branch, turns, ins)
		return err
	})
	if err != nil {
		return nil, err
	}
	return keys, nil
}

// turnInputs encodes the turns' inputs, checked before a transaction begins.
func turnInputs(turns []*trace.Turn) ([]string, error) {
	ins := make([]string, len(turns))
	for i, t := range turns {
		if t == nil {
			return nil, fmt.Errorf("storage: append turns: turn %d is nil: %w", i, ErrInvalid)
		}
		in, err := jsonOf(t.Inputs)
		if err != nil {
			return nil, fmt.Errorf("storage: inputs of turn %d: %w", i, err)
		}
		ins[i] = in.String
		if !in.Valid {
			ins[i] = "{}"
		}
	}
	return ins, nil
}

// appendTurns commits turns after branch's tip inside tx (their inputs encoded as ins).
func appendTurns(ctx context.Context, wc *writeCache, tx *wtx, convID, branch string, turns []*trace.Turn, ins []string) ([]string, error) {
	keys := make([]string, 0, len(turns))
	for i, t := range turns {
		br, err := branchByName(ctx, tx, convID, branch)
		if err != nil {
			return nil, err
		}
		id, err := insertTurn(ctx, tx, convID, br, ins[i], nil, 0)
		if err != nil {
			return nil, err
		}
		if err := commitTurn(ctx, wc, tx, br, turnPos{id: id, parent: br.tipID.Int64, conv: convID}, t); err != nil {
			return nil, fmt.Errorf("storage: append turn %d: %w", i, err)
		}
		keys = append(keys, turnKey(id))
	}
	return keys, nil
}
