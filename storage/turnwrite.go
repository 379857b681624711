package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/sessionbench/sessionbench/core/trace"
)

// Storing a turn that has ended: a committed one (CommitTurn, AppendTurn) with its calls,
// attempts and the branch tip moved to it.

func requireOpen(ctx context.Context, q querier, convID string) error {
	var st trace.Status
	err := q.QueryRowContext(ctx, "SELECT status FROM conversations WHERE id = ?", convID).Scan(&st)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("storage: conversation %q: %w", convID, ErrNotFound)
	}
	if err != nil {
		return err
	}
	return takesTurns(convID, st)
}

// takesTurns says why a conversation of status st takes no new turns, if it does not.
func takesTurns(convID string, st trace.Status) error {
	if st != trace.StatusInProgress {
		return fmt.Errorf("storage: conversation %q is %s and takes no new turns: %w", convID, st, ErrClosedSession)
	}
	return nil
}

// insertTurn adds a running turn after br's tip, with the next id of the counter; owner
// is nil for a turn committed in the same transaction (imports), retryOf 0 unless it
// retries a failed or cancelled turn.
func insertTurn(ctx context.Context, tx *wtx, convID string, br *Branch, inputs string, o *Owner, retryOf int64) (int64, error) {
	id, err := reserveIDs(ctx, tx, 1)
	if err != nil {
		return 0, err
	}
	return id, insertTurnAt(ctx, tx, turnRow{id: id, parent: br.tipID.Int64, branchID: br.ID, retryOf: retryOf, conv: convID,
		inputs: inputs, started: now(), owner: o})
}

// commitTurn completes the running turn at p (its id, parent and conversation: what
// insertTurn was given, or readPos) as t, at the tip of branch br, in tx, when the tip is
// still br.tipID (advanceTip).
func commitTurn(ctx context.Context, wc *writeCache, tx *wtx, br *Branch, p turnPos, t *trace.Turn) error {
	id := p.id
	if p.parent != br.tipID.Int64 {
		return fmt.Errorf("storage: branch %q moved while turn %d was in flight (tip is now %s): %w",
			br.Name, id, nullKey(br.tipID), ErrConflict)
	}
	for _, c := range t.Calls {
		if err := insertCallIfMissing(ctx, wc, tx, id, "", c); err != nil {
			return err
		}
	}
	if err := insertAttempts(ctx, tx, p.conv, id, t.Attempts, true); err != nil {
		return err
	}
	out, err := jsonOf(t.Outputs)
	if err != nil {
		return fmt.Errorf("storage: turn outputs: %w", err)
	}
	var snap sql.NullInt64
	if t.Explicit {
		l, err := putList(ctx, wc, tx, "", historyItems(wc, "", t.History)) // one path: no run
		if err != nil {
			return err
		}
		snap = l.head
	}
	ended := t.Ended
	if ended.IsZero() {
		ended = now()
	}
	q := `UPDATE turns SET status = 'completed', error = NULL, ` + clearOwner + `, outputs = ?, output_preview = ?, score = ?,
		snapshot_node = ?, explicit = ?, ended_at = ?`
	args := []any{out, preview(out), t.Score, snap, t.Explicit, fmtTime(ended)}
	if q, args, err = setInputs(q, args, t); err != nil {
		return err
	}
	if !t.Started.IsZero() {
		q += ", started_at = ?"
		args = append(args, fmtTime(t.Started))
	}
	// The running usage totals, in the same statement: this turn's calls (all stored
	// now) plus its parent's totals, final because a committed turn's calls and its
	// parent never change.
	q += `, (cum_prompt_tokens, cum_completion_tokens, cum_cached_tokens, cum_total_tokens, cum_estimated) =
		(SELECT coalesce(sum(c.prompt_tokens), 0) + coalesce(p.cum_prompt_tokens, 0),
			coalesce(sum(c.completion_tokens), 0) + coalesce(p.cum_completion_tokens, 0),
			coalesce(sum(c.cached_tokens), 0) + coalesce(p.cum_cached_tokens, 0),
			coalesce(sum(c.total_tokens), 0) + coalesce(p.cum_total_tokens, 0),
			coalesce(sum(c.usage_estimated), 0) + coalesce(p.cum_estimated, 0)
		FROM (SELECT 1) LEFT JOIN calls c ON c.turn_id = ? LEFT JOIN turns p ON p.id = ?)`
	if _, err := tx.ExecContext(ctx, q+" WHERE id = ?", append(args, id, p.parent, id)...); err != nil {
		return fmt.Errorf("storage: commit turn %d: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM redo WHERE branch_id = ?", br.ID); err != nil {
		return err
	}
	return advanceTip(ctx, tx, br, id)
}

// AppendTurn stores a complete turn (with its calls) at the tip of branch in one
// transaction, for imports and tools that have the whole turn at once. It returns the
// turn key.
func (s *Store) AppendTurn(ctx context.Context, convID, branch string, t *trace.Turn) (string, error) {
	if t == nil {
		return "", fmt.Errorf("storage: append turn: nil turn: %w", ErrInvalid)
	}
	in, err := jsonOf(t.Inputs)
	if err != nil {
		return "", fmt.Errorf("storage: turn inputs: %w", err)
	}
	if !in.Valid {
		in = sql.NullString{String: "{}", Valid: true}
	}
	var key string
	err = s.moveTip(ctx, convID, branch, "stored", func(tx *wtx, br *Branch) error {
		if err := requireOpen(ctx, tx, convID); err != nil {
			return err
		}
		id, err := insertTurn(ctx, tx, convID, br, in.String, nil, 0)
		if err != nil {
			return err
		}
		key = turnKey(id)
		return commitTurn(ctx, s.wc, tx, br, turnPos{id: id, parent: br.tipID.Int64, conv: convID}, t)
	})
	return key, err
}

// setInputs adds t's inputs, when it has them, to an UPDATE of its turn row.
func setInputs(q string, args []any, t *trace.Turn) (string, []any, error) {
	if t.Inputs == nil {
		return q, args, nil
	}
	in, err := jsonOf(t.Inputs)
	if err != nil {
		return q, args, fmt.Errorf("storage: turn inputs: %w", err)
	}
	return q + ", inputs = ?, input_preview = ?", append(args, in.String, preview(in)), nil
}
