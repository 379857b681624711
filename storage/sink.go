package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// BranchSink is the engine's trace.Sink bound to one branch of one conversation. A turn
// in flight lives in the branch's journal (journal.go), which this process holds locked:
// another process finds the branch busy, each finished call is appended the moment
// RecordCall returns (a killed process loses none), and the database sees the turn once,
// when it ends: CommitTurn (completed, the only status on the branch's path) or AbortTurn
// (failed, cancelled or interrupted, kept beside the branch), one commit and one fsync
// per turn; a CommitTurn that fails ends the turn as AbortTurn would (commitFailed). A
// turn whose process died is imported from its journal as interrupted by the next reader
// (liveRuns).
type BranchSink struct {
	s      *Store
	conv   string
	branch string

	mu     sync.Mutex
	resume string          // turn key the next BeginTurn resumes or retries
	began  string          // turn key the last BeginTurn began
	runs   map[string]*run // turns this sink has in flight, by key
	// prev is the turn this sink committed last, its calls by predictor path: a turn
	// following it journals its calls' requests and histories as continuations of them (a
	// turn following another journals them against that turn's stored calls: seededCall).
	prev      int64
	prevCalls map[string]*trace.Call
	// adopted is the hold the next BeginTurn takes over (Adopt).
	adopted *TurnHold
	// branchID is the branch's id as BeginTurn last found it (before: as the store's
	// last head read of the branch found it, or 0): the next turn locks that journal
	// without looking the branch up first, and its header, read under the lock, finds
	// out when the name has come to name another branch since.
	branchID int64
}

// run is a turn this sink has in flight: its locked journal and what it recorded.
type run struct {
	mu    sync.Mutex
	f     *os.File // nil once the turn ended
	h     *runHeader
	calls []runCall
	// committed is set once CommitTurn has returned and the turn's transaction runs
	// beside it (commitlater.go): the turn is no longer in flight for the engine.
	committed bool

	// seedMu guards what seeding a call against the stored turn before reads and keeps
	// (seed.go), which PrepareCall does outside mu, while the model thinks.
	seedMu sync.Mutex
	bases  map[string]*storedBase // by path: the stored turn before's calls (seededCall)
	seeds  map[*trace.Call]*seeding
}

var _ trace.Sink = (*BranchSink)(nil)

// Sink returns the trace.Sink writing turns to branch of conversation convID.
func (s *Store) Sink(convID, branch string) *BranchSink {
	b := &BranchSink{s: s, conv: convID, branch: branch, runs: map[string]*run{}}
	if id, ok := s.branchIDs.Load(branchKey(convID, branch)); ok {
		b.branchID = id.(int64) // the session was restored from the head just read
	}
	return b
}

// Resume makes the next BeginTurn take up turn key instead of starting a fresh turn, so
// the engine runs it again through its normal path; pair it with ReplayLM(key, model) so
// requests already answered are not paid for again. An interrupted turn (its owner gone)
// continues in place, on the branch it was begun on. A failed or cancelled turn is
// retried: the next BeginTurn starts a new turn that points at it (RetryOf), on this
// sink's branch (any branch of the conversation), and the failed turn stays as it was.
// Either way the branch's tip must be the turn's parent.
func (b *BranchSink) Resume(ctx context.Context, key string) error {
	id, err := parseTurnKey(key)
	if err != nil {
		return err
	}
	if r, err := b.s.liveRun(ctx, id); err != nil || r != nil {
		switch {
		case err != nil:
			return err
		case r.h.Conv != b.conv || r.h.Branch != b.branch:
			return fmt.Errorf("storage: turn %s was not begun on %s/%s: %w", key, b.conv, b.branch, ErrInvalid)
		}
		return busyError(r.h.Branch, r.h.Depth, id, r.owner(), r.h.Started)
	}
	n, err := turnNode(ctx, b.s.r, id)
	if err != nil {
		return err
	}
	br, err := branchByName(ctx, b.s.r, b.conv, b.branch)
	inPlace := !n.Status.Retryable() || n.Status == trace.StatusInterrupted
	if n.conv != b.conv || errors.Is(err, ErrNotFound) || (err == nil && inPlace && n.branchID.Int64 != br.ID) {
		return fmt.Errorf("storage: turn %s was not begun on %s/%s: %w", key, b.conv, b.branch, ErrInvalid)
	}
	if err != nil {
		return err
	}
	if err := resumable(n, br); err != nil {
		return err
	}
	b.mu.Lock()
	b.resume = key
	b.mu.Unlock()
	return nil
}

