package core

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// The with_memory layer of dspy-session: lifespans with consolidation into L2 memory at
// the end of every root call, and the projection helpers a running module reads through
// its context (the reference's contextvars).

// active is one session running in a context, innermost first: the session, the history
// it runs on, and the session that called it. Projection helpers read it.
type active struct {
	s       *Session
	history sig.History
	outer   *active
}

type activeKey struct{}

func withActive(ctx context.Context, s *Session, h sig.History) context.Context {
	outer, _ := ctx.Value(activeKey{}).(*active)
	return context.WithValue(ctx, activeKey{}, &active{s: s, history: h, outer: outer})
}

func activeFrom(ctx context.Context) *active {
	a, _ := ctx.Value(activeKey{}).(*active)
	return a
}

func (a *active) root() *active {
	for a.outer != nil {
		a = a.outer
	}
	return a
}

// CurrentHistory is the history the innermost running session injected (the reference's
// get_current_history, and the history= a forward that asks for it receives): a Go program
// reads it here. ok is false outside a session's call.
func CurrentHistory(ctx context.Context) (h sig.History, ok bool) {
	a := activeFrom(ctx)
	if a == nil {
		return sig.History{}, false
	}
	return a.history, true
}

// OuterHistory is the root session's history during a call (get_outer_history).
func OuterHistory(ctx context.Context) (h sig.History, ok bool) {
	a := activeFrom(ctx)
	if a == nil {
		return sig.History{}, false
	}
	return a.root().history, true
}

// NodeMemory is the L2 memory of the innermost running session (get_node_memory); "" outside
// a call.
func NodeMemory(ctx context.Context) string {
	a := activeFrom(ctx)
	if a == nil {
		return ""
	}
	return a.s.L2Memory()
}

// ChildLedger is the ledger of a child session's turns during a call
// (get_child_l1_ledger): "- turn: i\n  inputs: {json}\n  outputs: {json}" per turn. path is
// the child's dotted path; "", "root" or "." name the root, a "root." prefix is dropped,
// and a path that ends exactly one child's path names that child. "" outside a call or for
// an unknown path.
func ChildLedger(ctx context.Context, path string) string {
	a := activeFrom(ctx)
	if a == nil {
		return ""
	}
	root := a.root().s
	var target *Session
	if path == "" || path == "root" || path == "." {
		target = root
	} else {
		target = resolveChild(root.sessionTree()[1:], path)
	}
	if target == nil {
		return ""
	}
	return ledger(target.Turns())
}

// resolveChild finds a child by exact path, then without a "root." prefix, then by a
// unique suffix.
func resolveChild(tree []namedSession, path string) *Session {
	for _, p := range []string{path, strings.TrimPrefix(path, "root.")} {
		for _, n := range tree {
			if n.path == p {
				return n.s
			}
		}
	}
	var found *Session
	for _, n := range tree {
		if strings.HasSuffix(n.path, path) {
			if found != nil {
				return nil
			}
			found = n.s
		}
	}
	return found
}

// ExecutionTrace summarises the session tree of the current call (get_execution_trace):
// "<name>: turns=N l2_chars=M" for the root and each child, then the running sessions as
// "active_stack=root > worker". "" outside a call.
func ExecutionTrace(ctx context.Context) string {
	a := activeFrom(ctx)
	if a == nil {
		return ""
	}
	tree := a.root().s.sessionTree()
	var lines []string
	names := map[*Session]string{}
	for _, n := range tree {
		names[n.s] = n.path
		lines = append(lines, fmt.Sprintf("%s: turns=%d l2_chars=%d", n.path, n.s.Len(), utf8.RuneCountInString(n.s.L2Memory())))
	}
	var stack []string
	for x := a; x != nil; x = x.outer {
		name, ok := names[x.s]
		if !ok {
			name = TypeName(x.s.Module())
		}
		stack = append([]string{name}, stack...)
	}
	lines = append(lines, "active_stack="+strings.Join(stack, " > "))
	return strings.Join(lines, "\n")
}

// namedSession is a session of a tree under its dotted path ("root" for the root).
type namedSession struct {
	path string
	s    *Session
}

// sessionTree lists the root, then every child session depth-first in discovery order,
// nested sessions' own children under their path.
func (s *Session) sessionTree() []namedSession {
	out := []namedSession{{"root", s}}
	var walk func(s *Session, prefix string)
	walk = func(s *Session, prefix string) {
		s.mu.Lock()
		children := append([]*child(nil), s.children...)
		s.mu.Unlock()
		for _, ch := range children {
			if ch.session == nil {
				continue
			}
			path := joinPath(prefix, ch.path)
			out = append(out, namedSession{path, ch.session})
			if ch.kind == childSession {
				walk(ch.session, path)
			}
		}
	}
	walk(s, "")
	return out
}

