package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/savefile"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// node is one recorded turn in an immutable chain. A session is a pointer to its tip;
// fork copies the pointer and undo moves it back, so both are O(1) and share the prefix.
type node struct {
	turn   *trace.Turn
	parent *node
	depth  int      // number of turns from the root to here, this one included
	msg    *sig.Map // the history message this turn contributes (filtered inputs + outputs)
	log    *msgLog  // holds msg at depth-1, after every ancestor's (see msgLog)
	// kids holds every child session's tip right after this turn, by child path (root
	// sessions only): moving this session's tip to a node restores all children exactly
	// (cascades), and forks share nodes because paths, unlike sessions, do not change.
	kids kidTips
}

// Session wraps a module, records one turn per user-facing call and injects the history
// into every predictor inside it (seed 001), recursively when asked (seed 000).
// It is safe for concurrent use; turns are recorded one at a time per session.
type Session struct {
	mu      sync.Mutex
	module  Module
	opts    Options
	name    string
	filters // what of a turn goes into its history message
	seed    sig.History
	tip     *node
	redo    []*node
	// children, keyed by the wrapped module (predictor, sub-module or nested session).
	children []*child
	byModule map[Module]*child
	// baseKids holds the children's tips before this session's first turn.
	baseKids kidTips
	isChild  bool // created by a recursive parent (its turns are the parent's business)
	// scores overlays metric scores on the shared, immutable turn records.
	scores map[*trace.Turn]float64
	// turnMu serialises whole root turns so each outer turn sees a stable state.
	turnMu sync.Mutex
	// l2 is the session's L2 memory (dspy-session's l2_memory).
	l2 string
	// base is the depth before the first turn pushed (RestoreTail: the turns of the
	// branch it leaves out); exactFrom is the first turn index whose history HistoryAt
	// knows (0 unless restored from a tail).
	base, exactFrom int
	partial         bool // restored from a tail of its branch
	// fileNodes are node states a loaded file had for children this session does not
	// have (or, for a child, for its own children); Save writes them back.
	fileNodes []savefile.Node
	// consolidateErr is the last consolidation's failure (ConsolidatorError).
	consolidateErr error
	// wire holds, per predictor path, the requests recorded so far (*lm.MessageLog):
	// a RecordAll session's next request shares their runs (recordedRequest).
	wire sync.Map
}

// Sessionify wraps module in a session.
func Sessionify(module Module, opts Options) (*Session, error) {
	if module == nil {
		return nil, fmt.Errorf("sessionify: module is nil")
	}
	o, err := opts.normalize()
	if err != nil {
		return nil, fmt.Errorf("sessionify: %w", err)
	}
	s := &Session{module: module, opts: o, byModule: map[Module]*child{}}
	s.name = o.Name
	if s.name == "" {
		s.name = TypeName(module)
	}
	s.filters = newFilters(s.opts)
	if o.InitialHistory != nil {
		s.seed = o.InitialHistory.Clone()
	}
	if err := s.discover(); err != nil {
		return nil, fmt.Errorf("sessionify %s: %w", s.name, err)
	}
	return s, nil
}

// MustSessionify is Sessionify for options known to be valid.
func MustSessionify(module Module, opts Options) *Session {
	s, err := Sessionify(module, opts)
	if err != nil {
		panic(err)
	}
	return s
}

// Module returns the wrapped module.
func (s *Session) Module() Module {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.module
}

// Name is the session's label (its path for children).
func (s *Session) Name() string { return s.name }

// Options returns the normalised options.
func (s *Session) Options() Options { return s.opts }

// HistoryField is the name of the injected history input.
func (s *Session) HistoryField() string { return s.opts.HistoryField }

// TypeName shows a session as Session(<module type>).
func (s *Session) TypeName() string { return "Session(" + TypeName(s.module) + ")" }

// String is the reference's repr: Session(Predict, turns=3, history_field='history').
func (s *Session) String() string {
	name := "Session"
	if _, nested := s.Module().(*Session); !nested {
		name = TypeName(s.Module())
	}
	return fmt.Sprintf("Session(%s, turns=%d, history_field='%s')", name, s.Len(), s.opts.HistoryField)
}

