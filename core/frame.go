package core

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// frame is the active-session context of one turn: Go's form of the seed's contextvar.
// Predictors find it in the context and ask its session what history they see.
type frame struct {
	root     *Session
	parent   *frame
	history  sig.History // this turn's history (what inherit children see)
	explicit bool
	record   bool // collect call records
	readonly bool // override replay: nothing anywhere is mutated
	replay   *node
	start    kidTips // children's tips when the turn began (per_turn scope, rollback)
	sink     trace.Sink
	turnKey  string
	prefix   string        // path of a nested session; its predictors' paths hang below it
	seq      *atomic.Int64 // shared by nested frames so call ids stay unique within a turn
}

// next returns the next call sequence number of the turn.
func (f *frame) next() int64 { return f.seq.Add(1) }

func joinPath(prefix, local string) string {
	switch {
	case prefix == "":
		return local
	case local == "":
		return prefix
	}
	return prefix + "." + local
}

type frameKey struct{}

func withFrame(ctx context.Context, f *frame) context.Context {
	return context.WithValue(ctx, frameKey{}, f)
}

func frameFrom(ctx context.Context) *frame {
	f, _ := ctx.Value(frameKey{}).(*frame)
	return f
}

// outerHistoryFrom returns the outermost active session's history (template strategies
// 4 and 5 render it), or nil outside a session.
func outerHistoryFrom(ctx context.Context) *sig.History {
	f := frameFrom(ctx)
	if f == nil {
		return nil
	}
	for f.parent != nil {
		f = f.parent
	}
	h := f.history
	return &h
}

// collector gathers the call records made under one scope (a turn, or a module-level
// call whose inner calls become its children). Safe for concurrent use.
type collector struct {
	mu    sync.Mutex
	calls []seqCall
}

type seqCall struct {
	seq  int64
	call *trace.Call
}

type collectorKey struct{}

func withCollector(ctx context.Context, c *collector) context.Context {
	return context.WithValue(ctx, collectorKey{}, c)
}

func collectorFrom(ctx context.Context) *collector {
	c, _ := ctx.Value(collectorKey{}).(*collector)
	return c
}

func (c *collector) add(seq int64, call *trace.Call) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.calls = append(c.calls, seqCall{seq, call})
	c.mu.Unlock()
}

// sorted returns the calls in start order; concurrent calls are thus recorded
// deterministically by when they began, not when they finished.
func (c *collector) sorted() []*trace.Call {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	slices.SortStableFunc(c.calls, func(a, b seqCall) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]*trace.Call, len(c.calls))
	for i, sc := range c.calls {
		out[i] = sc.call
	}
	return out
}

type childKind int

const (
	childPredictor childKind = iota // a predictor wrapped by a recursive session
	childModule                     // a sub-module wrapped (recursive="modules")
	childSession                    // a pre-sessionified session found inside the module
	childExcluded                   // a predictor left out: no history injected
)

// child is one wrapped part of a session's module tree.
type child struct {
	path    string
	kind    childKind
	module  Module
	session *Session // own state (nil for excluded predictors)
	nested  NestedPolicy
	scope   Scope
	effSig  *sig.Signature // predictor signature with the history field added
}

// discover walks the module tree: nested sessions always (for the nested policy), and
// predictors or modules when recursive.
func (s *Session) discover() error {
	o := s.opts
	var err error
	walk(s.module, "", func(path string, m Module) {
		if err != nil {
			return
		}
		copts, nested, disabled := o.childOptions(path)
		ch := &child{path: path, module: m, nested: nested, scope: copts.InnerScope}
		switch mm := m.(type) {
		case *Session:
			ch.kind, ch.session = childSession, mm
		case *Predict:
			if o.Recursive == NotRecursive {
				return
			}
			wrapped := !disabled && (o.Include == nil || matchesAny(o.Include, path)) &&
				!matchesAny(o.Exclude, path) && (o.Where == nil || o.Where(path, m))
			if !wrapped {
				ch.kind = childExcluded
				break
			}
			ch.kind = childPredictor
			ch.effSig = withHistoryField(mm.Signature, o.HistoryField)
			copts.HistoryField = ch.effSig.HistoryField()
			ch.session, err = newChildSession(m, copts)
		default:
			if o.Recursive != Modules || disabled || (o.Include != nil && !matchesAny(o.Include, path)) ||
				matchesAny(o.Exclude, path) || (o.Where != nil && !o.Where(path, m)) {
				return
			}
			ch.kind = childModule
			ch.session, err = newChildSession(m, copts)
		}
		s.children = append(s.children, ch)
		s.byModule[m] = ch
	})
	if err != nil {
		return err
	}
	s.baseKids = s.childTips()
	return nil
}

func newChildSession(m Module, o Options) (*Session, error) {
	cs, err := Sessionify(m, o)
	if err != nil {
		return nil, err
	}
	cs.isChild = true
	cs.children, cs.byModule = nil, map[Module]*child{} // the parent routes everything
	cs.baseKids = nil
	return cs, nil
}

// withHistoryField appends the history input LAST with dspy-session's description, unless
// the signature already has a History-typed input (whose name is then used).
func withHistoryField(s *sig.Signature, name string) *sig.Signature {
	if s.HistoryField() != "" {
		return s
	}
	return s.AppendInput(sig.Field{Name: name, Desc: "Conversation history", Type: sig.THistory})
}

func (s *Session) childFor(m Module) *child {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byModule[m]
}

// childTips snapshots every child session's tip (caller holds s.mu).
func (s *Session) childTips() kidTips {
	if len(s.children) == 0 {
		return nil
	}
	tips := make(kidTips, 0, len(s.children))
	for _, ch := range s.children {
		if ch.session != nil {
			ch.session.mu.Lock()
			tips = append(tips, kidTip{ch.path, ch.session.tip})
			ch.session.mu.Unlock()
		}
	}
	return tips
}

// kidTips is each child session's tip at one moment, by child path (a node's kids). A
// session has a handful of children: a slice searched in order holds them in a fifth of
// a map's bytes, and a restore keeps one per turn.
type kidTips []kidTip

type kidTip struct {
	path string
	tip  *node
}

// get is the tip of the child at path, nil for none (the last one given, as a map's
// assignment would keep).
func (ks kidTips) get(path string) *node {
	for i := len(ks) - 1; i >= 0; i-- {
		if ks[i].path == path {
			return ks[i].tip
		}
	}
	return nil
}

// restoreChildTips moves every child back to the given tips (caller holds s.mu).
func (s *Session) restoreChildTips(tips kidTips) {
	for _, ch := range s.children {
		if ch.session == nil {
			continue
		}
		ch.session.mu.Lock()
		ch.session.tip = tips.get(ch.path)
		ch.session.redo = nil
		ch.session.mu.Unlock()
	}
}

// restorePersistentChildTips moves the persistent children back to the given tips (caller
// holds s.mu); episodic and stateless ones end their episode instead.
func (s *Session) restorePersistentChildTips(tips kidTips) {
	for _, ch := range s.children {
		if ch.session == nil {
			continue
		}
		ch.session.mu.Lock()
		if ch.session.opts.Lifespan == LifespanPersistent {
			ch.session.tip = tips.get(ch.path)
			ch.session.redo = nil
		}
		ch.session.mu.Unlock()
	}
}

// kidsBefore returns the children's tips as they were before turn nd.
func (s *Session) kidsBefore(nd *node) kidTips {
	if nd.parent != nil {
		return nd.parent.kids
	}
	return s.baseKids
}