// ledger is the reference's _serialize_turns: the turns as a YAML-like list with JSON
// inputs and outputs.
func ledger(turns []*trace.Turn) string {
	lines := make([]string, 0, 3*len(turns))
	for _, t := range turns {
		lines = append(lines, fmt.Sprintf("- turn: %d", t.Index), "  inputs: "+py.JSON(orEmpty(t.Inputs)), "  outputs: "+py.JSON(orEmpty(t.Outputs)))
	}
	return strings.Join(lines, "\n")
}

func orEmpty(m *sig.Map) *sig.Map {
	if m == nil {
		return sig.NewMap()
	}
	return m
}

// L2Memory is the session's L2 memory (dspy-session's l2_memory): what its consolidator
// made of earlier episodes, or what a loaded file carried.
func (s *Session) L2Memory() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.l2
}

// SetL2Memory replaces the session's L2 memory.
func (s *Session) SetL2Memory(m string) {
	s.mu.Lock()
	s.l2 = m
	s.mu.Unlock()
}

// ConsolidatorError is the error of the last consolidation that failed (nil once one
// succeeds). A failing consolidator does not fail the call: as in the reference, the L2
// memory stays as it was and the episode's turns are cleared all the same.
func (s *Session) ConsolidatorError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.consolidateErr
}

// endChildren applies every child session's lifespan at the end of a root call, children
// first... the root is done by its caller, after it recorded its own turn.
func (s *Session) endChildren(ctx context.Context) {
	// sessionTree's order, without building the list (this runs every turn).
	s.mu.Lock()
	children := s.children // replaced whole or appended to, never changed in place
	s.mu.Unlock()
	for _, ch := range children {
		if ch.session == nil {
			continue
		}
		ch.session.applyLifespan(ctx)
		if ch.kind == childSession {
			ch.session.endChildren(ctx)
		}
	}
}

// applyLifespan ends an episode: an episodic session consolidates its turns into its L2
// memory and clears them; a stateless one clears them.
func (s *Session) applyLifespan(ctx context.Context) {
	s.mu.Lock()
	lifespan, cons := s.opts.Lifespan, s.opts.Consolidator
	if lifespan == LifespanPersistent || lifespan == "" {
		s.mu.Unlock()
		return
	}
	var turns []*trace.Turn
	if lifespan == LifespanEpisodic && cons != nil {
		for _, nd := range s.visible() {
			turns = append(turns, s.turnCopy(nd))
		}
	}
	past := s.l2
	s.mu.Unlock()
	var memory *string
	var err error
	if len(turns) > 0 {
		var pred *Prediction
		pred, err = consolidate(ctx, cons, sig.NewMap("past_memory", past, "episode_transcript", ledger(turns)))
		if err == nil {
			if v, ok := updatedMemory(pred); ok && v != nil {
				m := py.Str(v)
				memory = &m
			}
		}
	}
	s.mu.Lock()
	if memory != nil {
		s.l2 = *memory
	}
	if len(turns) > 0 {
		s.consolidateErr = err
	}
	s.tip, s.redo = nil, nil
	s.mu.Unlock()
}

// consolidate runs a consolidator outside any session (its call is no turn of anyone's);
// a panic is an error.
func consolidate(ctx context.Context, m Module, in *sig.Map) (p *Prediction, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("consolidator panicked: %v", r)
		}
	}()
	ctx = context.WithValue(ctx, frameKey{}, (*frame)(nil))
	ctx = context.WithValue(ctx, activeKey{}, (*active)(nil))
	p, err = m.Forward(ctx, in)
	if err == nil && p == nil {
		err = fmt.Errorf("consolidator returned no prediction")
	}
	if err != nil {
		return nil, fmt.Errorf("consolidator %s: %w", TypeName(m), err)
	}
	return p, nil
}

// updatedMemory picks the consolidator's answer as the reference does: the first of
// updated_memory, memory, l2_memory and output that the prediction has, else its first
// field.
func updatedMemory(p *Prediction) (any, bool) {
	for _, k := range []string{"updated_memory", "memory", "l2_memory", "output"} {
		if v, ok := p.Fields.Get(k); ok {
			return v, true
		}
	}
	if keys := p.Fields.Keys(); len(keys) > 0 {
		v, _ := p.Fields.Get(keys[0])
		return v, true
	}
	return nil, false
}
