package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Turn ids. A turn's key exists before the turn is in the database (it lives in its
// branch's journal until it ends: journal.go), so its id is reserved beforehand, from
// the counter in turn_ids, which never gives an id twice.
//
// Each branch keeps the ids reserved for its next turns, [ids_next, ids_end) in its row
// (schema version 14). A turn beginning on the branch reads them with the branch, under
// the branch's journal lock (BranchSink.header), and takes ids_next: no write, where
// reserving took a transaction of its own (a third of a millisecond, the first turn of
// each process). Only a turn on a branch with none left reserves, a block for the
// branch, before it begins (reserveForBranch). The turn's row, when it is stored
// (committed, kept beside the branch, or imported from the journal of a process that
// died), moves ids_next past its id, and that transaction reserves the branch's next
// block when fewer than idsLow are left (useBranchID; for a turn committed onto the
// branch, in the tip's move: advanceTip): each process's first turn on a
// branch finds its id waiting. Under the journal lock no one else takes the branch's
// ids, and the journal of a turn whose process died is imported (storing its row,
// moving ids_next on) before the next turn on the branch reads them.
//
// Ids a branch holds when it is deleted, and the rest of a block a branch left when it
// reserved the next, are never used: the keys of a branch's turns go up in steps of one
// within a block.

const (
	idsPerReserve = 8
	idsLow        = 2 // a turn's row reserves the branch's next block when fewer are left
)

// reserveIDs takes n turn ids from the counter in tx and returns the first.
func reserveIDs(ctx context.Context, tx *wtx, n int64) (int64, error) {
	var first int64
	err := tx.QueryRowContext(ctx, "UPDATE turn_ids SET next = next + ?1 RETURNING next - ?1", n).Scan(&first)
	if err != nil {
		return 0, fmt.Errorf("storage: reserve turn ids: %w", err)
	}
	return first, nil
}

// branchBlock reserves a block of ids for branch branchID in tx, replacing what is left
// of its block, and returns the block's first id.
func branchBlock(ctx context.Context, tx *wtx, branchID int64) (int64, error) {
	first, err := reserveIDs(ctx, tx, idsPerReserve)
	if err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, "UPDATE branches SET ids_next = ?, ids_end = ? WHERE id = ?", first, first+idsPerReserve, branchID)
	if err != nil {
		return 0, fmt.Errorf("storage: reserve turn ids: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return 0, fmt.Errorf("storage: reserve turn ids: branch %d is gone: %w", branchID, ErrConflict)
	}
	return first, nil
}

// reserveForBranch is the id of a turn beginning on branch branchID, which has none
// reserved: a block for the branch, in a transaction of its own (the caller holds the
// branch's journal lock).
func (s *Store) reserveForBranch(ctx context.Context, branchID int64) (int64, error) {
	var first int64
	err := s.writeLight(ctx, func(tx *wtx) (err error) {
		first, err = branchBlock(ctx, tx, branchID)
		return err
	})
	return first, err
}

// useBranchID moves branch branchID's reserved ids past id, the turn whose row tx has
// just stored, when id is the branch's next (a turn imported or taken up in place holds
// an id of its own), and reserves the branch's next block when fewer than idsLow are
// left.
func useBranchID(ctx context.Context, tx *wtx, branchID, id int64) error {
	var left int64
	err := tx.QueryRowContext(ctx, "UPDATE branches SET ids_next = ids_next + 1 WHERE id = ? AND ids_next = ? RETURNING ids_end - ids_next",
		branchID, id).Scan(&left)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("storage: turn ids of branch %d: %w", branchID, err)
	}
	if left >= idsLow {
		return nil
	}
	_, err = branchBlock(ctx, tx, branchID)
	return err
}
