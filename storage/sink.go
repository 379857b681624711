package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// BranchSink is the engine's trace.Sink bound to one branch of one conversation. Every
// method is its own transaction, so each finished inner call is durable the moment
// RecordCall returns, and a crash mid-turn leaves a 'pending' turn to resume or discard.
type BranchSink struct {
	s      *Store
	conv   string
	branch string

	mu     sync.Mutex
	resume string // turn key the next BeginTurn continues instead of starting a turn
}

var _ trace.Sink = (*BranchSink)(nil)

// Sink returns the trace.Sink writing turns to branch of conversation convID.
func (s *Store) Sink(convID, branch string) *BranchSink {
	return &BranchSink{s: s, conv: convID, branch: branch}
}

// Resume makes the next BeginTurn continue the pending turn key (found with PendingTurns)
// instead of starting a new one, so the engine resumes through its normal path; pair it
// with ReplayLM so calls already answered are not paid for again.
func (b *BranchSink) Resume(ctx context.Context, key string) error {
	pt, err := b.s.PendingTurn(ctx, key)
	if err != nil {
		return err
	}
	if pt.ConvID != b.conv || pt.Branch != b.branch {
		return fmt.Errorf("storage: pending turn %s belongs to %s/%s, not %s/%s: %w", key, pt.ConvID, pt.Branch, b.conv, b.branch, ErrInvalid)
	}
	b.mu.Lock()
	b.resume = key
	b.mu.Unlock()
	return nil
}

// BeginTurn records an in-flight turn after the branch tip. Any other pending turn on the
// branch is discarded (new input supersedes an interrupted turn, as in HPD-Agent).
func (b *BranchSink) BeginTurn(ctx context.Context, inputs *sig.Map) (string, error) {
	in, err := jsonOf(inputs)
	if err != nil {
		return "", fmt.Errorf("storage: turn inputs: %w", err)
	}
	if !in.Valid {
		in = sql.NullString{String: "{}", Valid: true}
	}
	b.mu.Lock()
	resume := b.resume
	b.resume = ""
	b.mu.Unlock()
	var key string
	err = b.s.write(ctx, func(tx *sql.Tx) error {
		if err := requireOpen(ctx, tx, b.conv); err != nil {
			return err
		}
		br, err := branchByName(ctx, tx, b.conv, b.branch)
		if err != nil {
			return err
		}
		if resume != "" {
			id, err := parseTurnKey(resume)
			if err != nil {
				return err
			}
			res, err := tx.ExecContext(ctx, `UPDATE turns SET inputs = ?, input_preview = ? WHERE id = ? AND state = 'pending' AND branch_id = ?`,
				in.String, preview(in), id, br.ID)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return fmt.Errorf("storage: turn %s is no longer pending on %q: %w", resume, b.branch, ErrConflict)
			}
			key = resume
			return nil
		}
		// conv_id and state lead the turns_by_conv index: the pending turns are found
		// without scanning every turn in the database.
		if _, err := tx.ExecContext(ctx, `UPDATE turns SET state = 'discarded', abort_reason = 'superseded by a new turn',
			ended_at = ? WHERE conv_id = ? AND state = 'pending' AND branch_id = ?`, fmtTime(now()), b.conv, br.ID); err != nil {
			return err
		}
		id, err := insertTurn(ctx, tx, b.conv, br, in.String, "pending")
		key = turnKey(id)
		return err
	})
	return key, err
}

func requireOpen(ctx context.Context, tx *sql.Tx, convID string) error {
	var st Status
	err := tx.QueryRowContext(ctx, "SELECT status FROM conversations WHERE id = ?", convID).Scan(&st)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("storage: conversation %q: %w", convID, ErrNotFound)
	}
	if err != nil {
		return err
	}
	if st != StatusInProgress {
		return fmt.Errorf("storage: conversation %q is %s and takes no new turns: %w", convID, st, ErrClosedSession)
	}
	return nil
}

