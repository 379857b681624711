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
	Key    string       `json:"key"`
	Parent string       `json:"parent,omitempty"`
	Index  int          `json:"index"`
	Status trace.Status `json:"status"` // running, completed, failed, cancelled, interrupted
	// Error says why a turn that is not completed stopped.
	Error    string          `json:"error,omitempty"`
	Inputs   json.RawMessage `json:"inputs"`
	Outputs  json.RawMessage `json:"outputs,omitempty"`
	Score    *float64        `json:"score,omitempty"`
	Explicit bool            `json:"explicit,omitempty"`
	Calls    int             `json:"calls"`
	Started  time.Time       `json:"started"`
	Ended    time.Time       `json:"ended,omitempty"`
	Branches []string        `json:"branches,omitempty"` // branches whose tip this is (TurnTree only)
	// Owner is the process running the turn (running turns only). A running turn whose
	// owner is gone is reported as interrupted.
	Owner *Owner `json:"owner,omitempty"`
	// RetryOf is the failed or cancelled turn this one re-ran.
	RetryOf string `json:"retry_of,omitempty"`
	// InputPreview and OutputPreview are the first input and output value on one line,
	// cut to 300 characters: what a tree row shows, without decoding Inputs/Outputs.
	InputPreview  string `json:"input_preview,omitempty"`
	OutputPreview string `json:"output_preview,omitempty"`

	id, snapshot sql.NullInt64
	branchID     sql.NullInt64
	conv         string
}

const nodeColumns = `t.id, t.parent_id, t.depth, t.status, t.inputs, t.outputs, t.score, t.explicit,
	(SELECT count(*) FROM calls c WHERE c.turn_id = t.id), t.started_at, t.ended_at, t.error, t.snapshot_node, t.branch_id,
	t.input_preview, t.output_preview, t.conv_id, t.owner_pid, t.owner_host, t.owner_id, t.lease_until, t.retry_of`

func scanNode(sc interface{ Scan(...any) error }) (*TurnNode, error) {
	n := &TurnNode{}
	var parent, pid, retryOf sql.NullInt64
	var in string
	var out, ended, reason, host, oid, lease sql.NullString
	var started string
	if err := sc.Scan(&n.id, &parent, &n.Index, &n.Status, &in, &out, &n.Score, &n.Explicit, &n.Calls,
		&started, &ended, &reason, &n.snapshot, &n.branchID, &n.InputPreview, &n.OutputPreview, &n.conv,
		&pid, &host, &oid, &lease, &retryOf); err != nil {
		return nil, err
	}
	n.Key, n.Parent, n.RetryOf = turnKey(n.id.Int64), nullKey(parent), nullKey(retryOf)
	n.Inputs = json.RawMessage(in)
	if out.Valid {
		n.Outputs = json.RawMessage(out.String)
	}
	n.Started, n.Ended, n.Error = parseTime(started), parseTime(ended.String), reason.String
	n.setOwner(scanOwner(pid, host, oid, lease))
	return n, nil
}

// setOwner records a running turn's owner; a running turn whose owner is gone is
// interrupted (a crash or a kill left it), whatever the row says.
func (n *TurnNode) setOwner(o *Owner) {
	n.Owner = o
	if n.Status == trace.StatusRunning && (o == nil || !o.Alive) {
		n.Status = trace.StatusInterrupted
	}
}

// turnNode reads one turn, any status.
func turnNode(ctx context.Context, q querier, id int64) (*TurnNode, error) {
	nodes, err := queryNodes(ctx, q, "SELECT "+nodeColumns+" FROM turns t WHERE t.id = ?", id)
	if err != nil {
		return nil, fmt.Errorf("storage: turn %d: %w", id, err)
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("storage: turn %d: %w", id, ErrNotFound)
	}
	return nodes[0], nil
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
	imported, err := s.importDeadOf(ctx, b.ID)
	if err != nil {
		return nil, err
	}
	if imported { // the tip may have moved
		if b, err = branchByName(ctx, s.r, convID, branch); err != nil {
			return nil, err
		}
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
	runs, err := s.liveRuns(ctx)
	if err != nil {
		return nil, err
	}
	nodes, err := queryNodes(ctx, s.r, "SELECT "+nodeColumns+" FROM turns t WHERE t.conv_id = ? ORDER BY t.id", convID)
	if err != nil {
		return nil, fmt.Errorf("storage: turn tree of %q: %w", convID, err)
	}
	if len(runs) > 0 {
		nodes = overlay(nodes, runs, func(r *liveRun) bool { return r.h.Conv == convID })
		slices.SortFunc(nodes, func(a, b *TurnNode) int { return cmp.Compare(a.id.Int64, b.id.Int64) })
	}
	if err := s.markTips(ctx, convID, nodes); err != nil {
		return nil, err
	}
	return nodes, nil
}

// LoadBranch loads a branch's turns, root to tip, with their call trees and the exact
// requests reassembled from the de-duplicated message store. Turn.History is filled for
// explicit snapshots only; other snapshots derive from the path (ARCHITECTURE.md).
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
	if len(nodes) == 0 || nodes[0].Status == trace.StatusRunning || nodes[0].Status == trace.StatusInterrupted {
		ts, err := s.loadWithLive(ctx, []string{key}, []int64{id}, append(nodes, nil)[:1], LoadOptions{}) // in flight, maybe
		if err != nil {
			return nil, err
		}
		return ts[0], nil
	}
	ts, err := s.turnsOf(ctx, nodes, LoadOptions{})
	if err != nil {
		return nil, err
	}
	return ts[0], nil
}

