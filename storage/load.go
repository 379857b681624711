package storage

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// TurnNode is a turn without its calls: what lists and trees in the UI need.
type TurnNode struct {
	Key      string          `json:"key"`
	Parent   string          `json:"parent,omitempty"`
	Index    int             `json:"index"`
	State    string          `json:"state"` // pending, committed, discarded
	Inputs   json.RawMessage `json:"inputs"`
	Outputs  json.RawMessage `json:"outputs,omitempty"`
	Score    *float64        `json:"score,omitempty"`
	Explicit bool            `json:"explicit,omitempty"`
	Calls    int             `json:"calls"`
	Started  time.Time       `json:"started"`
	Ended    time.Time       `json:"ended,omitempty"`
	Reason   string          `json:"abort_reason,omitempty"`
	Branches []string        `json:"branches,omitempty"` // branches whose tip this is (TurnTree only)
	// InputPreview and OutputPreview are the first input and output value on one line,
	// cut to 300 characters: what a tree row shows, without decoding Inputs/Outputs.
	InputPreview  string `json:"input_preview,omitempty"`
	OutputPreview string `json:"output_preview,omitempty"`

	id, snapshot sql.NullInt64
	branchID     sql.NullInt64
}

const nodeColumns = `t.id, t.parent_id, t.depth, t.state, t.inputs, t.outputs, t.score, t.explicit,
	(SELECT count(*) FROM calls c WHERE c.turn_id = t.id), t.started_at, t.ended_at, t.abort_reason, t.snapshot_node, t.branch_id,
	t.input_preview, t.output_preview`

func scanNode(sc interface{ Scan(...any) error }) (*TurnNode, error) {
	n := &TurnNode{}
	var parent sql.NullInt64
	var in string
	var out, ended, reason sql.NullString
	var started string
	if err := sc.Scan(&n.id, &parent, &n.Index, &n.State, &in, &out, &n.Score, &n.Explicit, &n.Calls,
		&started, &ended, &reason, &n.snapshot, &n.branchID, &n.InputPreview, &n.OutputPreview); err != nil {
		return nil, err
	}
	n.Key, n.Parent = turnKey(n.id.Int64), nullKey(parent)
	n.Inputs = json.RawMessage(in)
	if out.Valid {
		n.Outputs = json.RawMessage(out.String)
	}
	n.Started, n.Ended, n.Reason = parseTime(started), parseTime(ended.String), reason.String
	return n, nil
}

