package storage

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// Warming: SQLite parses a statement the first time a connection runs it, and a turn
// runs some forty distinct ones, so the first turn of a process paid about a millisecond
// for parsing alone. Warm pays it before, while the user types or the model thinks. It
// does not keep a list of the statements (one would go stale without a sound): it runs
// the code a turn runs, for made-up turns in a write transaction it always rolls back,
// with the turn's reads routed into that transaction (readDB.route) so they find what it
// wrote, and then prepares every statement that ran, writes on the writer connection and
// reads on the readers.

// warmState is a store's warm-up: at most one per store, stopped by Close, and never in
// the way of a write (see hold).
type warmState struct {
	mu      sync.Mutex
	closed  bool
	started bool
	running sync.WaitGroup
	stop    context.CancelCauseFunc // the running Warm's
	holding context.CancelCauseFunc // while Warm holds the writer connection
	// wanted counts the writes under way or waiting for the writer (Store.writeWith).
	wanted atomic.Int32
}

var (
	errWarmClosed = errors.New("storage: store closed")
	errYield      = errors.New("storage: warm-up gave the writer to a write")
	errWarmDone   = errors.New("storage: warm-up transaction ends here") // rolls it back
)

// wantWriter marks a write that wants the writer connection; Warm lets go of it at once
// (its transaction is rolled back). The returned function marks the write done.
func (w *warmState) wantWriter() func() {
	w.wanted.Add(1)
	w.mu.Lock()
	if w.holding != nil {
		w.holding(errYield)
	}
	w.mu.Unlock()
	return func() { w.wanted.Add(-1) }
}

// hold is ctx for a spell of Warm on the writer connection, cancelled as soon as a write
// wants the connection; ok is false while one does (then Warm waits: idle).
func (w *warmState) hold(ctx context.Context) (_ context.Context, release func(), ok bool) {
	hctx, cancel := context.WithCancelCause(ctx)
	w.mu.Lock()
	w.holding = cancel
	w.mu.Unlock()
	release = func() {
		w.mu.Lock()
		w.holding = nil
		w.mu.Unlock()
		cancel(nil)
	}
	// after holding is set: a write counted before is seen here, one counted after
	// cancels hctx (wantWriter)
	if w.wanted.Load() > 0 {
		release()
		return nil, nil, false
	}
	return hctx, release, true
}

// idle waits until no write wants the writer connection.
func (w *warmState) idle(ctx context.Context) error {
	for w.wanted.Load() > 0 {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(2 * time.Millisecond):
		}
	}
	return nil
}

// join counts a branch warm-up (WarmBranch) as running, so Close waits for it; ok is
// false when the store is closed.
func (w *warmState) join() (leave func(), ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, false
	}
	w.running.Add(1)
	return w.running.Done, true
}

// enter starts the store's one warm-up; ok is false when it has started before or the
// store is closed.
func (w *warmState) enter(ctx context.Context) (_ context.Context, leave func(), ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.started {
		return nil, nil, false
	}
	w.started = true
	w.running.Add(1)
	ctx, w.stop = context.WithCancelCause(ctx)
	return ctx, func() {
		w.mu.Lock()
		w.stop(nil)
		w.stop = nil
		w.mu.Unlock()
		w.running.Done()
	}, true
}

// close stops a warm-up under way and waits for it.
func (w *warmState) close() {
	w.mu.Lock()
	w.closed = true
	if w.stop != nil {
		w.stop(errWarmClosed)
	}
	w.mu.Unlock()
	w.running.Wait()
}

// maxWarmTries bounds how often Warm starts its transaction again after giving the
// writer to a write.
const maxWarmTries = 20

// Warm prepares what the first turn of this store would otherwise pay for: the
// statements a turn runs (storing it, and reading what sending it reads) on the writer
// connection and on a reader. It leaves nothing in the database; it is meant to run in
// the background as soon as a process knows it will run turns.
// It is safe beside anything else the store does, and never keeps the writer from a
// write: one that wants it makes Warm roll back and start again once it is done.
// Close stops it. Only the first call does anything; a read-only store has nothing to
// warm.
func (s *Store) Warm(ctx context.Context) error {
	if s.readOnly != "" || s.wc == nil {
		return nil
	}
	ctx, leave, ok := s.warm.enter(ctx)
	if !ok {
		return nil
	}
	defer leave()
	var reads *readRoute
	for try := 0; reads == nil || s.wc.pendingCount() > 0; try++ {
		if try > maxWarmTries {
			return fmt.Errorf("storage: warm up: %w", errYield)
		}
		if err := s.warm.idle(ctx); err != nil {
			return fmt.Errorf("storage: warm up: %w", err) // idle returns the cause
		}
		hctx, release, ok := s.warm.hold(ctx)
		if !ok {
			continue
		}
		var err error
		if reads == nil {
			var rt *readRoute
			if rt, err = s.warmTurns(hctx); err == nil {
				reads = rt
			}
		}
		if err == nil {
			s.wc.prepare(hctx, s.w)
		}
		yielded := errors.Is(context.Cause(hctx), errYield)
		release()
		if err != nil && !yielded {
			if ctx.Err() != nil {
				err = context.Cause(ctx) // stopped: Close, or the caller
			}
			return fmt.Errorf("storage: warm up: %w", err)
		}
	}
	s.r.prepare(ctx, reads.ran(false))
	s.prepareHot(ctx, reads)
	if ctx.Err() != nil {
		return fmt.Errorf("storage: warm up: %w", context.Cause(ctx))
	}
	return nil
}

