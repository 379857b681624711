package storage

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sessionbench/sessionbench/core/trace"
)

// A completed turn is committed once its end is in its journal, and its database
// transaction follows beside the caller (write-behind). After a model call everything
// runs cold (BenchmarkWriteAfterGap: the store's smallest write costs 6x more 30 ms after
// the last than right after it), so the turn's transaction, about twenty statements,
// took 1-1.5 ms of the Send's time beyond its model calls at 1,000 turns; its end record
// is one write (BenchmarkBeyondModel).
//
// What the caller can rely on once CommitTurn has returned:
//   - The turn is as safe as a returned commit was: the end record is in the kernel's
//     page cache with every call before it (the transaction's log was too, before its
//     fsync), so a killed process loses nothing: the next reader of its journal commits
//     the turn onto its branch as the process would have (importRun, reached through
//     importDeadOf by BranchHead, BranchTip and BranchPath), or, when the
//     branch has moved since, keeps it beside the branch, interrupted.
//   - This process sees it: every read and write of the store waits for the turns whose
//     transactions are pending (pendingCommits.wait), but the transactions' own. The
//     turn's values (t, its calls' records) are the transaction's, shared, not copied:
//     the caller does not change them afterwards, as core.Restore shares them too.
//   - Another process sees the turn in flight until its transaction commits, a
//     millisecond or so; a turn or tip move there waits for it, as for a journal being
//     retired (endedHolder).
//   - A transaction that fails (a write error; or the branch moved, which only an older
//     version of this program could do) ends the turn as a failed commit always did
//     (commitFailed: kept beside the branch as failed, or left to the next reader), and
//     the error is reported by the branch's next BeginTurn in this process, by Settle,
//     Sync and Close (lateErrors): the caller, told success, learns it at its next step, as a
//     failed fsync is reported (syncer.go).
//
// Turns whose end the record does not carry commit at once, as before: a turn taken up
// in place (its row exists), one with an explicit history snapshot, or one whose calls
// the journal does not all hold.

// runEnd is a journal's end record: what a completed turn's row holds beyond its header
// and its calls' records.
type runEnd struct {
	Outputs  string           `json:"outputs,omitempty"` // JSON; "" for none
	Inputs   string           `json:"inputs,omitempty"`  // JSON, when the turn's differ from the header's
	Score    *float64         `json:"score,omitempty"`
	Started  time.Time        `json:"started"`
	Ended    time.Time        `json:"ended"`
	Attempts []*trace.Attempt `json:"attempts,omitempty"`
}

// endRecord is the end record of turn r completed as t, or nil when t cannot be
// committed later (see above).
func (r *run) endRecord(t *trace.Turn) (*runEnd, error) {
	if r.h.InPlace || t.Explicit {
		return nil, nil
	}
	r.mu.Lock()
	recorded := make(map[string]bool, len(r.calls))
	for _, rc := range r.calls {
		if rc.Parent == "" {
			recorded[rc.Call.ID] = true
		}
	}
	r.mu.Unlock()
	for _, c := range t.Calls {
		if c == nil || !recorded[c.ID] {
			return nil, nil
		}
	}
	out, err := jsonOf(t.Outputs)
	if err != nil {
		return nil, fmt.Errorf("storage: turn outputs: %w", err)
	}
	in, err := jsonOf(t.Inputs)
	if err != nil {
		return nil, fmt.Errorf("storage: turn inputs: %w", err)
	}
	ended := t.Ended
	if ended.IsZero() {
		ended = now()
	}
	return &runEnd{Outputs: out.String, Inputs: in.String, Score: t.Score, Started: t.Started, Ended: ended, Attempts: t.Attempts}, nil
}

// turn is the turn and the row's end an end record gives, for commitNewTurn; h2 is the
// header with the turn's own inputs.
func (e *runEnd) turn(h *runHeader) (h2 *runHeader, t *trace.Turn, end *turnEnd) {
	h2 = h
	if e.Inputs != "" {
		c := *h
		c.Inputs, h2 = e.Inputs, &c
	}
	t = &trace.Turn{Score: e.Score, Started: e.Started, Ended: e.Ended, Attempts: e.Attempts}
	end = &turnEnd{ended: e.Ended}
	if e.Outputs != "" {
		end.out.String, end.out.Valid = e.Outputs, true
	}
	return h2, t, end
}

// commitLater writes turn key's end record and commits the turn beside the caller; false
// when the record could not be written (the caller commits at once).
func (b *BranchSink) commitLater(ctx context.Context, key string, r *run, t *trace.Turn, end *runEnd) bool {
	r.mu.Lock()
	ok := r.f != nil && appendRecord(r.f, runCall{End: end}) == nil
	r.mu.Unlock()
	if !ok {
		return false
	}
	b.s.pending.add() // the branch's next turn waits for it (BeginTurn), so commitNow's
	// b.committed, what that turn journals against, comes first
	b.mu.Lock()
	r.committed = true // under b.mu, as inFlight reads it
	b.mu.Unlock()
	ctx = context.WithValue(context.WithoutCancel(ctx), committingKey{}, true)
	go func() {
		defer b.s.pending.done()
		_, _, e := end.turn(r.h)
		if err := b.commitNow(ctx, key, r, t, e); err != nil {
			b.s.late.note(r.h.BranchID, err)
		}
	}()
	return true
}

// committingKey marks the context of a turn's transaction run beside its caller: its own
// reads and writes do not wait for it.
type committingKey struct{}

// pendingCommits counts the transactions of committed turns still to run (commitLater).
type pendingCommits struct {
	n    atomic.Int32 // read without mu: most reads find none
	mu   sync.Mutex
	idle chan struct{} // closed when n falls to 0
}

func (p *pendingCommits) add() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n.Add(1) == 1 {
		p.idle = make(chan struct{})
	}
}

func (p *pendingCommits) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n.Add(-1) == 0 {
		close(p.idle)
	}
}

// wait returns once no committed turn's transaction is pending (at once within one),
// or when ctx ends.
func (p *pendingCommits) wait(ctx context.Context) error {
	if p.n.Load() == 0 || ctx.Value(committingKey{}) != nil {
		return nil
	}
	p.mu.Lock()
	idle := p.idle
	n := p.n.Load()
	p.mu.Unlock()
	if n == 0 {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// lateErrors are the failures of transactions run beside their turns' callers, by
// branch, until reported.
type lateErrors struct {
	mu   sync.Mutex
	errs map[int64]error
}

func (l *lateErrors) note(branchID int64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.errs == nil {
		l.errs = map[int64]error{}
	}
	l.errs[branchID] = errors.Join(l.errs[branchID], err)
}

// take reports branchID's failures (all branches' when branchID is 0) once.
func (l *lateErrors) take(branchID int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if branchID != 0 {
		err := l.errs[branchID]
		delete(l.errs, branchID)
		return err
	}
	var all []error
	for id, err := range l.errs {
		all = append(all, err)
		delete(l.errs, id)
	}
	return errors.Join(all...)
}

// Settle returns once the transactions of the turns committed so far have run (the
// turns are in the database; not yet fsynced: Sync), with the failures of those that
// failed, reported once.
func (s *Store) Settle() error {
	s.pending.wait(context.Background())
	return lateError(s.late.take(0))
}

// lateError wraps the failure of the transaction of a turn that had returned as
// committed, for the caller who learns of it later.
func lateError(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("storage: a turn reported as stored could not be written to the database after all: %w", err)
}
