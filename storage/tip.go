package storage

import (
	"context"
)

// BranchTip is a branch's tip turn (only its Key, Index and Started are read; nil for an
// empty branch) and the path's length, in one indexed lookup: enough to tell whether a
// path read before still ends at the tip (a committed turn never changes, and its key
// with its start time names it even if a deleted turn's id was reused).
func (s *Store) BranchTip(ctx context.Context, convID, branch string) (*TurnNode, int, error) {
	_, tip, total, err := s.branchHead(ctx, convID, branch)
	return tip, total, err
}

// BranchHead is BranchTip with the agent of the branch's conversation, in the same read:
// what a Send reads before its turn begins.
func (s *Store) BranchHead(ctx context.Context, convID, branch string) (agent string, tip *TurnNode, total int, err error) {
	return s.branchHead(ctx, convID, branch)
}

// branchHead reads the branch's tip, after the turn a process that died left committed
// in the branch's journal, if one did (importDeadOf).
func (s *Store) branchHead(ctx context.Context, convID, branch string) (string, *TurnNode, int, error) {
	agent, tip, total, id, err := s.readHead(ctx, convID, branch)
	if err != nil {
		return "", nil, 0, err
	}
	imported, err := s.importDeadOf(ctx, id)
	if err != nil {
		return "", nil, 0, err
	}
	if imported { // the tip may have moved
		agent, tip, total, _, err = s.readHead(ctx, convID, branch)
	}
	return agent, tip, total, err
}

// readHead is branchHead's read, with the branch's id. It is the read a turn's header
// makes under the branch's lock (branchForTurn), run on the writer connection too: the
// same statement, so a process's first Send parses it once, not twice.
func (s *Store) readHead(ctx context.Context, convID, branch string) (string, *TurnNode, int, int64, error) {
	b, _, _, err := branchForTurn(ctx, s.hotReads(ctx), convID, branch)
	if err != nil {
		return "", nil, 0, 0, err
	}
	s.branchIDs.Store(branchKey(convID, branch), b.ID)
	agent, tip, total := headOf(b)
	return agent, tip, total, b.ID, nil
}

// headOf is branch b's head as BranchHead gives it, b read by branchForTurn.
func headOf(b *Branch) (agent string, tip *TurnNode, total int) {
	if !b.tipID.Valid {
		return b.agent, nil, 0
	}
	return b.agent, &TurnNode{Key: turnKey(b.tipID.Int64), Index: b.Length - 1, Started: parseTime(b.tipStarted.String)}, b.Length
}

// branchKey is the key of a branch name in Store.branchIDs.
func branchKey(convID, branch string) string { return convID + "\x00" + branch }