func queryNodes(ctx context.Context, q querier, query string, args ...any) ([]*TurnNode, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*TurnNode
	for rows.Next() {
		n, err := scanNode(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// BranchPath returns the committed turns of a branch, root to tip, without calls: one
// recursive query over the parent index.
func (s *Store) BranchPath(ctx context.Context, convID, branch string) ([]*TurnNode, error) {
	b, err := branchByName(ctx, s.r, convID, branch)
	if err != nil {
		return nil, err
	}
	return pathNodes(ctx, s.r, b.tipID)
}

func pathNodes(ctx context.Context, q querier, tip sql.NullInt64) ([]*TurnNode, error) {
	if !tip.Valid {
		return nil, nil
	}
	return pathUp(ctx, q, tip.Int64, 0)
}

// TurnTree returns every turn of a conversation (all branches, undone and discarded turns
// included) in one query, each marked with the branches whose tip it is.
func (s *Store) TurnTree(ctx context.Context, convID string) ([]*TurnNode, error) {
	nodes, err := queryNodes(ctx, s.r, "SELECT "+nodeColumns+" FROM turns t WHERE t.conv_id = ? ORDER BY t.id", convID)
	if err != nil {
		return nil, fmt.Errorf("storage: turn tree of %q: %w", convID, err)
	}
	if err := s.markTips(ctx, convID, nodes); err != nil {
		return nil, err
	}
	return nodes, nil
}

// LoadBranch loads a branch's turns, root to tip, with their call trees and the exact
// requests reassembled from the de-duplicated message store. Turn.History is filled for
// explicit snapshots only; other snapshots derive from the path (DESIGN.md).
func (s *Store) LoadBranch(ctx context.Context, convID, branch string) ([]*trace.Turn, error) {
	return s.LoadBranchWith(ctx, convID, branch, LoadOptions{})
}

// LoadTurn loads one turn (any state) with its calls.
func (s *Store) LoadTurn(ctx context.Context, key string) (*trace.Turn, error) {
	id, err := parseTurnKey(key)
	if err != nil {
		return nil, err
	}
	nodes, err := queryNodes(ctx, s.r, "SELECT "+nodeColumns+" FROM turns t WHERE t.id = ?", id)
	if err != nil {
		return nil, fmt.Errorf("storage: load turn %s: %w", key, err)
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("storage: turn %s: %w", key, ErrNotFound)
	}
	ts, err := s.turnsOf(ctx, nodes, LoadOptions{})
	if err != nil {
		return nil, err
	}
	return ts[0], nil
}

func (s *Store) turnsOf(ctx context.Context, nodes []*TurnNode, o LoadOptions) ([]*trace.Turn, error) {
	ids := make([]int64, len(nodes))
	var snaps []int64
	for i, n := range nodes {
		ids[i] = n.id.Int64
		if n.snapshot.Valid {
			snaps = append(snaps, n.snapshot.Int64)
		}
	}
	dec := newDecoder()
	calls, err := loadCalls(ctx, s.r, ids, o, dec)
	if err != nil {
		return nil, err
	}
	hist, err := loadLists(ctx, s.r, snaps, dec.historyEntry)
	if err != nil {
		return nil, err
	}
	out := make([]*trace.Turn, len(nodes))
	for i, n := range nodes {
		t, err := n.turn(dec)
		if err != nil {
			return nil, err
		}
		t.Calls = calls[n.id.Int64]
		if n.snapshot.Valid {
			t.History = sig.History{Messages: hist[n.snapshot.Int64]}
		}
		out[i] = t
	}
	return out, nil
}

// turn converts a node to a trace.Turn without calls.
func (n *TurnNode) turn(dec *decoder) (*trace.Turn, error) {
	t := &trace.Turn{Index: n.Index, Score: n.Score, Explicit: n.Explicit, Started: n.Started, Ended: n.Ended}
	var err error
	if t.Inputs, err = dec.mapOf(sql.NullString{String: string(n.Inputs), Valid: true}); err != nil {
		return nil, fmt.Errorf("storage: inputs of turn %s are corrupt: %w", n.Key, err)
	}
	if t.Outputs, err = dec.mapOf(sql.NullString{String: string(n.Outputs), Valid: n.Outputs != nil}); err != nil {
		return nil, fmt.Errorf("storage: outputs of turn %s are corrupt: %w", n.Key, err)
	}
	return t, nil
}

// PendingTurn is an in-flight turn left by a crash or a kill: its inputs and the inner
// calls that finished before the process died.
type PendingTurn struct {
	Key     string        `json:"key"`
	ConvID  string        `json:"conversation"`
	Branch  string        `json:"branch"` // "" if the branch was deleted since
	Index   int           `json:"index"`
	Inputs  *sig.Map      `json:"inputs"`
	Started time.Time     `json:"started"`
	Calls   []*trace.Call `json:"calls"`
	// Stale is set when the branch tip moved since the turn began, so it can only be
	// discarded (committing it would fail).
	Stale bool `json:"stale"`
}

// PendingTurns lists every in-flight turn in the database, oldest first, for the
// resume-or-discard offer at start-up.
func (s *Store) PendingTurns(ctx context.Context) ([]*PendingTurn, error) {
	nodes, err := queryNodes(ctx, s.r, "SELECT "+nodeColumns+" FROM turns t WHERE t.state = 'pending' ORDER BY t.id")
	if err != nil {
		return nil, fmt.Errorf("storage: pending turns: %w", err)
	}
	return s.pendingOf(ctx, nodes)
}

// PendingTurn loads one in-flight turn.
func (s *Store) PendingTurn(ctx context.Context, key string) (*PendingTurn, error) {
	id, err := parseTurnKey(key)
	if err != nil {
		return nil, err
	}
	nodes, err := queryNodes(ctx, s.r, "SELECT "+nodeColumns+" FROM turns t WHERE t.id = ? AND t.state = 'pending'", id)
	if err != nil {
		return nil, fmt.Errorf("storage: pending turn %s: %w", key, err)
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("storage: no pending turn %s: %w", key, ErrNotFound)
	}
	p, err := s.pendingOf(ctx, nodes)
	if err != nil {
		return nil, err
	}
	return p[0], nil
}

func (s *Store) pendingOf(ctx context.Context, nodes []*TurnNode) ([]*PendingTurn, error) {
	ids := make([]int64, len(nodes))
	for i, n := range nodes {
		ids[i] = n.id.Int64
	}
	dec := newDecoder()
	calls, err := loadCalls(ctx, s.r, ids, LoadOptions{}, dec)
	if err != nil {
		return nil, err
	}
	out := make([]*PendingTurn, 0, len(nodes))
	for _, n := range nodes {
		t, err := n.turn(dec)
		if err != nil {
			return nil, err
		}
		p := &PendingTurn{Key: n.Key, Index: n.Index, Inputs: t.Inputs, Started: n.Started, Calls: calls[n.id.Int64]}
		var tip sql.NullInt64
		err = s.r.QueryRowContext(ctx, `SELECT t.conv_id, coalesce(b.name, ''), b.tip_id FROM turns t
			LEFT JOIN branches b ON b.id = t.branch_id WHERE t.id = ?`, n.id.Int64).Scan(&p.ConvID, &p.Branch, &tip)
		if err != nil {
			return nil, fmt.Errorf("storage: pending turn %s: %w", n.Key, err)
		}
		p.Stale = p.Branch == "" || nullKey(tip) != n.Parent
		out = append(out, p)
	}
	return out, nil
}

// DiscardTurn marks a pending turn discarded (the "discard" answer to the recovery offer).
func (s *Store) DiscardTurn(ctx context.Context, key, reason string) error {
	id, err := parseTurnKey(key)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE turns SET state = 'discarded', abort_reason = ?, ended_at = ?
			WHERE id = ? AND state = 'pending'`, reason, fmtTime(now()), id)
		if err != nil {
			return fmt.Errorf("storage: discard turn %s: %w", key, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("storage: no pending turn %s: %w", key, ErrNotFound)
		}
		return nil
	})
}

// TurnOutline is TurnTree for drawing the tree: each turn's key, parent, index, state,
// previews, start time, abort reason and branch tips, without decoding or even reading
// its inputs and outputs (Inputs, Outputs, Score and Ended stay empty) or counting its
// calls (Calls stays 0). On a long conversation it costs a fraction of TurnTree.
func (s *Store) TurnOutline(ctx context.Context, convID string) ([]*TurnNode, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, parent_id, depth, state, explicit, input_preview, output_preview, started_at,
			abort_reason FROM turns WHERE conv_id = ?`, convID)
	if err != nil {
		return nil, fmt.Errorf("storage: turn outline of %q: %w", convID, err)
	}
	defer rows.Close()
	var out []*TurnNode
	states := map[string]string{} // three distinct states: one string each
	for rows.Next() {
		n := &TurnNode{}
		var parent sql.NullInt64
		var state sql.RawBytes
		var started string
		var reason sql.NullString
		if err := rows.Scan(&n.id, &parent, &n.Index, &state, &n.Explicit, &n.InputPreview, &n.OutputPreview, &started, &reason); err != nil {
			return nil, fmt.Errorf("storage: turn outline of %q: %w", convID, err)
		}
		st, ok := states[string(state)]
		if !ok {
			st = string(state)
			states[st] = st
		}
		n.Key, n.Parent, n.State = turnKey(n.id.Int64), nullKey(parent), st
		n.Started, n.Reason = parseTime(started), reason.String
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: turn outline of %q: %w", convID, err)
	}
	// In key order, so parents come first. The rows arrive in index order (by state,
	// then key): three sorted runs, which sorting here merges faster than SQLite's sort.
	slices.SortFunc(out, func(a, b *TurnNode) int { return cmp.Compare(a.id.Int64, b.id.Int64) })
	if err := s.markTips(ctx, convID, out); err != nil {
		return nil, err
	}
	return out, nil
}
