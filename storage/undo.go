package storage

import (
	"context"
	"database/sql"
	"fmt"
)

// Undo moves a branch's tip back up to steps turns (fewer if the branch is shorter) and
// pushes the undone turns on the branch's redo stack. Nothing is deleted. It returns the
// undone turn keys, most recent first; steps <= 0 undoes nothing (as dspy-session's undo).
func (s *Store) Undo(ctx context.Context, convID, branch string, steps int) ([]string, error) {
	var undone []string
	err := s.moveTip(ctx, convID, branch, "undone", func(tx *wtx, b *Branch) error {
		undone = undone[:0]
		var top int
		if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(pos), 0) FROM redo WHERE branch_id = ?", b.ID).Scan(&top); err != nil {
			return err
		}
		tip := b.tipID
		for i := 0; i < steps && tip.Valid; i++ {
			p, err := readPos(ctx, tx, tip.Int64)
			if err != nil {
				return err
			}
			top++
			if _, err := tx.ExecContext(ctx, "INSERT INTO redo(branch_id, pos, turn_id) VALUES (?, ?, ?)", b.ID, top, p.id); err != nil {
				return fmt.Errorf("storage: undo on %q: %w", branch, err)
			}
			undone = append(undone, turnKey(p.id))
			tip = sql.NullInt64{Int64: p.parent, Valid: p.parent != 0}
		}
		if len(undone) == 0 {
			return nil
		}
		return setTip(ctx, tx, b.ID, tip)
	})
	return undone, err
}

// Redo moves the tip forward again over up to steps undone turns; it returns the redone
// turn keys in order. A turn committed after an undo clears the redo stack.
func (s *Store) Redo(ctx context.Context, convID, branch string, steps int) ([]string, error) {
	var redone []string
	err := s.moveTip(ctx, convID, branch, "redone", func(tx *wtx, b *Branch) error {
		redone = redone[:0]
		tip := b.tipID
		for i := 0; i < steps; i++ {
			var pos int
			var id int64
			err := tx.QueryRowContext(ctx, "SELECT pos, turn_id FROM redo WHERE branch_id = ? ORDER BY pos DESC LIMIT 1", b.ID).Scan(&pos, &id)
			if err == sql.ErrNoRows {
				break
			}
			if err != nil {
				return fmt.Errorf("storage: redo on %q: %w", branch, err)
			}
			p, err := readPos(ctx, tx, id)
			if err != nil {
				return err
			}
			if p.parent != tip.Int64 || (p.parent == 0) != !tip.Valid {
				return fmt.Errorf("storage: redo on %q: turn %d does not continue the tip: %w", branch, id, ErrConflict)
			}
			if _, err := tx.ExecContext(ctx, "DELETE FROM redo WHERE branch_id = ? AND pos = ?", b.ID, pos); err != nil {
				return err
			}
			tip = sql.NullInt64{Int64: id, Valid: true}
			redone = append(redone, turnKey(id))
		}
		if len(redone) == 0 {
			return nil
		}
		return setTip(ctx, tx, b.ID, tip)
	})
	return redone, err
}

// moveTip runs move, a change of branch's tip, in one transaction, holding the branch's
// journal lock as a turn in flight holds it for its whole life: a branch with a turn in
// flight in a live process, this one included, is busy (ErrBusy, naming the turn and its
// process; nothing was what), and no turn begins on it until the tip has moved (its
// commit would fail, the branch having moved under it). A journal whose process died is
// kept first, as BeginTurn keeps it. move gets the branch as read in the transaction.
func (s *Store) moveTip(ctx context.Context, convID, branch, what string, move func(tx *wtx, b *Branch) error) error {
	br, err := branchByName(ctx, s.r, convID, branch)
	if err != nil {
		return err
	}
	if s.readOnly == "" { // else write says why nothing moves
		f, holder, err := s.lockRun(ctx, br.ID)
		if err != nil {
			return err
		}
		if f == nil {
			return fmt.Errorf("%w; nothing was %s", runBusyError(br.Name, holder), what)
		}
		defer f.Close()
		if err := s.keepLeft(ctx, f); err != nil {
			return err
		}
	}
	return s.write(ctx, func(tx *wtx) error {
		b, err := branchByName(ctx, tx, convID, branch)
		if err != nil {
			return err
		}
		if b.ID != br.ID {
			return fmt.Errorf("storage: branch %q of %q was replaced meanwhile; nothing was %s: %w", branch, convID, what, ErrConflict)
		}
		return move(tx, b)
	})
}

func setTip(ctx context.Context, tx *wtx, branchID int64, tip sql.NullInt64) error {
	_, err := tx.ExecContext(ctx, `UPDATE branches SET tip_id = ?, updated_at = ? WHERE id = ?`, tip, fmtTime(now()), branchID)
	if err != nil {
		return fmt.Errorf("storage: move branch tip: %w", err)
	}
	_, err = tx.ExecContext(ctx, `UPDATE conversations SET updated_at = ? WHERE id = (SELECT conv_id FROM branches WHERE id = ?)`,
		fmtTime(now()), branchID)
	return err
}
