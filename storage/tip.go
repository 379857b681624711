package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// BranchTip is a branch's tip turn (only its Key, Index and Started are read; nil for an
// empty branch) and the path's length, in one indexed lookup: enough to tell whether a
// path read before still ends at the tip (a committed turn never changes, and its key
// with its start time names it even if a deleted turn's id was reused).
func (s *Store) BranchTip(ctx context.Context, convID, branch string) (*TurnNode, int, error) {
	var tip sql.NullInt64
	var depth sql.NullInt64
	var started sql.NullString
	err := s.r.QueryRowContext(ctx, `SELECT b.tip_id, t.depth, t.started_at FROM branches b LEFT JOIN turns t ON t.id = b.tip_id
		WHERE b.conv_id = ? AND b.name = ?`, convID, branch).Scan(&tip, &depth, &started)
	if errors.Is(err, sql.ErrNoRows) {
		// the same error as every other read of a missing branch or conversation
		_, err = branchByName(ctx, s.r, convID, branch)
		return nil, 0, err
	}
	if err != nil {
		return nil, 0, fmt.Errorf("storage: tip of branch %q of %q: %w", branch, convID, err)
	}
	if !tip.Valid {
		return nil, 0, nil
	}
	n := &TurnNode{Key: turnKey(tip.Int64), Index: int(depth.Int64), Started: parseTime(started.String)}
	return n, n.Index + 1, nil
}
