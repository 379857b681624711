package storage

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/sessionbench/sessionbench/core/redact"
	"github.com/sessionbench/sessionbench/core/trace"
)

// How a BranchSink's turn ends in the database: committed (CommitTurn's transaction,
// at once or beside the caller: commitlater.go), or kept beside the branch (AbortTurn, a
// commit that failed).

// commitNow is CommitTurn's transaction, e the turn row's end when the caller has it.
func (b *BranchSink) commitNow(ctx context.Context, key string, r *run, t *trace.Turn, e *turnEnd) error {
	err := b.s.write(ctx, func(tx *wtx) error { return b.commit(ctx, tx, r, t, e) })
	if err != nil {
		return b.commitFailed(ctx, key, r, t, err)
	}
	b.committed(r)
	b.end(key)
	return nil
}

// committed makes turn r the one this sink's next turn journals its calls against.
func (b *BranchSink) committed(r *run) {
	byPath := map[string]*trace.Call{}
	for _, rc := range r.recorded() {
		rc.Call.Walk(func(c *trace.Call, _ int) {
			if c.Messages.Len() > 0 { // a child inside its parent's record may have lost its request
				byPath[c.Path] = c
			}
		})
	}
	b.mu.Lock()
	b.prev, b.prevCalls = r.h.ID, byPath
	b.mu.Unlock()
}

// commit is CommitTurn's transaction: it stores the turn r ran, ended as t (its row's
// end e, when given), at the tip of the branch.
func (b *BranchSink) commit(ctx context.Context, tx *wtx, r *run, t *trace.Turn, e *turnEnd) error {
	// the branch as the turn found it (its header): commitTurn moves its tip only if it
	// is still there
	br := &Branch{ID: r.h.BranchID, ConvID: b.conv, Name: b.branch, tipID: sql.NullInt64{Int64: r.h.Parent, Valid: r.h.Parent != 0}}
	if !r.h.InPlace {
		return commitNewTurn(ctx, b.s.wc, tx, br, r.h, r.recorded(), t, e)
	}
	// taken up where it was (an interrupted turn resumed): its row is there already
	if err := storeRun(ctx, b.s.wc, tx, r.h, r.recorded(), nil); err != nil {
		return err
	}
	p, err := readPos(ctx, tx, r.h.ID)
	if err != nil {
		return err
	}
	return commitTurn(ctx, b.s.wc, tx, br, p, t)
}

// commitFailed ends turn key, whose commit failed with err, so that the turn does not
// stay in flight (its journal locked, the branch busy until the process ends): it is
// kept beside the branch as a failed turn carrying err, with its calls (a branch that
// moved while the turn ran, ErrConflict, is the usual cause); when that cannot be
// written either, its journal is let go, and the next reader keeps the turn as
// interrupted, resumable. The error says which, wrapping err, and trace.ErrInterrupted
// in the second case. The engine only learns that the turn did not complete.
func (b *BranchSink) commitFailed(ctx context.Context, key string, r *run, t *trace.Turn, err error) error {
	failed := *t
	failed.Status, failed.Error = trace.StatusFailed, err.Error()
	if kerr := b.keep(context.WithoutCancel(ctx), key, r, &failed, trace.StatusFailed); kerr != nil {
		why := "for the same reason"
		if kerr.Error() != err.Error() {
			why = "(" + kerr.Error() + ")"
		}
		b.mu.Lock()
		ended := r.committed
		b.mu.Unlock()
		if ended { // its end record is in the journal (commitlater.go)
			return fmt.Errorf("%w; turn %s could not be kept as failed either %s: its journal is let go, and the next reader of %s commits it onto branch %q, where it was returned (or keeps it as interrupted when the branch has moved)",
				err, key, why, b.s.path, b.branch)
		}
		return fmt.Errorf("%w; turn %s could not be kept as failed either %s: its journal is let go, and the next reader of %s keeps it as %w",
			err, key, why, b.s.path, trace.ErrInterrupted)
	}
	return fmt.Errorf("%w; turn %s is kept beside branch %q as failed, with its calls", err, key, b.branch)
}

// keep stores turn key (r) beside the branch with status st, out of its path, in one
// transaction, and lets the branch go; when that fails, the journal is let go with the
// turn in it (as a dying process would: the next reader keeps it as interrupted).
func (b *BranchSink) keep(ctx context.Context, key string, r *run, t *trace.Turn, st trace.Status) error {
	err := b.s.write(ctx, func(tx *wtx) error {
		if err := storeRun(ctx, b.s.wc, tx, r.h, r.recorded(), nil); err != nil {
			return err
		}
		for _, c := range t.Calls {
			if err := insertCallIfMissing(ctx, b.s.wc, tx, r.h.ID, "", c); err != nil {
				return err
			}
		}
		if err := insertAttempts(ctx, tx, b.conv, r.h.ID, t.Attempts, false); err != nil {
			return err
		}
		ended := t.Ended
		if ended.IsZero() {
			ended = now()
		}
		q := `UPDATE turns SET status = ?, error = ?, ended_at = ?, ` + clearOwner
		args := []any{st, redact.String(t.Error), fmtTime(ended)}
		q, args, err := setInputs(q, args, t)
		if err != nil {
			return err
		}
		if t.Outputs != nil && t.Outputs.Len() > 0 { // a turn whose commit failed had them
			out, err := jsonOf(t.Outputs)
			if err != nil {
				return fmt.Errorf("storage: turn outputs: %w", err)
			}
			q += ", outputs = ?, output_preview = ?"
			args = append(args, out, preview(out))
		}
		_, err = tx.ExecContext(ctx, q+" WHERE id = ?", append(args, r.h.ID)...)
		return err
	})
	if err != nil {
		// Let the branch go: the journal keeps the turn, imported as interrupted.
		b.abandon(key)
		return err
	}
	b.end(key)
	return nil
}
