package sessions

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sessionbench/sessionbench/llm"
	"github.com/sessionbench/sessionbench/storage"
)

// Warming up: the first turn of a process pays for what later turns find ready, SQLite's
// parsing of the turn's statements and the write cache's copy of the branch's stored
// requests (storage.Warm, storage.WarmBranch). They are done in the background while
// something else is waited for: the workbench warms the store at start and a branch
// while the user types on it (Prefetch). A turn nobody prefetched for (`run`, `session
// retry`, a first turn sent at once) warms the store as its first model call begins (a
// moment after: warmAfter), so that it runs while the model thinks, and of its branch
// only the small calls' lists (storage.WarmBranchSmall): each larger call is seeded
// against the stored turn before as it begins (storage.BranchSink.PrepareCall), which
// puts in the cache what the commit needs of its request and history for a fraction of
// reading them back (BenchmarkBeyondModel: a whole branch's warm-up took 45 ms of CPU at
// 1,000 turns, and beside a 30 ms model the commit waited for it). Not earlier: beside
// the session's restore and the request's last steps they would slow them down on a
// two-core machine, and a turn that never reaches its model has nothing to commit.
// `run` restores its branch's session ahead all the same (RestoreAhead), while it reads
// its own setup: that is work its first Send would do before its model call.

// warmed is what a Service has warmed up.
type warmed struct {
	store    atomic.Bool
	mu       sync.Mutex
	branches map[string]bool // conv + "\x00" + branch
	// atCall is what the caller gave SetCallWarmUp, run with the store's warm-up.
	atCall func()
	// connecting counts the preconnects under way (tests wait for them: a Send begun
	// before one answered opens a connection of its own).
	connecting sync.WaitGroup
}

// SetCallWarmUp has f run once, in the background, with the store's warm-up: a moment
// after the Service's first model call begins, while the model thinks. It is for what a
// process needs only once a model has answered, the token counter's tables above all
// (llm.PreloadEncodings: about 170 ms of CPU and 35 MB allocated, which beside a first
// Send's restore slowed it by half a millisecond on two cores). Call it before use.
func (a *Service) SetCallWarmUp(f func()) { a.warm.atCall = f }

// branch marks the branch as warmed, and says whether it was not before.
func (w *warmed) branch(conv, branch string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := conv + "\x00" + branch
	if w.branches[k] {
		return false
	}
	if w.branches == nil {
		w.branches = map[string]bool{}
	}
	w.branches[k] = true
	return true
}

// warmAtCall starts, in the background, the warm-ups that a turn's call on the branch
// finds not done yet: the store's (once a Service) and the branch's small calls' lists
// (once a branch, unless Prefetch warmed it whole), and the branch's path pack when its
// restore made one (storage/pathvalues.go), while the model thinks. It is called as each
// call begins; after the first it only looks the branch up. They start warmAfter later.
func (a *Service) warmAtCall(ctx context.Context, conv, branch string) {
	ctx = context.WithoutCancel(ctx) // the store's Close stops them; a turn's end does not
	if a.warm.store.CompareAndSwap(false, true) {
		time.AfterFunc(warmAfter, func() {
			if f := a.warm.atCall; f != nil {
				go f()
			}
			a.store.Warm(ctx)
		})
	}
	switch {
	case conv == "":
	case a.warm.branch(conv, branch):
		time.AfterFunc(warmAfter, func() { a.store.WarmBranchSmall(ctx, conv, branch) }) // and writes the branch's path pack
	case a.store.PathPackPending(conv, branch):
		time.AfterFunc(warmAfter, func() { a.store.WritePathPack(ctx, conv, branch) })
	}
}

// warmAfter is how long after a call begins its warm-ups start: once its request is on
// its way (formatting and sending it take a fraction of that), while the model thinks
// (tens of milliseconds at the least). Started at once, beside the request's last steps,
// they slowed the first Send of a process by about 0.9 ms on a two-core machine
// (BenchmarkBeyondModel run: 3.3 -> 2.4 ms beyond the model).
const warmAfter = 2 * time.Millisecond

// Prefetch readies the branch for its next turn, so that the Send does not wait for it:
// it opens the model's connection (preconnect), restores and keeps the session (as a
// Send would) with its histories rendered (core.Session.RenderAhead), opens the
// branch's journal for the turn's lock (storage.OpenJournal) and puts the tip turn's
// stored requests in the store's write cache (storage.WarmBranch). The workbench calls
// it when the user starts typing. Errors are left for the Send to report.
func (a *Service) Prefetch(ctx context.Context, conv, branch string) {
	a.preconnect(ctx)
	if a.readyTurn(ctx, conv, branch) && a.warm.branch(conv, branch) {
		a.store.WarmBranch(ctx, conv, branch)
	}
}