// Len is the number of stored turns.
func (s *Session) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.storedCount()
}

// storedCount is the number of visible turns (max_stored_turns trims the oldest).
func (s *Session) storedCount() int {
	if s.tip == nil {
		return 0
	}
	n := s.tip.depth
	if m := s.opts.MaxStoredTurns; m != nil && n > *m {
		n = *m
	}
	return n
}

// Turns returns the stored turns, oldest first (copies of the records).
func (s *Session) Turns() []*trace.Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	nodes := s.visible()
	out := make([]*trace.Turn, len(nodes))
	for i, n := range nodes {
		out[i] = s.turnCopy(n)
	}
	return out
}

// Turn returns the stored turn at position i (negative counts from the end), or nil.
func (s *Session) Turn(i int) *trace.Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.storedCount()
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		return nil
	}
	nd := s.tip
	for k := n - 1; k > i && nd != nil; k-- {
		nd = nd.parent
	}
	if nd == nil {
		return nil // before the turns a RestoreTail holds
	}
	return s.turnCopy(nd)
}

// HistoryAt is the history the stored turn at position i ran with (negative counts from
// the end): Turn(i).History without copying it. The messages are shared with the
// session, which never changes them; the caller must not either.
func (s *Session) HistoryAt(i int) (sig.History, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.storedCount()
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n || i < s.exactFrom {
		return sig.History{}, false
	}
	nd := s.tip
	for k := n - 1; k > i && nd != nil; k-- {
		nd = nd.parent
	}
	if nd == nil {
		return sig.History{}, false
	}
	return nd.turn.History, true
}

// turnCopy copies a node's turn with this session's score (caller holds s.mu).
func (s *Session) turnCopy(nd *node) *trace.Turn {
	t := nd.turn.Share()
	if v, ok := s.scores[nd.turn]; ok {
		t.Score = &v
	}
	return t
}

// visible returns the stored nodes oldest first (those it holds, after a RestoreTail).
func (s *Session) visible() []*node {
	n := s.storedCount()
	out := make([]*node, 0, n)
	for nd := s.tip; nd != nil && len(out) < n; nd = nd.parent {
		out = append(out, nd)
	}
	slices.Reverse(out)
	return out
}

// History is the history the next call would see (seed + stored turns, windowed).
func (s *Session) History() sig.History {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buildHistory(nil)
}

// nextIndex is the index the next turn gets.
func (s *Session) nextIndex() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tip != nil {
		return s.tip.turn.Index + 1
	}
	return 0
}

// appendTurn records a turn on this session (caller holds no lock).
func (s *Session) appendTurn(t *trace.Turn, kids kidTips) *trace.Turn {
	s.mu.Lock()
	next := 0
	if s.tip != nil {
		next = s.tip.turn.Index + 1
	}
	t.Index = next
	s.tip = newNode(s.tip, 0, t, s.message(t.Inputs, t.Outputs), kids)
	s.redo = nil
	hook := s.opts.OnTurn
	s.mu.Unlock()
	if hook != nil {
		func() {
			defer func() { _ = recover() }() // a failing hook never fails the call (dspy-session logs it)
			hook(s, t.Share())
		}()
	}
	return t
}

// Forward runs one turn. Called inside another session's turn, it follows the outer
// session's nested policy instead.
func (s *Session) Forward(ctx context.Context, inputs *sig.Map) (*Prediction, error) {
	if f := frameFrom(ctx); f != nil {
		return s.forwardNested(ctx, f, inputs)
	}
	p, _, _, err := s.forwardRoot(ctx, inputs, nil, "")
	return p, err
}

