package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/sessionbench/sessionbench/core/trace"
)

// TurnHold is a branch locked for its next turn before the turn begins: its journal,
// locked as BeginTurn locks it, and the branch as read under the lock. A session
// restored from this head is restored from the branch as the turn finds it: no other
// process can commit a turn between the read and the turn. Without the hold one could,
// between a restore's read of the tip and the turn's lock, and the turn would follow a
// tip whose turn its history had not seen. The turn then begins without a read of its
// own (BranchSink.Adopt). Release lets the branch go when no turn took the hold over;
// meanwhile another process finds the branch busy, as while a turn begins.
type TurnHold struct {
	s            *Store
	conv, branch string

	mu   sync.Mutex
	f    *os.File // nil once taken over or released
	id   int64
	br   *Branch     // read under the lock
	open []*TurnNode // the turns left running or interrupted on the branch
}

// Hold locks the sink's branch for its next turn (TurnHold). A branch with a turn in
// flight in a live process is busy (ErrBusy, naming the process), as for BeginTurn; a
// journal a process that died left is imported first.
func (b *BranchSink) Hold(ctx context.Context) (*TurnHold, error) {
	if b.s.readOnly != "" {
		return nil, fmt.Errorf("storage: %s: %s; nothing was changed: %w", b.s.path, b.s.readOnly, ErrReadOnly)
	}
	// the turn before, committed here, is in the database first (commitlater.go)
	if err := b.s.pending.wait(ctx); err != nil {
		return nil, err
	}
	b.mu.Lock()
	id := b.branchID
	b.mu.Unlock()
	for {
		known := id != 0
		if !known {
			// the branch's id, which names its journal, by the read made again under
			// the lock (one statement for both)
			br, st, _, err := branchForTurn(ctx, b.s.hotReads(ctx), b.conv, b.branch)
			if err != nil {
				return nil, err
			}
			if err := takesTurns(b.conv, st); err != nil {
				return nil, err
			}
			id = br.ID
		}
		// a listing waits for what the journal holds to be imported (Store.imports)
		b.s.imports.RLock()
		f, holder, err := b.s.lockRun(ctx, id)
		if err != nil || f == nil {
			b.s.imports.RUnlock()
			if err != nil {
				return nil, err
			}
			return nil, runBusyError(b.branch, holder)
		}
		if err := b.s.late.take(id); err != nil {
			b.s.imports.RUnlock()
			b.s.leaveOpen(id, f)
			return nil, fmt.Errorf("%w; this turn was not begun: send it again", lateError(err))
		}
		br, open, err := b.lockedHead(ctx, f, id)
		b.s.imports.RUnlock()
		if err != nil {
			f.Close()
			if known && errors.Is(err, errBranchReplaced) {
				id = 0 // the name names another branch now: look it up
				continue
			}
			return nil, err
		}
		b.s.holdRun(f)
		b.s.branchIDs.Store(branchKey(b.conv, b.branch), id)
		b.mu.Lock()
		b.branchID = id
		b.mu.Unlock()
		return &TurnHold{s: b.s, conv: b.conv, branch: b.branch, f: f, id: id, br: br, open: open}, nil
	}
}

// Head is the branch as read under the lock, as Store.BranchHead gives it: the
// conversation's agent, the tip (nil when the branch is empty) and the path's length.
func (h *TurnHold) Head() (agent string, tip *TurnNode, total int) { return headOf(h.br) }

// Release lets the branch go, unless a turn took the hold over. It may be called more
// than once.
func (h *TurnHold) Release() {
	if f := h.take(); f != nil {
		h.s.releaseRun(f)
		h.s.leaveOpen(h.id, f)
	}
}

// take hands the locked journal over (nil once taken or released).
func (h *TurnHold) take() *os.File {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.f
	h.f = nil
	return f
}

// Adopt has the sink's next BeginTurn take h over (a hold of the sink's branch)
// instead of locking the branch and reading it again. A hold released meanwhile is
// not taken: BeginTurn locks the branch itself.
func (b *BranchSink) Adopt(h *TurnHold) {
	if h == nil || h.s != b.s || h.conv != b.conv || h.branch != b.branch {
		return
	}
	b.mu.Lock()
	b.adopted = h
	b.mu.Unlock()
}

// lockedHead reads branch branchID, whose journal f this process has just locked: the
// branch as the last turn on it left it (after importing the turn in f a process that
// died left there), with the turns left running or interrupted on it, which the turn
// beginning supersedes.
func (b *BranchSink) lockedHead(ctx context.Context, f *os.File, branchID int64) (*Branch, []*TurnNode, error) {
	if err := b.s.keepLeft(ctx, f); err != nil {
		return nil, nil, err
	}
	return b.readHeld(ctx, branchID)
}

// readHeld is lockedHead's read of branch branchID.
func (b *BranchSink) readHeld(ctx context.Context, branchID int64) (*Branch, []*TurnNode, error) {
	hot := b.s.hotReads(ctx) // the branch as the last commit left it (hotread.go)
	br, st, nLeft, err := branchForTurn(ctx, hot, b.conv, b.branch)
	if err != nil {
		return nil, nil, err
	}
	if br.ID != branchID {
		return nil, nil, fmt.Errorf("storage: branch %q of %q was replaced while the turn began: %w: %w", b.branch, b.conv, ErrConflict, errBranchReplaced)
	}
	if err := takesTurns(b.conv, st); err != nil {
		return nil, nil, err
	}
	// The turns left running or interrupted on the branch (rarely any: read only then):
	// one stored running by a live process (an earlier version of this program kept
	// turns in flight in the database) makes the branch busy; the others the turn
	// supersedes.
	var open []*TurnNode
	if nLeft > 0 {
		open, err = queryNodes(ctx, hot, "SELECT "+nodeColumns+` FROM turns t WHERE t.conv_id = ? AND t.status IN ('running', 'interrupted') AND t.branch_id = ?`,
			b.conv, br.ID)
		if err != nil {
			return nil, nil, fmt.Errorf("storage: running turns of %q: %w", br.Name, err)
		}
	}
	for _, n := range open {
		if n.Status == trace.StatusRunning && n.Owner != nil && n.Owner.Alive {
			return nil, nil, busyError(br.Name, n.Index, n.id.Int64, n.Owner, n.Started)
		}
	}
	return br, open, nil
}