// RestoreAhead does in the background what a Send does before its turn begins: it
// locks the branch for the turn (storage.TurnHold: the branch as read under the lock
// is the branch the turn follows) and restores its session from what it read, then
// renders the session's histories (core.Session.RenderAhead) beside the Send. The
// branch's next Send takes both over, waiting for them if need be, and neither locks
// nor reads the branch again. `sessionbench run` calls it as soon as it has opened
// the store, so that this runs while it reads the conversation, the agent and the
// inputs. wait waits for it to end (the rendering too, and a call CallAhead made,
// cancelled if no turn took it) and lets the branch go if no Send took the hold;
// what goes wrong is left for the Send to report. The write
// cache's warm-up (on a long branch tens of milliseconds of CPU) is left to the turn's
// model call (warmAtCall). With callAhead, it first reads what the branch's last turn
// left for the next turn's first call (speculate.go), which CallAhead then sends.
func (a *Service) RestoreAhead(ctx context.Context, conv, branch string, callAhead bool) (wait func()) {
	a.preconnect(ctx)
	ah := &aheadTurn{done: make(chan struct{}), rendered: make(chan struct{}), first: newFirstAhead()}
	k := conv + "\x00" + branch
	a.mu.Lock()
	if a.aheads == nil {
		a.aheads = map[string]*aheadTurn{}
	}
	a.aheads[k] = ah
	a.mu.Unlock()
	go func() {
		defer close(ah.rendered)
		// the collector waits, over the read and the restore (gcpause.go)
		defer pauseGC()()
		if callAhead {
			ah.first.read(ctx, a, conv, branch)
		} else {
			close(ah.first.ready) // nothing to call ahead with
		}
		l := func() *liveSession {
			defer close(ah.done)
			hold, err := a.store.Sink(conv, branch).Hold(ctx)
			if err != nil {
				return nil // busy, or no such branch: the Send says so
			}
			_, _, l, err := a.liveStateAt(ctx, conv, branch, false, false, hold)
			if err != nil {
				hold.Release()
				return nil
			}
			ah.hold = hold
			return l
		}()
		if l != nil {
			// beside the Send, which need not wait for it: its first call finds its
			// history rendered, or some of it, and the next calls all of theirs
			l.run.s.RenderAhead()
		}
	}()
	// Let the restore start now, on this thread. Otherwise it waits in this thread's
	// run queue for another thread to wake and take it, or for the caller to block: a
	// `sessionbench run` measured it starting 0.2-2 ms late, often only when its Send
	// began waiting for it (10 µs with this).
	runtime.Gosched()
	return func() {
		<-ah.done
		a.mu.Lock()
		if a.aheads[k] == ah {
			delete(a.aheads, k)
		}
		a.mu.Unlock()
		if ah.hold != nil {
			ah.hold.Release() // a no-op once a turn took it over
		}
		<-ah.rendered
		<-ah.first.ready
		if sp := ah.first.call(); sp != nil {
			// cancelled when no Send took it or the turn sent its own (a model ends a
			// cancelled call at once: lm.LM), and ended before the caller goes on
			sp.abandon()
			<-sp.done
		}
	}
}

// preconnect opens the model's connection to its server in the background, when the
// model has one (llm.OpenAI.Preconnect): the turn about to be sent then does not wait
// for DNS, TCP and TLS.
func (a *Service) preconnect(ctx context.Context) {
	if p, ok := a.model.(llm.Preconnecter); ok {
		a.warm.connecting.Add(1)
		go func() {
			defer a.warm.connecting.Done()
			p.Preconnect(ctx)
		}()
	}
}

// aheadTurn is a RestoreAhead in progress or done: hold is set (before done is
// closed) when it holds the branch with its session restored; rendered is closed once
// the session's histories are rendered too.
type aheadTurn struct {
	done     chan struct{}
	rendered chan struct{}
	hold     *storage.TurnHold
	// first is the branch's FirstCall, read before the restore, and the call CallAhead
	// made from it (speculate.go)
	first *firstAhead
}

// holdTurn locks the branch for a Send's turn: the hold RestoreAhead took, once it is
// done, or a new one; with the call CallAhead made for the turn, if it made one.
func (a *Service) holdTurn(ctx context.Context, conv, branch string) (*storage.TurnHold, *speculation, error) {
	k := conv + "\x00" + branch
	a.mu.Lock()
	ah := a.aheads[k]
	delete(a.aheads, k)
	a.mu.Unlock()
	var spec *speculation
	if ah != nil {
		spec = ah.first.call()
		select {
		case <-ah.done:
		case <-ctx.Done():
			return nil, spec, ctx.Err()
		}
		if ah.hold != nil {
			return ah.hold, spec, nil
		}
	}
	hold, err := a.store.Sink(conv, branch).Hold(ctx)
	return hold, spec, err
}

// readyTurn restores and keeps the branch's session and opens its journal, and says
// whether it could.
func (a *Service) readyTurn(ctx context.Context, conv, branch string) bool {
	_, _, l, err := a.liveState(ctx, conv, branch, false, false)
	if err != nil {
		return false
	}
	a.store.OpenJournal(conv, branch)
	l.run.s.RenderAhead()
	return true
}