// trial runs fn in a write transaction and rolls it back, whatever fn returns. With
// keep, what fn put in the write cache is kept when it returns nil: facts about rows
// that were there before it, which the rollback leaves (WarmBranch writes nothing).
func (s *Store) trial(ctx context.Context, keep bool, fn func(tx *wtx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("storage: begin: %w", err)
	}
	if err := s.wc.begin(ctx, tx); err != nil {
		tx.Rollback()
		return err
	}
	err = fn(&wtx{Tx: tx, wc: s.wc})
	tx.Rollback()
	s.wc.end(keep && err == nil)
	return err
}

// warmStep, when set (tests), is called as each made-up turn begins, with the
// transaction open.
var warmStep func(ctx context.Context, turn int)

// warmPath is the predictor path of the made-up calls (write cache keys derive from it).
const warmPath = "sessionbench.warm"

// warmRestore is how the Service reads a branch's turns to restore its session (as
// ui/sessions' sessionRead), warmPage how it reads a page of them for the workbench
// (pageRead).
var (
	warmRestore = LoadOptions{ValuesOnly: true}
	warmPage    = LoadOptions{NoRequests: true, NoHistories: true}
)

// warmTurns runs, in a write transaction it rolls back, what sending two turns runs on
// a new conversation: the first turn of a branch, then a turn following a stored one
// with the write cache cold (the first turn of a process; the turns after it run the
// same statements). It returns the reads it routed into the transaction; the writes are
// left for prepare.
func (s *Store) warmTurns(ctx context.Context) (*readRoute, error) {
	var reads *readRoute
	err := s.trial(ctx, false, func(tx *wtx) error {
		rctx, rt, end := s.r.route(ctx, tx.Tx)
		defer end()
		reads = rt
		conv := "warm-" + NewID()
		if err := s.importTx(ctx, tx, NewConversation{ID: conv, Agent: warmPath}, "{}", nil, nil, ""); err != nil {
			return err
		}
		sink := s.Sink(conv, MainBranch)
		defer s.wc.forget("h\x00" + warmPath)
		for i := range 2 {
			if i == 1 {
				// what a new process knows of the turn before: nothing
				s.wc.forgetStaged()
				s.wc.forget("h\x00" + warmPath)
			}
			if err := s.warmTurn(ctx, rctx, tx, sink, i); err != nil {
				return err
			}
		}
		return errWarmDone
	})
	if errors.Is(err, errWarmDone) {
		err = nil
	}
	return reads, err
}