// Began is the key of the turn the last BeginTurn began or took up ("" when it failed):
// the turn a failing engine run left behind.
func (b *BranchSink) Began() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.began
}

// forkPoint says where a branch for a turn at index i starts.
func forkPoint(i int) string {
	if i == 0 {
		return "empty (the turn was the first)"
	}
	return fmt.Sprintf("after turn %d", i-1)
}

// resumable says why turn n cannot be taken up on branch br, or nil.
func resumable(n *TurnNode, br *Branch) error {
	switch {
	case n.Status == trace.StatusCompleted:
		return fmt.Errorf("storage: turn %s is completed; there is nothing to retry: %w", n.Key, ErrConflict)
	case n.Status == trace.StatusRunning && n.Owner != nil && n.Owner.Alive:
		return fmt.Errorf("storage: turn %s is running in %s: %w", n.Key, n.Owner, ErrBusy)
	case n.Parent != nullKey(br.tipID):
		return fmt.Errorf("storage: branch %q moved on since turn %s began (its tip is now turn %s): retry it on a new branch that starts %s: %w",
			br.Name, n.Key, dash(nullKey(br.tipID)), forkPoint(n.Index), ErrConflict)
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "(empty)"
	}
	return s
}

// BeginTurn begins a turn after the branch tip, in flight in this process: it takes the
// branch's journal (a branch with a turn in flight in a live process is busy: ErrBusy,
// naming the process), or takes over the hold Adopt gave it, and writes the turn's
// header there; the database is not written. Turns on the branch whose process is gone are superseded (kept, cancelled): new input
// replaces an interrupted turn, as in HPD-Agent.
func (b *BranchSink) BeginTurn(ctx context.Context, inputs *sig.Map) (string, error) {
	in, err := jsonOf(inputs)
	if err != nil {
		return "", fmt.Errorf("storage: turn inputs: %w", err)
	}
	if !in.Valid {
		in = sql.NullString{String: "{}", Valid: true}
	}
	b.mu.Lock()
	resume, held := b.resume, b.adopted
	b.resume, b.began, b.adopted = "", "", nil
	b.mu.Unlock()
	var f *os.File
	if held != nil {
		f = held.take() // nil when it was released meanwhile
	}
	if f == nil {
		if held, err = b.Hold(ctx); err != nil {
			return "", err
		}
		f = held.take()
	}
	h, err := b.begin(ctx, f, held, in.String, resume)
	if err != nil {
		b.s.releaseRun(f)
		f.Close()
		return "", err
	}
	key := turnKey(h.ID)
	b.mu.Lock()
	b.runs[key], b.began = &run{f: f, h: h}, key
	b.mu.Unlock()
	return key, nil
}

// errBranchReplaced is readHeld's when the branch it was given is no longer the one the
// sink's branch name names.
var errBranchReplaced = errors.New("the branch was replaced")

// openBranch is the sink's branch, when its conversation takes turns.
func (b *BranchSink) openBranch(ctx context.Context) (*Branch, error) {
	if err := requireOpen(ctx, b.s.r, b.conv); err != nil {
		return nil, err
	}
	return branchByName(ctx, b.s.r, b.conv, b.branch)
}

