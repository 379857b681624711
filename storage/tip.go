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
	_, tip, total, err := s.branchHead(ctx, convID, branch, false)
	return tip, total, err
}

// BranchHead is BranchTip with the agent of the branch's conversation, in the same read:
// what a Send reads before its turn begins.
func (s *Store) BranchHead(ctx context.Context, convID, branch string) (agent string, tip *TurnNode, total int, err error) {
	return s.branchHead(ctx, convID, branch, true)
}

// branchHead reads the branch's tip, after the turn a process that died left committed
// in the branch's journal, if one did (importDeadOf).
func (s *Store) branchHead(ctx context.Context, convID, branch string, withAgent bool) (string, *TurnNode, int, error) {
	agent, tip, total, id, err := s.readHead(ctx, convID, branch, withAgent)
	if err != nil {
		return "", nil, 0, err
	}
	imported, err := s.importDeadOf(ctx, id)
	if err != nil {
		return "", nil, 0, err
	}
	if imported { // the tip may have moved
		agent, tip, total, _, err = s.readHead(ctx, convID, branch, withAgent)
	}
	return agent, tip, total, err
}

// readHead is branchHead's read, with the branch's id.
func (s *Store) readHead(ctx context.Context, convID, branch string, withAgent bool) (string, *TurnNode, int, int64, error) {
	var tip, depth, id sql.NullInt64
	var started sql.NullString
	var agent string
	cols, from := "", "branches b"
	dest := []any{&tip, &depth, &started, &id}
	if withAgent {
		cols, from = ", c.agent", "branches b JOIN conversations c ON c.id = b.conv_id"
		dest = append(dest, &agent)
	}
	err := s.hotReads(ctx).QueryRowContext(ctx, `SELECT b.tip_id, t.depth, t.started_at, b.id`+cols+` FROM `+from+` LEFT JOIN turns t ON t.id = b.tip_id
		WHERE b.conv_id = ? AND b.name = ?`, convID, branch).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		// the same error as every other read of a missing branch or conversation
		_, err = branchByName(ctx, s.r, convID, branch)
		return "", nil, 0, 0, err
	}
	if err != nil {
		return "", nil, 0, 0, fmt.Errorf("storage: tip of branch %q of %q: %w", branch, convID, err)
	}
	s.branchIDs.Store(branchKey(convID, branch), id.Int64)
	if !tip.Valid {
		return agent, nil, 0, id.Int64, nil
	}
	n := &TurnNode{Key: turnKey(tip.Int64), Index: int(depth.Int64), Started: parseTime(started.String)}
	return agent, n, n.Index + 1, id.Int64, nil
}

// branchKey is the key of a branch name in Store.branchIDs.
func branchKey(convID, branch string) string { return convID + "\x00" + branch }