// turnsOf reads the turns of nodes with their calls, a long restore read in parallel
// chunks (restoreChunks).
func (s *Store) turnsOf(ctx context.Context, nodes []*TurnNode, o LoadOptions) ([]*trace.Turn, error) {
	return s.turnsOn(ctx, s.r, nodes, o)
}

// turnsOn is turnsOf reading on q, unless there are enough turns to read them in chunks
// on the readers at once.
func (s *Store) turnsOn(ctx context.Context, q querier, nodes []*TurnNode, o LoadOptions) ([]*trace.Turn, error) {
	if k := s.restoreChunks(ctx, len(nodes), o); k > 1 {
		return s.turnsInChunks(ctx, nodes, o, k)
	}
	return s.turnsOfChunk(ctx, q, nodes, o)
}

// turnsOfChunk reads the turns of nodes with their calls, in a fixed number of queries
// on q.
func (s *Store) turnsOfChunk(ctx context.Context, q querier, nodes []*TurnNode, o LoadOptions) ([]*trace.Turn, error) {
	ids := make([]int64, len(nodes))
	var snaps []int64
	for i, n := range nodes {
		ids[i] = n.id.Int64
		if n.snapshot.Valid {
			snaps = append(snaps, n.snapshot.Int64)
		}
	}
	dec := newDecoder()
	calls, err := loadCalls(ctx, q, ids, o, dec)
	if err != nil {
		return nil, err
	}
	hist, err := loadLists(ctx, q, snaps, dec.historyEntry)
	if err != nil {
		return nil, err
	}
	var attempts map[int64][]*trace.Attempt
	if !o.ValuesOnly { // no restore or rendering reads them: a query fewer before a turn
		if attempts, err = loadAttempts(ctx, q, ids); err != nil {
			return nil, err
		}
	}
	out := make([]*trace.Turn, len(nodes))
	for i, n := range nodes {
		t, err := n.turn(dec)
		if err != nil {
			return nil, err
		}
		t.Calls = calls[n.id.Int64]
		t.Attempts = attempts[n.id.Int64]
		if n.snapshot.Valid {
			t.History = sig.History{Messages: hist[n.snapshot.Int64]}
		}
		out[i] = t
	}
	return out, nil
}

// turn converts a node to a trace.Turn without calls.
func (n *TurnNode) turn(dec *decoder) (*trace.Turn, error) {
	t := &trace.Turn{Index: n.Index, Score: n.Score, Explicit: n.Explicit, Started: n.Started, Ended: n.Ended,
		Status: n.Status, Error: n.Error}
	var err error
	if t.Inputs, err = dec.mapOf(sql.NullString{String: string(n.Inputs), Valid: true}); err != nil {
		return nil, fmt.Errorf("storage: inputs of turn %s are corrupt: %w", n.Key, err)
	}
	if t.Outputs, err = dec.mapOf(sql.NullString{String: string(n.Outputs), Valid: n.Outputs != nil}); err != nil {
		return nil, fmt.Errorf("storage: outputs of turn %s are corrupt: %w", n.Key, err)
	}
	return t, nil
}

// TurnOutline is TurnTree for drawing the tree: each turn's key, parent, index, status,
// error, previews, start time and branch tips, without decoding or even reading its
// inputs and outputs (Inputs, Outputs, Score and Ended stay empty) or counting its calls
// (Calls stays 0). On a long conversation it costs a fraction of TurnTree.
func (s *Store) TurnOutline(ctx context.Context, convID string) ([]*TurnNode, error) {
	runs, err := s.liveRuns(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, parent_id, depth, status, explicit, input_preview, output_preview, started_at,
			error, `+ownerColumns+`, retry_of FROM turns WHERE conv_id = ?`, convID)
	if err != nil {
		return nil, fmt.Errorf("storage: turn outline of %q: %w", convID, err)
	}
	defer rows.Close()
	var out []*TurnNode
	statuses := map[string]trace.Status{} // five distinct statuses: one string each
	for rows.Next() {
		n := &TurnNode{}
		var parent, pid, retryOf sql.NullInt64
		var status sql.RawBytes
		var started string
		var reason, host, oid, lease sql.NullString
		if err := rows.Scan(&n.id, &parent, &n.Index, &status, &n.Explicit, &n.InputPreview, &n.OutputPreview, &started, &reason,
			&pid, &host, &oid, &lease, &retryOf); err != nil {
			return nil, fmt.Errorf("storage: turn outline of %q: %w", convID, err)
		}
		st, ok := statuses[string(status)]
		if !ok {
			st = trace.Status(status)
			statuses[string(st)] = st
		}
		n.Key, n.Parent, n.Status, n.RetryOf = turnKey(n.id.Int64), nullKey(parent), st, nullKey(retryOf)
		n.Started, n.Error = parseTime(started), reason.String
		if st == trace.StatusRunning {
			n.setOwner(scanOwner(pid, host, oid, lease))
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: turn outline of %q: %w", convID, err)
	}
	out = overlay(out, runs, func(r *liveRun) bool { return r.h.Conv == convID })
	// In key order, so parents come first. The rows arrive in index order (by status,
	// then key): sorted runs, which sorting here merges faster than SQLite's sort.
	slices.SortFunc(out, func(a, b *TurnNode) int { return cmp.Compare(a.id.Int64, b.id.Int64) })
	if err := s.markTips(ctx, convID, out); err != nil {
		return nil, err
	}
	return out, nil
}