// begin writes the header of the turn beginning on the branch held into its journal
// f, which the hold had locked.
func (b *BranchSink) begin(ctx context.Context, f *os.File, held *TurnHold, inputs, resume string) (*runHeader, error) {
	h, left, err := b.header(ctx, held.br, held.open, inputs, resume)
	if err != nil {
		return nil, err
	}
	if left > 0 {
		if err := b.s.write(ctx, func(tx *wtx) error { return supersede(ctx, tx, b.conv, held.id, h.ID) }); err != nil {
			return nil, err
		}
	}
	if h.ID == 0 { // the branch has no turn id reserved (turnids.go)
		if h.ID, err = b.s.reserveForBranch(ctx, held.id); err != nil {
			return nil, err
		}
	}
	if err := appendRecord(f, h); err != nil {
		return nil, err
	}
	return h, nil
}

// header is the journal header of a turn beginning on branch br as read under its lock,
// with open the turns left running or interrupted there (its id still 0 unless it takes
// up turn resume in place), and how many of those the turn supersedes.
func (b *BranchSink) header(ctx context.Context, br *Branch, open []*TurnNode, inputs, resume string) (*runHeader, int, error) {
	h := &runHeader{V: journalVersion, Conv: b.conv, Branch: b.branch, BranchID: br.ID, Parent: br.tipID.Int64, Depth: br.Length,
		Inputs: inputs, PID: os.Getpid(), Host: hostName(), Started: now()}
	if resume != "" {
		old, err := parseTurnKey(resume)
		if err != nil {
			return nil, 0, err
		}
		n, err := turnNode(ctx, b.s.r, old)
		if err != nil {
			return nil, 0, err
		}
		if err := resumable(n, br); err != nil {
			return nil, 0, err
		}
		if n.Status == trace.StatusInterrupted || n.Status == trace.StatusRunning {
			h.ID, h.InPlace = old, true // interrupted: continue it in place
		} else {
			h.RetryOf = old
		}
	}
	if h.ID == 0 && br.idsNext < br.idsEnd {
		h.ID = br.idsNext // reserved for the branch's next turn (turnids.go)
	}
	// Turns left running or interrupted here are superseded by the caller (rarely any: a
	// transaction only then); the one taken up in place is not.
	left := 0
	for _, n := range open {
		if n.id.Int64 != h.ID {
			left++
		}
	}
	return h, left, nil
}

// runBusyError says which live process runs a turn on a branch, as its journal says.
func runBusyError(branch string, h *runHeader) error {
	if h == nil {
		return fmt.Errorf("storage: branch %q is busy: another process is beginning a turn on it or moving its tip: %w", branch, ErrBusy)
	}
	return busyError(branch, h.Depth, h.ID, &Owner{PID: h.PID, Host: h.Host, Alive: true}, h.Started)
}

// clearOwner is the SET clause that makes a turn ownerless.
const clearOwner = `owner_pid = NULL, owner_host = NULL, owner_id = NULL, lease_until = NULL`

// inFlight is the run of turn key, which this sink must have in flight.
func (b *BranchSink) inFlight(ctx context.Context, key string) (*run, error) {
	id, err := parseTurnKey(key)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	r := b.runs[key]
	committed := r != nil && r.committed
	b.mu.Unlock()
	if committed {
		return nil, fmt.Errorf("storage: turn %s is completed, not in flight on %s/%s in this process: %w", key, b.conv, b.branch, ErrConflict)
	}
	if r != nil {
		return r, nil
	}
	// Say why: the turn is unknown, elsewhere, or not in flight here.
	n, err := turnNode(ctx, b.s.r, id)
	switch {
	case err != nil:
		if lr, _ := b.s.liveRun(ctx, id); lr != nil {
			return nil, fmt.Errorf("storage: turn %s is in flight in %s, not in this sink: %w", key, lr.owner(), ErrConflict)
		}
		return nil, err
	case n.conv != b.conv:
		return nil, fmt.Errorf("storage: turn %s is not in conversation %q: %w", key, b.conv, ErrInvalid)
	}
	return nil, fmt.Errorf("storage: turn %s is %s, not in flight on %s/%s in this process: %w", key, n.Status, b.conv, b.branch, ErrConflict)
}

// abandon lets go of turn key's journal without ending it, as a dying process would: the
// next reader keeps the turn as interrupted.
func (b *BranchSink) abandon(key string) {
	if f, _ := b.letGo(key); f != nil {
		b.s.releaseRun(f)
		f.Close()
	}
}

