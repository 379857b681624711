package storage

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// PendingTurn is a turn that has not ended: running in a live process, or interrupted
// (a signal, crash or kill stopped its process), with its inputs and the inner calls
// that finished before it stopped.
type PendingTurn struct {
	Key     string        `json:"key"`
	ConvID  string        `json:"conversation"`
	Branch  string        `json:"branch"` // "" if the branch was deleted since
	Index   int           `json:"index"`
	Status  trace.Status  `json:"status"` // running (Owner alive) or interrupted
	Owner   *Owner        `json:"owner,omitempty"`
	Inputs  *sig.Map      `json:"inputs"`
	Started time.Time     `json:"started"`
	Calls   []*trace.Call `json:"calls"`
	// Stale is set when the branch tip moved since the turn began, so it can only be
	// discarded (committing it would fail).
	Stale bool `json:"stale"`
}

// Resumable reports whether the turn may be resumed now: its owner is gone and it still
// follows its branch's tip. Only such turns are offered for resuming.
func (p *PendingTurn) Resumable() bool { return p.Status == trace.StatusInterrupted && !p.Stale }

// pendingTurnsQuery reads the turns that have not ended, in every conversation. Its
// WHERE is the partial index turns_unended's (schema version 15), word for word: SQLite
// uses a partial index only for a query whose terms imply the index's, and a scan of the
// whole turns table would cost `sessionbench run` and the workbench's start a
// millisecond per thousand turns stored.
const pendingTurnsQuery = "SELECT " + nodeColumns + " FROM turns t WHERE t.status IN ('running', 'interrupted') ORDER BY t.id"

// PendingTurns lists every turn that has not ended in the database, oldest first:
// the running ones (with their live owner) and the interrupted ones to resume or discard.
func (s *Store) PendingTurns(ctx context.Context) ([]*PendingTurn, error) {
	runs, err := s.liveRuns(ctx)
	if err != nil {
		return nil, err
	}
	nodes, err := queryNodes(ctx, s.r, pendingTurnsQuery)
	if err != nil {
		return nil, fmt.Errorf("storage: pending turns: %w", err)
	}
	nodes = overlay(nodes, runs, func(*liveRun) bool { return true })
	slices.SortFunc(nodes, func(a, b *TurnNode) int { return cmp.Compare(a.id.Int64, b.id.Int64) })
	return s.pendingOf(ctx, nodes, runs)
}

// PendingTurn loads one turn that has not ended.
func (s *Store) PendingTurn(ctx context.Context, key string) (*PendingTurn, error) {
	id, err := parseTurnKey(key)
	if err != nil {
		return nil, err
	}
	runs, err := s.liveRuns(ctx)
	if err != nil {
		return nil, err
	}
	nodes, err := queryNodes(ctx, s.r, "SELECT "+nodeColumns+" FROM turns t WHERE t.id = ? AND t.status IN ('running', 'interrupted')", id)
	if err != nil {
		return nil, fmt.Errorf("storage: pending turn %s: %w", key, err)
	}
	nodes = overlay(nodes, runs, func(r *liveRun) bool { return r.h.ID == id })
	if len(nodes) == 0 {
		return nil, fmt.Errorf("storage: no pending turn %s: %w", key, ErrNotFound)
	}
	p, err := s.pendingOf(ctx, nodes, runs)
	if err != nil {
		return nil, err
	}
	return p[0], nil
}

func (s *Store) pendingOf(ctx context.Context, nodes []*TurnNode, runs []*liveRun) ([]*PendingTurn, error) {
	ids := make([]int64, len(nodes))
	for i, n := range nodes {
		ids[i] = n.id.Int64
	}
	dec := newDecoder()
	calls, err := loadCalls(ctx, s.r, ids, LoadOptions{}, dec)
	if err != nil {
		return nil, err
	}
	for _, r := range runs { // a turn in flight has its calls in its journal
		if _, ok := calls[r.h.ID]; ok || slices.Contains(ids, r.h.ID) {
			if calls[r.h.ID], err = r.callTree(ctx, s.r); err != nil {
				return nil, err
			}
		}
	}
	out := make([]*PendingTurn, 0, len(nodes))
	for _, n := range nodes {
		t, err := n.turn(dec)
		if err != nil {
			return nil, err
		}
		p := &PendingTurn{Key: n.Key, ConvID: n.conv, Index: n.Index, Status: n.Status, Owner: n.Owner, Inputs: t.Inputs,
			Started: n.Started, Calls: calls[n.id.Int64]}
		var tip sql.NullInt64
		err = s.r.QueryRowContext(ctx, `SELECT coalesce(b.name, ''), b.tip_id FROM branches b WHERE b.id = ?`, n.branchID.Int64).Scan(&p.Branch, &tip)
		if errors.Is(err, sql.ErrNoRows) {
			err = nil
		}
		if err != nil {
			return nil, fmt.Errorf("storage: pending turn %s: %w", n.Key, err)
		}
		p.Stale = p.Branch == "" || nullKey(tip) != n.Parent
		out = append(out, p)
	}
	return out, nil
}

