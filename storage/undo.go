package storage

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
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

// moveTip runs move, a change of branch's tip, in one transaction that holds the branch's
// journal lock, as a turn in flight holds it for its whole life: a branch with a turn in
// flight in a live process, this one included, is busy (ErrBusy, naming the turn and its
// process; nothing was what), and no turn begins on it until the tip has moved (its
// commit would fail, the branch having moved under it). The lock is taken inside the
// transaction, where the branch is read anyway, without waiting (a transaction never
// waits for a journal, whose holder may be waiting for the database): a holder that has
// written no turn yet is waited for between tries. A journal whose process died is kept,
// as interrupted, in the same transaction.
func (s *Store) moveTip(ctx context.Context, convID, branch, what string, move func(tx *wtx, b *Branch) error) error {
	var j *os.File     // the branch's journal, locked
	var jb, size int64 // its branch, and its size when locked
	defer func() {
		if j != nil {
			s.leaveOpen(jb, j)
		}
	}()
	var w waitHolder
	for {
		var left, held bool
		var holder *runHeader
		err := s.write(ctx, func(tx *wtx) error {
			b, err := branchByName(ctx, tx, convID, branch)
			if err != nil {
				return err
			}
			if j != nil && jb != b.ID { // replaced since an earlier try
				s.leaveOpen(jb, j)
				j = nil
			}
			if j == nil {
				if j, size, holder, err = s.tryJournal(b.ID); j == nil {
					held = err == nil
					return cmp.Or(err, errHeld)
				}
				jb = b.ID
			}
			if left, err = importLeft(ctx, s.wc, tx, j, size); err != nil {
				return err
			}
			return move(tx, b)
		})
		switch {
		case held && (holder == nil || s.endedHolder(ctx, holder)):
			again, werr := w.again(ctx)
			if werr != nil {
				return werr
			}
			if again {
				continue
			}
			fallthrough
		case held:
			return fmt.Errorf("%w; nothing was %s", runBusyError(branch, holder), what)
		case err == nil && left:
			return j.Truncate(0) // its turn is stored
		}
		return err
	}
}

// tryJournal is tryRun through the journal file the store's last turn or tip move on the
// branch left open, when it is still the journal (opening and closing the file cost more
// than locking it), with the journal's size. It waits for this process's retiring of the
// journal first.
func (s *Store) tryJournal(branchID int64) (*os.File, int64, *runHeader, error) {
	s.awaitRetired(branchID)
	s.runMu.Lock()
	f := s.idle[branchID]
	delete(s.idle, branchID) // this move's while it runs: a lock is no lock to its own file
	s.runMu.Unlock()
	if f != nil {
		ok, err := tryLock(f, true)
		if err == nil && !ok {
			h, _, _ := readJournal(f)
			s.keepOpen(branchID, f)
			return nil, 0, h, nil
		}
		if err == nil {
			if fi, err := f.Stat(); err == nil && named(f, fi, s.runPath(branchID)) {
				return f, fi.Size(), nil, nil
			}
		}
		f.Close() // removed meanwhile by a closing store's sweep: opened again
	}
	f, h, err := s.tryRun(branchID)
	if f == nil {
		return nil, 0, h, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, nil, fmt.Errorf("storage: turn journal: %w", err)
	}
	return f, fi.Size(), nil, nil
}

// leaveOpen lets go of the lock on f, branchID's journal, and keeps the file open for the
// next move.
func (s *Store) leaveOpen(branchID int64, f *os.File) {
	if unlock(f) != nil {
		f.Close()
		return
	}
	s.keepOpen(branchID, f)
}

// maxIdle bounds the journal files kept open for tip moves (a long session may move many
// branches; the others open theirs again).
const maxIdle = 64

// keepOpen keeps f, branchID's journal, unlocked, for the next move (one file a branch).
func (s *Store) keepOpen(branchID int64, f *os.File) {
	s.runMu.Lock()
	if s.idle == nil {
		s.idle = map[int64]*os.File{}
	}
	if s.idle[branchID] == nil && len(s.idle) < maxIdle {
		s.idle[branchID], f = f, nil
	}
	s.runMu.Unlock()
	if f != nil {
		f.Close()
	}
}

// errHeld is moveTip's transaction giving up: another file holds the journal.
var errHeld = errors.New("journal held")

// importLeft imports into tx the turn of journal j (size bytes), which this process has
// just locked (its owner is gone), and reports whether there was one, for the caller to
// empty the journal once tx has committed.
func importLeft(ctx context.Context, wc *writeCache, tx *wtx, j *os.File, size int64) (bool, error) {
	if size == 0 {
		return false, nil
	}
	h, calls, err := readJournal(j)
	if err != nil || h == nil {
		return err == nil, err
	}
	return true, importRun(ctx, wc, tx, h, calls)
}

func setTip(ctx context.Context, tx *wtx, branchID int64, tip sql.NullInt64) error {
	_, err := tx.ExecContext(ctx, `UPDATE branches SET tip_id = ?, updated_at = ? WHERE id = ?`, tip, fmtTime(now()), branchID)
	if err != nil {
		return fmt.Errorf("storage: move branch tip: %w", err)
	}
	return touchConversation(ctx, tx, branchID)
}

// advanceTip moves branch br's tip to turn id, which follows br.tipID, when the tip is
// still there: one statement does the check and the move, where reading the branch
// first took one more. A branch moved since (or deleted) is ErrConflict. When id is the
// turn id the branch had reserved next, the same statement moves its reserved ids on,
// and the branch's next block is reserved when few are left (turnids.go).
func advanceTip(ctx context.Context, tx *wtx, br *Branch, id int64) error {
	var took bool
	var left int64
	err := tx.QueryRowContext(ctx, `UPDATE branches SET tip_id = ?1, updated_at = ?2, ids_next = ids_next + (ids_next = ?1)
		WHERE id = ?3 AND tip_id IS ?4 RETURNING ids_next = ?1 + 1, ids_end - ids_next`,
		id, fmtTime(now()), br.ID, br.tipID).Scan(&took, &left)
	if errors.Is(err, sql.ErrNoRows) {
		return tipMoved(ctx, tx, br, id)
	}
	if err != nil {
		return fmt.Errorf("storage: move branch tip: %w", err)
	}
	if took && left < idsLow {
		if _, err := branchBlock(ctx, tx, br.ID); err != nil {
			return err
		}
	}
	return touchConversation(ctx, tx, br.ID)
}

// tipMoved is the error of a tip move to turn id that found branch br no longer where
// the turn found it.
func tipMoved(ctx context.Context, tx *wtx, br *Branch, id int64) error {
	var tip sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT tip_id FROM branches WHERE id = ?", br.ID).Scan(&tip); errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("storage: branch %q was deleted while turn %d was in flight: %w", br.Name, id, ErrConflict)
	}
	return fmt.Errorf("storage: branch %q moved while turn %d was in flight (tip is now %s): %w",
		br.Name, id, nullKey(tip), ErrConflict)
}

// touchConversation marks the conversation of branch branchID as updated now.
func touchConversation(ctx context.Context, tx *wtx, branchID int64) error {
	_, err := tx.ExecContext(ctx, `UPDATE conversations SET updated_at = ? WHERE id = (SELECT conv_id FROM branches WHERE id = ?)`,
		fmtTime(now()), branchID)
	return err
}