// end retires turn key's journal once its transaction has committed: the branch is free
// once it is emptied and unlocked, beside the caller (retireLater).
func (b *BranchSink) end(key string) {
	if f, branchID := b.letGo(key); f != nil {
		b.s.retireLater(branchID, f)
	}
}

// letGo forgets turn key, returning its journal (nil if it had none left) and branch.
func (b *BranchSink) letGo(key string) (*os.File, int64) {
	b.mu.Lock()
	r := b.runs[key]
	delete(b.runs, key)
	b.mu.Unlock()
	if r == nil {
		return nil, 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.f
	r.f = nil
	return f, r.h.BranchID
}

// RecordCall appends one finished inner call (with any children attached to it) to the
// turn's journal; it is in the database when the turn ends. Recording a call id again
// replaces it, which is what a resumed turn does with the calls it replays.
func (b *BranchSink) RecordCall(ctx context.Context, key, parentCallID string, c *trace.Call) error {
	if c == nil {
		return fmt.Errorf("storage: record call: nil call: %w", ErrInvalid)
	}
	r, err := b.inFlight(ctx, key)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return fmt.Errorf("storage: turn %s has ended: %w", key, ErrConflict)
	}
	b.mu.Lock()
	var base *trace.Call
	committed := b.prev != 0 && b.prev == r.h.Parent // the turn before: this sink has its calls
	if committed {
		base = b.prevCalls[c.Path]
	}
	b.mu.Unlock()
	jc, ref := journalCall(c, base, r.h.Parent)
	if !committed {
		jc, ref = r.seeded(ctx, b.s, c)
	}
	jc, body := recordBody(c, jc)
	if err := appendRecord(r.f, runCall{Parent: parentCallID, Call: jc, Base: ref, RawMessages: body}); err != nil {
		return err
	}
	r.calls = append(r.calls, runCall{Parent: parentCallID, Call: snapshotCall(c)})
	return nil
}

// recorded is what the turn's journal holds, for its transaction.
func (r *run) recorded() []runCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// CommitTurn stores the finished turn, completed, and moves the branch tip to it,
// clearing the branch's redo stack: the turn's one transaction, which runs beside the
// caller once the turn's end is in its journal (commitlater.go). A commit that fails
// ends the turn all the same (commitFailed): it never leaves the turn in flight.
func (b *BranchSink) CommitTurn(ctx context.Context, key string, t *trace.Turn) error {
	r, err := b.inFlight(ctx, key)
	if err != nil {
		return err
	}
	if t == nil {
		return b.commitFailed(ctx, key, r, &trace.Turn{}, fmt.Errorf("storage: commit turn %s: nil turn: %w", key, ErrInvalid))
	}
	end, err := r.endRecord(t)
	if err != nil {
		return b.commitFailed(ctx, key, r, t, err)
	}
	if end != nil && b.commitLater(ctx, key, r, t, end) {
		return nil
	}
	return b.commitNow(ctx, key, r, t, nil)
}

// AbortTurn ends the turn in flight without committing it: t says how (Status failed,
// cancelled or interrupted; failed when unset), why (Error) and the calls it made. The
// turn is stored beside the branch, out of its path, in one transaction; an interrupted
// one is left ownerless, so it is offered for resuming at once.
func (b *BranchSink) AbortTurn(ctx context.Context, key string, t *trace.Turn) error {
	if t == nil {
		return fmt.Errorf("storage: abort turn %s: nil turn: %w", key, ErrInvalid)
	}
	st := t.Status
	switch st {
	case "":
		st = trace.StatusFailed
	case trace.StatusFailed, trace.StatusCancelled, trace.StatusInterrupted:
	default:
		return fmt.Errorf("storage: abort turn %s as %q: want failed, cancelled or interrupted: %w", key, st, ErrInvalid)
	}
	r, err := b.inFlight(ctx, key)
	if err != nil {
		return err
	}
	return b.keep(ctx, key, r, t, st)
}