// DiscardTurn gives up an interrupted turn (the "discard" answer to the resume offer):
// it is kept, cancelled with reason, and no longer offered. A turn still running in a
// live process is refused (ErrBusy).
func (s *Store) DiscardTurn(ctx context.Context, key, reason string) error {
	id, err := parseTurnKey(key)
	if err != nil {
		return err
	}
	if r, err := s.liveRun(ctx, id); err != nil || r != nil {
		if err != nil {
			return err
		}
		return fmt.Errorf("storage: turn %s is running in %s; stop that process first: %w", key, r.owner(), ErrBusy)
	}
	return s.write(ctx, func(tx *wtx) error {
		n, err := turnNode(ctx, tx, id)
		if err != nil {
			return err
		}
		switch {
		case n.Status == trace.StatusRunning:
			return fmt.Errorf("storage: turn %s is running in %s; stop that process first: %w", key, n.Owner, ErrBusy)
		case n.Status != trace.StatusInterrupted:
			return fmt.Errorf("storage: no pending turn %s (it is %s): %w", key, n.Status, ErrNotFound)
		}
		_, err = tx.ExecContext(ctx, `UPDATE turns SET status = 'cancelled', error = ?, ended_at = ?, `+clearOwner+` WHERE id = ?`,
			reason, fmtTime(now()), id)
		if err != nil {
			return fmt.Errorf("storage: discard turn %s: %w", key, err)
		}
		return nil
	})
}

// DeleteTurn removes a turn that did not complete (failed, cancelled or interrupted)
// with its calls and attempts: the user's "delete" of a turn kept beside a branch.
// Completed turns are the branches' history and go only with their branches.
func (s *Store) DeleteTurn(ctx context.Context, key string) error {
	id, err := parseTurnKey(key)
	if err != nil {
		return err
	}
	if r, err := s.liveRun(ctx, id); err != nil || r != nil {
		if err != nil {
			return err
		}
		return fmt.Errorf("storage: turn %s is running in %s; stop that process first: %w", key, r.owner(), ErrBusy)
	}
	return s.write(ctx, func(tx *wtx) error {
		n, err := turnNode(ctx, tx, id)
		if err != nil {
			return err
		}
		switch n.Status {
		case trace.StatusCompleted:
			return fmt.Errorf("storage: turn %s is completed: it is part of its branches (undo or delete a branch instead): %w", key, ErrInvalid)
		case trace.StatusRunning:
			return fmt.Errorf("storage: turn %s is running in %s: %w", key, n.Owner, ErrBusy)
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM turns WHERE id = ?", id); err != nil {
			return fmt.Errorf("storage: delete turn %s: %w", key, err)
		}
		if err := moveBestAttempt(ctx, tx, n.conv); err != nil {
			return err
		}
		return sweepContent(ctx, tx)
	})
}

// KeptTurns lists the turns begun on branch that did not complete (running, failed,
// cancelled, interrupted), oldest first: the turns kept beside it, out of its history.
func (s *Store) KeptTurns(ctx context.Context, convID, branch string) ([]*TurnNode, error) {
	b, err := branchByName(ctx, s.r, convID, branch)
	if err != nil {
		return nil, err
	}
	// The statuses but completed (the column's CHECK lists them), spelled out so the
	// (conv_id, status) index finds them instead of scanning every completed turn.
	runs, err := s.liveRuns(ctx)
	if err != nil {
		return nil, err
	}
	nodes, err := queryNodes(ctx, s.r, "SELECT "+nodeColumns+` FROM turns t WHERE t.conv_id = ?
		AND t.status IN ('running', 'failed', 'cancelled', 'interrupted') AND t.branch_id = ? ORDER BY t.id`, convID, b.ID)
	if err != nil {
		return nil, fmt.Errorf("storage: turns kept beside %q: %w", branch, err)
	}
	return overlay(nodes, runs, func(r *liveRun) bool { return r.h.BranchID == b.ID }), nil
}

// TurnInfo is a turn (any status) with where it is: its conversation and the branch it
// was begun on ("" if that branch was deleted since).
type TurnInfo struct {
	TurnNode
	Conv   string `json:"conversation"`
	Branch string `json:"branch"`
}

// TurnInfo reads turn key and its place.
func (s *Store) TurnInfo(ctx context.Context, key string) (*TurnInfo, error) {
	id, err := parseTurnKey(key)
	if err != nil {
		return nil, err
	}
	n, err := turnNode(ctx, s.r, id)
	if errors.Is(err, ErrNotFound) || err == nil && (n.Status == trace.StatusRunning || n.Status == trace.StatusInterrupted) {
		// in flight, maybe (an interrupted turn taken up in place keeps its row)
		switch r, lerr := s.liveRun(ctx, id); {
		case r != nil:
			var stored []*TurnNode
			if n != nil {
				stored = append(stored, n) // its row: RetryOf stays
			}
			n, err = overlay(stored, []*liveRun{r}, func(*liveRun) bool { return true })[0], nil
		case lerr == nil:
			n, err = turnNode(ctx, s.r, id) // its journal, let go, may have been imported just now
		}
	}
	if err != nil {
		return nil, err
	}
	ti := &TurnInfo{TurnNode: *n, Conv: n.conv}
	if n.branchID.Valid {
		err := s.r.QueryRowContext(ctx, "SELECT name FROM branches WHERE id = ?", n.branchID.Int64).Scan(&ti.Branch)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("storage: branch of turn %s: %w", key, err)
		}
	}
	return ti, nil
}