// warmTurn runs turn i of warmTurns: what a Send reads to restore the branch and begin
// the turn (rctx: routed into tx), and the turn's commit (CommitTurn's, in tx).
func (s *Store) warmTurn(ctx, rctx context.Context, tx *wtx, sink *BranchSink, i int) error {
	if warmStep != nil {
		warmStep(ctx, i)
	}
	conv := sink.conv
	if _, err := s.ConversationAgent(rctx, conv); err != nil {
		return err
	}
	if _, _, err := s.BranchTip(rctx, conv, MainBranch); err != nil {
		return err
	}
	_, tip, total, err := s.BranchHead(rctx, conv, MainBranch)
	if err != nil {
		return err
	}
	if _, err := s.LoadBranchRangeAt(rctx, conv, MainBranch, tip, total, -2, 2, warmRestore); err != nil {
		return err
	}
	if br, ok := s.branchIDs.Load(branchKey(conv, MainBranch)); ok {
		// a long path's pack, read at a head (LoadPathValuesAt) or not: the made-up
		// branch is too short to have one
		for _, q := range []querier{s.hotReads(rctx), s.r} {
			if _, err := readPackRows(rctx, q, br.(int64), true); err != nil {
				return err
			}
		}
	}
	if _, _, err := s.BranchPathTail(rctx, conv, MainBranch, 2); err != nil {
		return err
	}
	page, err := s.LoadBranchRangeWith(rctx, conv, MainBranch, -2, 2, warmRestore)
	if err != nil {
		return err
	}
	if _, err := s.LoadTurnsWith(rctx, page.Keys, warmRestore); err != nil {
		return err
	}
	if _, _, _, err := s.BranchPathKeys(rctx, conv, MainBranch, -2, 2); err != nil {
		return err
	}
	if _, err := s.LoadTurnsWith(rctx, page.Keys, warmPage); err != nil {
		return err
	}
	br, err := sink.openBranch(rctx)
	if err != nil {
		return err
	}
	in := sig.NewMap("question", fmt.Sprintf("warm-up question %d", i))
	inJSON, err := jsonOf(in)
	if err != nil {
		return err
	}
	held, open, err := sink.readHeld(rctx, br.ID)
	if err != nil {
		return err
	}
	h, _, err := sink.header(rctx, held, open, inJSON.String, "")
	if err != nil {
		return err
	}
	if h.ID == 0 { // the made-up branch has none reserved yet: a block, as BeginTurn reserves
		if h.ID, err = branchBlock(ctx, tx, br.ID); err != nil {
			return err
		}
	}
	if h.Parent != 0 {
		loadBase(rctx, s.r, s.wc, h.Parent, warmPath) // RecordCall's seededCall, on a long history
	}
	c := warmCall(i)
	t := &trace.Turn{Index: i, Inputs: in, Outputs: c.Outputs, Calls: []*trace.Call{c}, Started: c.Started, Ended: now(),
		Attempts: []*trace.Attempt{{Step: warmPath, N: 1, Score: 1, Time: now(), Summary: "warm-up", Best: true,
			Details: c.Outputs, Calls: []string{c.ID}}}}
	if err := sink.commit(ctx, tx, &run{h: h, calls: []runCall{{Call: c}}}, t, nil); err != nil {
		return err
	}
	// what a process keeps for the next turn's first call (ui/sessions: KeepFirstCalls), and
	// what a new process reads of it
	fc := &FirstCall{Tip: turnKey(h.ID), Agent: warmPath, Path: warmPath, History: lm.ListOf(c.Messages.Slice())}
	if err := putFirstCall(ctx, tx, conv, MainBranch, fc, h.ID, "[]", "", 0); err != nil {
		return err
	}
	if _, _, err := s.FirstCall(rctx, conv, MainBranch); err != nil || i == 0 {
		return err
	}
	// what a prefetch runs (WarmBranch): the lists found by a hot read, cached in tx
	lists, err := branchLists(rctx, s.hotReads(rctx), conv, MainBranch, false)
	for _, l := range lists {
		if err != nil {
			break
		}
		err = cacheWarmList(ctx, s.wc, tx, l)
	}
	return err
}

// warmCall is the made-up call of turn i: a request repeating the one before with the
// next exchange, a history growing by an entry, and the HTTP bodies of a network model.
func warmCall(i int) *trace.Call {
	msgs := []lm.Message{{Role: "system", Content: "Your input fields are: `question`. Your output fields are: `answer`."}}
	var hist []*sig.Map
	for j := 0; j <= i; j++ {
		q := fmt.Sprintf("[[ ## question ## ]]\nwarm-up question %d", j)
		msgs = append(msgs, lm.Message{Role: "user", Content: q})
		if j < i {
			a := fmt.Sprintf("[[ ## answer ## ]]\nwarm-up answer %d\n\n[[ ## completed ## ]]", j)
			msgs = append(msgs, lm.Message{Role: "assistant", Content: a})
			hist = append(hist, sig.NewMap("question", fmt.Sprintf("warm-up question %d", j), "answer", fmt.Sprintf("warm-up answer %d", j)))
		}
	}
	completion := fmt.Sprintf("[[ ## answer ## ]]\nwarm-up answer %d\n\n[[ ## completed ## ]]", i)
	var body []byte
	for k, m := range msgs {
		if k > 0 {
			body = append(body, ',')
		}
		body = lm.AppendMessageJSON(body, m)
	}
	return &trace.Call{ID: fmt.Sprintf("t%d.c1", i), Path: warmPath, PredictorType: "Predict", Adapter: "chat", Model: "warm-up",
		Inputs:  sig.NewMap("question", fmt.Sprintf("warm-up question %d", i)),
		Outputs: sig.NewMap("answer", fmt.Sprintf("warm-up answer %d", i)),
		History: sig.History{Messages: hist}, Messages: lm.MessagesOf(msgs), Completion: completion,
		Usage:   lm.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15},
		Started: now(), Latency: time.Millisecond, Tries: []lm.Try{{N: 1}},
		RawRequest:  `{"model":"warm-up","messages":[` + string(body) + `],"stream":true}`,
		RawResponse: "data: {\"choices\":[{\"delta\":{\"content\":\"warm-up\"}}]}\n\ndata: [DONE]\n\n",
	}
}
