package storage

import (
	"context"
	"fmt"
)

// pruneQuery deletes the turns that only deleted branches reached. A turn is dead when a
// deleted branch reached it (its path, its redo list, or a turn begun on it) and it is
// kept when a remaining branch still does: the ancestors of every remaining tip, redo
// entry and fork point, and of turns begun on a remaining branch that are not committed
// (turns to resume or retry, kept beside their branch). Dead minus kept goes; the
// calls, attempts and redo rows of those turns follow by ON DELETE CASCADE.
//
// Both walks are recursive over parent links, so pruning costs about the size of the
// conversation's tree; deleting a branch is rare and this keeps the rule easy to check.
const pruneQuery = `WITH RECURSIVE
	keep(id) AS (
		SELECT tip_id FROM branches WHERE conv_id = ?1 AND tip_id IS NOT NULL
		UNION SELECT fork_turn_id FROM branches WHERE conv_id = ?1 AND fork_turn_id IS NOT NULL
		UNION SELECT r.turn_id FROM redo r JOIN branches b ON b.id = r.branch_id WHERE b.conv_id = ?1
		UNION SELECT t.id FROM turns t JOIN branches b ON b.id = t.branch_id
			WHERE t.conv_id = ?1 AND t.status <> 'completed'
		UNION SELECT t.parent_id FROM turns t JOIN keep ON t.id = keep.id WHERE t.parent_id IS NOT NULL),
	dead(id) AS (
		SELECT value FROM json_each(?2)
		UNION SELECT t.id FROM turns t WHERE t.conv_id = ?1 AND t.branch_id IN (SELECT value FROM json_each(?3))
		UNION SELECT t.parent_id FROM turns t JOIN dead ON t.id = dead.id WHERE t.parent_id IS NOT NULL)
DELETE FROM turns WHERE conv_id = ?1 AND id IN (SELECT id FROM dead EXCEPT SELECT id FROM keep)`

// reach is what a branch about to be deleted reaches: read before its row (and, by
// cascade, its redo list) is gone.
type reach struct {
	branches []int64 // branch ids (turns begun on them)
	turns    []int64 // tips and redo entries
}

func (r *reach) add(ctx context.Context, tx *wtx, branchID int64) error {
	r.branches = append(r.branches, branchID)
	rows, err := tx.QueryContext(ctx, `SELECT tip_id FROM branches WHERE id = ?1 AND tip_id IS NOT NULL
		UNION ALL SELECT turn_id FROM redo WHERE branch_id = ?1`, branchID)
	if err != nil {
		return fmt.Errorf("storage: turns of branch %d: %w", branchID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return fmt.Errorf("storage: turns of branch %d: %w", branchID, err)
		}
		r.turns = append(r.turns, id)
	}
	return rows.Err()
}

// prune deletes the turns only the deleted branches reached (see pruneQuery), then the
// message lists and contents nothing references any more, and moves the conversation's
// best attempt if it belonged to a deleted turn. It returns the number of turns deleted.
func prune(ctx context.Context, tx *wtx, convID string, r reach) (int64, error) {
	res, err := tx.ExecContext(ctx, pruneQuery, convID, idsJSON(r.turns), idsJSON(r.branches))
	if err != nil {
		return 0, fmt.Errorf("storage: delete turns of deleted branches: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil || n == 0 {
		return n, err
	}
	if err := sweepContent(ctx, tx); err != nil {
		return 0, err
	}
	// a remaining branch's pack or first call (firstcall.go) may still copy a deleted
	// turn (one an undo took off its path): they are caches, and what a user deletes
	// goes from them too
	if _, err := tx.ExecContext(ctx, `DELETE FROM path_packs WHERE conv_id = ?`, convID); err != nil {
		return 0, fmt.Errorf("storage: delete path packs: %w", err)
	}
	for _, table := range []string{"first_calls", "first_call_rows"} {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE branch_id IN (SELECT id FROM branches WHERE conv_id = ?)`, convID); err != nil {
			return 0, fmt.Errorf("storage: delete first calls: %w", err)
		}
	}
	return n, moveBestAttempt(ctx, tx, convID)
}

// moveBestAttempt points the conversation's best attempt at the best remaining one when
// its own was deleted with its turn. Ties keep the earlier attempt, as
// insertAttempts does; attempts of turns that did not complete are never a best.
func moveBestAttempt(ctx context.Context, tx *wtx, convID string) error {
	if _, err := tx.ExecContext(ctx, `UPDATE conversations SET best_attempt_id =
			(SELECT a.id FROM attempts a JOIN turns t ON t.id = a.turn_id
				WHERE a.conv_id = ?1 AND t.status = 'completed' AND a.error = '' ORDER BY a.score DESC, a.id LIMIT 1)
		WHERE id = ?1 AND best_attempt_id IS NOT NULL AND best_attempt_id NOT IN (SELECT id FROM attempts)`, convID); err != nil {
		return fmt.Errorf("storage: move best attempt of %q: %w", convID, err)
	}
	return nil
}
