package sessions

import (
	"context"
	"fmt"
	"strings"

	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
)

// KeptTurn is a turn kept beside a branch: it did not complete (failed, cancelled,
// interrupted, or still running in another process), so it is not in the branch's
// history, but it is shown where it happened, right after the turn it followed, with
// every call it made.
type KeptTurn struct {
	Key    string
	Index  int // its place on the branch: it follows the branch's turn Index-1
	Status trace.Status
	// Reason is the error that stopped it, on one line.
	Reason string
	// FailedCall is the call that failed (nil when none did, e.g. a cancelled turn
	// whose calls had all answered); it is one of Turn's calls.
	FailedCall *trace.Call
	// Owner is the process a running turn belongs to (nil otherwise).
	Owner *storage.Owner
	Turn  *trace.Turn // inputs, calls (with their requests), status and error
}

// Retryable reports whether the turn can be run again from where it stopped now.
func (k KeptTurn) Retryable() bool { return k.Status.Retryable() }

// KeptTurns lists the turns kept beside branch whose place is on its current path (an
// undo past their parent hides them until a redo), oldest first.
func (a *Service) KeptTurns(ctx context.Context, conv, branch string) ([]KeptTurn, error) {
	nodes, err := a.store.KeptTurns(ctx, conv, branch)
	if err != nil || len(nodes) == 0 {
		return nil, err
	}
	path, err := a.branchPath(ctx, conv, branch)
	if err != nil {
		return nil, err
	}
	var keys []string
	var placed []*storage.TurnNode
	for _, n := range nodes {
		if n.Parent == "" || path.index(n.Parent) == n.Index-1 {
			keys = append(keys, n.Key)
			placed = append(placed, n)
		}
	}
	turns, err := a.store.LoadTurns(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := make([]KeptTurn, len(placed))
	for i, n := range placed {
		out[i] = KeptTurn{Key: n.Key, Index: n.Index, Status: n.Status, Reason: oneLine(n.Error), Owner: n.Owner, Turn: turns[i],
			FailedCall: trace.FailedCall(turns[i].Calls)}
	}
	return out, nil
}

// DeleteTurn removes a kept turn (failed, cancelled or interrupted) with its calls.
func (a *Service) DeleteTurn(ctx context.Context, key string) error {
	if err := a.store.DeleteTurn(ctx, key); err != nil {
		return fmt.Errorf("delete turn %s: %w", key, err)
	}
	return nil
}

// keptAt is where the kept turn key sits on path: the index it would have, right after
// its parent. A completed turn not on the path, or a kept turn whose parent is not on
// it, has no place there.
func (a *Service) keptAt(ctx context.Context, path *pathEntry, key, branch string) (int, error) {
	n, err := a.store.TurnInfo(ctx, key)
	if err != nil {
		return 0, err
	}
	if n.Status != trace.StatusCompleted {
		if n.Parent == "" {
			return 0, nil
		}
		if i := path.index(n.Parent); i >= 0 {
			return i + 1, nil
		}
	}
	return 0, fmt.Errorf("turn %s is not on branch %s", key, branch)
}

// oneLine is the first line of s, for a reason shown beside a turn.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}