// Run is Forward that also returns the recorded turn (nil when nothing was recorded).
// A turn that fails, is cancelled or interrupted is returned with the error: not in the
// session (only completed turns enter history), with its Status, Error and the calls it
// made, as the sink kept it. So is a turn whose commit to the sink failed.
func (s *Session) Run(ctx context.Context, inputs *sig.Map) (*Prediction, *trace.Turn, error) {
	if f := frameFrom(ctx); f != nil {
		p, err := s.forwardNested(ctx, f, inputs)
		return p, nil, err
	}
	p, t, _, err := s.forwardRoot(ctx, inputs, nil, "")
	return p, t.Share(), err // the caller's copy (Forward makes none)
}

// forwardRoot runs a turn on this session's own state. parent, when set, is the frame of
// an enclosing session (keep policy): calls are still traced there.
//
// It returns the prediction, the recorded turn (nil when nothing was recorded; a
// completed one is the session's own record, which the caller copies before handing it
// out) and the call records collected, which an enclosing session also traces.
func (s *Session) forwardRoot(ctx context.Context, inputs *sig.Map, parent *frame, prefix string) (*Prediction, *trace.Turn, []*trace.Call, error) {
	s.turnMu.Lock()
	defer s.turnMu.Unlock()
	// raw is the caller's value: every use below copies it.
	raw, hasExplicit := inputs.Get(s.opts.HistoryField)
	in := copyMap(inputs, func(k string) bool { return k != s.opts.HistoryField }, "", nil)
	var explicit *sig.History
	if hasExplicit && raw != nil {
		h, ok := raw.(sig.History)
		if !ok {
			return nil, nil, nil, fmt.Errorf("session %s: %s must be a History, got %s", s.name, s.opts.HistoryField, sig.KindName(raw))
		}
		explicit = &h
	}

	f := &frame{root: s, parent: parent, record: s.opts.Record != RecordTurns, prefix: prefix, seq: new(atomic.Int64)}
	if parent != nil {
		f.record = f.record || parent.record
		f.seq = parent.seq
	}
	s.mu.Lock()
	switch {
	case explicit != nil && s.opts.HistoryPolicy == Override:
		f.history = explicit.Clone()
		f.readonly, f.record = true, false
		f.replay = s.findReplay(f.history)
	case explicit != nil && s.opts.HistoryPolicy == UseIfProvided:
		f.history = explicit.Clone()
		f.explicit = true
	case explicit != nil && s.opts.HistoryPolicy == ReplaceSession:
		s.seed = explicit.Clone()
		s.tip, s.redo = nil, nil
		f.history = s.buildHistory(nil)
		f.explicit = true
	default:
		f.history = s.buildHistory(nil)
	}
	f.start = s.childTips()
	s.mu.Unlock()

	started := time.Now().UTC()
	var turnKey string
	sink := s.opts.Sink
	if f.readonly || s.isChild || s.opts.Lifespan == LifespanStateless {
		sink = nil
	}
	if sink != nil {
		k, err := sink.BeginTurn(ctx, in)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("session %s: begin turn: %w", s.name, err)
		}
		turnKey = k
		f.sink, f.turnKey = sink, turnKey
	} else if parent != nil && !f.readonly {
		// A nested session without a sink of its own records its calls into the enclosing
		// turn the moment they end, as the outer session's own calls are: a failing inner
		// call must not wait for a commit that never comes.
		f.sink, f.turnKey = parent.sink, parent.turnKey
	}
	fctx := withFrame(ctx, f)
	fctx = withCollector(fctx, &collector{})
	fctx = withActive(fctx, s, f.history)
	var attempts *attemptList
	if parent == nil && !f.readonly {
		attempts = &attemptList{} // nested turns file their attempts into this outer one
		fctx = withAttempts(fctx, attempts)
	}
	pred, err := Call(fctx, s.module, in)
	if err == nil && pred == nil {
		err = fmt.Errorf("module returned no prediction")
	}
	// A root call ends every child's episode, also when it failed (dspy-session's
	// finalizer); an override replay changes nothing.
	endsEpisode := parent == nil && !f.readonly
	if err != nil {
		if endsEpisode {
			s.endChildren(ctx)
		}
		// A turn that did not complete stays out of the session (its persistent children
		// included), but the sink keeps it as far as it went, with every call it made.
		s.mu.Lock()
		s.restorePersistentChildTips(f.start)
		s.mu.Unlock()
		if endsEpisode {
			s.applyLifespan(ctx)
		}
		err = fmt.Errorf("session %s: %w", s.name, err)
		// The calls go up too: an enclosing session traces a nested one's calls, the
		// failing one included.
		calls := collectorFrom(fctx).sorted()
		if f.readonly {
			return nil, nil, calls, err
		}
		t := &trace.Turn{
			Index:   s.nextIndex(),
			Inputs:  s.recordableInputs(in),
			History: f.history, Explicit: f.explicit,
			Calls: calls, Attempts: attempts.items(),
			Started: started, Ended: time.Now().UTC(),
			Status: trace.EndStatus(ctx, err), Error: err.Error(),
		}
		if s.opts.Record == RecordTurns {
			t.Calls = nil
		}
		if sink != nil {
			if aerr := sink.AbortTurn(context.WithoutCancel(ctx), turnKey, t.Share()); aerr != nil {
				err = fmt.Errorf("%w (and keeping the %s turn failed: %w)", err, t.Status, aerr)
			}
		}
		return nil, t, calls, err
	}
	calls := collectorFrom(fctx).sorted()
	if f.readonly {
		return pred, nil, calls, nil
	}
	if endsEpisode {
		s.endChildren(ctx)
	}
	if s.opts.Lifespan == LifespanStateless {
		return pred, nil, calls, nil // records nothing
	}
	t := &trace.Turn{
		Inputs:   s.recordableInputs(in),
		Outputs:  cloneMap(pred.Fields),
		History:  f.history,
		Explicit: f.explicit,
		Calls:    calls,
		Attempts: attempts.items(),
		Started:  started,
		Ended:    time.Now().UTC(),
		Status:   trace.StatusCompleted,
	}
	if t.Outputs == nil {
		t.Outputs = sig.NewMap()
	}
	if s.opts.Record == RecordTurns {
		t.Calls = nil
	}
	s.mu.Lock()
	kids := s.childTips()
	s.mu.Unlock()
	// The turn enters the session once the sink has it: a session never holds a turn its
	// store does not.
	t.Index = s.nextIndex()
	if sink != nil {
		if err := sink.CommitTurn(context.WithoutCancel(ctx), turnKey, t.Share()); err != nil {
			// The sink has ended the turn anyway (trace.Sink): kept beside the branch as
			// failed, or interrupted when even that could not be written. Like any turn
			// that did not complete, it stays out of the session.
			s.mu.Lock()
			s.restorePersistentChildTips(f.start)
			s.mu.Unlock()
			err = fmt.Errorf("session %s: commit turn %d: %w", s.name, t.Index, err)
			t.Status, t.Error = trace.StatusFailed, err.Error()
			if errors.Is(err, trace.ErrInterrupted) {
				t.Status = trace.StatusInterrupted
			}
			if endsEpisode {
				s.applyLifespan(ctx)
			}
			return nil, t, calls, err
		}
	}
	t = s.appendTurn(t, kids)
	if endsEpisode {
		s.applyLifespan(ctx) // an episodic root consolidates its own turn too
	}
	return pred, t, calls, nil
}

// recordableInputs keeps a root predictor's signature inputs only (dspy-session), and every
// input otherwise; the history field never.
func (s *Session) recordableInputs(in *sig.Map) *sig.Map {
	if p, ok := s.module.(*Predict); ok {
		return copyMap(in, func(k string) bool {
			_, isIn := p.Signature.Input(k)
			return isIn && k != s.opts.HistoryField
		}, "", nil)
	}
	return copyMap(in, func(k string) bool { return k != s.opts.HistoryField }, "", nil)
}

// findReplay finds the latest stored turn whose snapshot equals h, so keep-children can be
// shown their history as it was at that turn (optimizer time-travel, seed 000 §7).
func (s *Session) findReplay(h sig.History) *node {
	for nd := s.tip; nd != nil; nd = nd.parent {
		if py.Same(nd.turn.History, h) {
			return nd
		}
	}
	return nil
}