// insertTurn adds a turn after br's tip.
func insertTurn(ctx context.Context, tx *sql.Tx, convID string, br *Branch, inputs, state string) (int64, error) {
	var parent, jump sql.NullInt64
	depth, jumpDepth := 0, 0
	if br.tipID.Valid {
		p, err := readPos(ctx, tx, br.tipID.Int64)
		if err != nil {
			return 0, err
		}
		j, jd, err := jumpFor(ctx, tx, p)
		if err != nil {
			return 0, err
		}
		parent = sql.NullInt64{Int64: p.id, Valid: true}
		jump = sql.NullInt64{Int64: j, Valid: true}
		depth, jumpDepth = p.depth+1, jd
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO turns(conv_id, parent_id, jump_id, jump_depth, depth, branch_id, state, inputs,
			input_preview, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, convID, parent, jump, jumpDepth, depth, br.ID, state, inputs,
		preview(sql.NullString{String: inputs, Valid: true}), fmtTime(now()))
	if err != nil {
		return 0, fmt.Errorf("storage: begin turn on %q: %w", br.Name, err)
	}
	return res.LastInsertId()
}

// pendingTurn checks that key names a pending turn of this sink's conversation.
func (b *BranchSink) pendingTurn(ctx context.Context, tx *sql.Tx, key string) (int64, error) {
	id, err := parseTurnKey(key)
	if err != nil {
		return 0, err
	}
	p, err := readPos(ctx, tx, id)
	if err != nil {
		return 0, err
	}
	if p.conv != b.conv {
		return 0, fmt.Errorf("storage: turn %s is not in conversation %q: %w", key, b.conv, ErrInvalid)
	}
	if p.state != "pending" {
		return 0, fmt.Errorf("storage: turn %s is %s, not in flight: %w", key, p.state, ErrConflict)
	}
	return id, nil
}

// RecordCall stores one finished inner call (with any children attached to it that were
// not recorded yet) in its own transaction. Recording a call id again replaces it, which
// is what a resumed turn does with the calls it replays.
func (b *BranchSink) RecordCall(ctx context.Context, key, parentCallID string, c *trace.Call) error {
	if c == nil {
		return fmt.Errorf("storage: record call: nil call: %w", ErrInvalid)
	}
	return b.s.write(ctx, func(tx *sql.Tx) error {
		id, err := b.pendingTurn(ctx, tx, key)
		if err != nil {
			return err
		}
		return insertCall(ctx, tx, id, parentCallID, c, true)
	})
}

// CommitTurn stores the finished turn, marks it committed and moves the branch tip to it,
// clearing the branch's redo stack.
func (b *BranchSink) CommitTurn(ctx context.Context, key string, t *trace.Turn) error {
	if t == nil {
		return fmt.Errorf("storage: commit turn %s: nil turn: %w", key, ErrInvalid)
	}
	return b.s.write(ctx, func(tx *sql.Tx) error {
		id, err := b.pendingTurn(ctx, tx, key)
		if err != nil {
			return err
		}
		br, err := branchByName(ctx, tx, b.conv, b.branch)
		if err != nil {
			return err
		}
		return commitTurn(ctx, tx, br, id, t)
	})
}

func commitTurn(ctx context.Context, tx *sql.Tx, br *Branch, id int64, t *trace.Turn) error {
	p, err := readPos(ctx, tx, id)
	if err != nil {
		return err
	}
	if p.parent != br.tipID.Int64 {
		return fmt.Errorf("storage: branch %q moved while turn %d was in flight (tip is now %s): %w",
			br.Name, id, nullKey(br.tipID), ErrConflict)
	}
	for _, c := range t.Calls {
		if err := insertCallIfMissing(ctx, tx, id, "", c); err != nil {
			return err
		}
	}
	out, err := jsonOf(t.Outputs)
	if err != nil {
		return fmt.Errorf("storage: turn outputs: %w", err)
	}
	var snap sql.NullInt64
	if t.Explicit {
		if snap, _, err = putList(ctx, tx, historyItems(t.History)); err != nil {
			return err
		}
	}
	ended := t.Ended
	if ended.IsZero() {
		ended = now()
	}
	q := `UPDATE turns SET state = 'committed', outputs = ?, output_preview = ?, score = ?, snapshot_node = ?, explicit = ?, ended_at = ?`
	args := []any{out, preview(out), t.Score, snap, t.Explicit, fmtTime(ended)}
	if t.Inputs != nil {
		in, err := jsonOf(t.Inputs)
		if err != nil {
			return fmt.Errorf("storage: turn inputs: %w", err)
		}
		q += ", inputs = ?, input_preview = ?"
		args = append(args, in.String, preview(in))
	}
	if !t.Started.IsZero() {
		q += ", started_at = ?"
		args = append(args, fmtTime(t.Started))
	}
	if _, err := tx.ExecContext(ctx, q+" WHERE id = ?", append(args, id)...); err != nil {
		return fmt.Errorf("storage: commit turn %d: %w", id, err)
	}
	// The running usage totals: this turn's calls (all stored now) plus its parent's
	// totals, final because a committed turn's calls and its parent never change.
	if _, err := tx.ExecContext(ctx, `UPDATE turns SET (cum_prompt_tokens, cum_completion_tokens, cum_cached_tokens, cum_total_tokens, cum_estimated) =
		(SELECT coalesce(sum(c.prompt_tokens), 0) + coalesce(p.cum_prompt_tokens, 0),
			coalesce(sum(c.completion_tokens), 0) + coalesce(p.cum_completion_tokens, 0),
			coalesce(sum(c.cached_tokens), 0) + coalesce(p.cum_cached_tokens, 0),
			coalesce(sum(c.total_tokens), 0) + coalesce(p.cum_total_tokens, 0),
			coalesce(sum(c.usage_estimated), 0) + coalesce(p.cum_estimated, 0)
		FROM (SELECT 1) LEFT JOIN calls c ON c.turn_id = ?1 LEFT JOIN turns p ON p.id = ?2)
		WHERE id = ?1`, id, p.parent); err != nil {
		return fmt.Errorf("storage: usage totals of turn %d: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM redo WHERE branch_id = ?", br.ID); err != nil {
		return err
	}
	return setTip(ctx, tx, br.ID, sql.NullInt64{Int64: id, Valid: true})
}

// AbortTurn marks the in-flight turn discarded; its recorded calls stay for diagnosis but
// it is on no branch.
func (b *BranchSink) AbortTurn(ctx context.Context, key, reason string) error {
	return b.s.write(ctx, func(tx *sql.Tx) error {
		id, err := b.pendingTurn(ctx, tx, key)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "UPDATE turns SET state = 'discarded', abort_reason = ?, ended_at = ? WHERE id = ?",
			reason, fmtTime(now()), id)
		return err
	})
}

// RecordAttempt records an attempt of a retrying step inside the turn key.
func (b *BranchSink) RecordAttempt(ctx context.Context, key, step string, score float64, details any) (*Attempt, bool, error) {
	return b.s.RecordAttempt(ctx, b.conv, key, step, score, details)
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
	err = s.write(ctx, func(tx *sql.Tx) error {
		if err := requireOpen(ctx, tx, convID); err != nil {
			return err
		}
		br, err := branchByName(ctx, tx, convID, branch)
		if err != nil {
			return err
		}
		id, err := insertTurn(ctx, tx, convID, br, in.String, "pending")
		if err != nil {
			return err
		}
		key = turnKey(id)
		return commitTurn(ctx, tx, br, id, t)
	})
	return key, err
}
