package core

import (
	"time"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// AddTurn appends a turn by hand; its snapshot is the current history. It does not fire
// on_turn (as in dspy-session).
func (s *Session) AddTurn(inputs, outputs *sig.Map) *trace.Turn {
	s.mu.Lock()
	h := s.buildHistory(nil)
	hook := s.opts.OnTurn
	s.opts.OnTurn = nil
	s.mu.Unlock()
	now := time.Now().UTC()
	t := s.appendTurn(&trace.Turn{Inputs: inputs.Clone(), Outputs: outputs.Clone(), History: h, Started: now, Ended: now}, s.tipKids())
	s.mu.Lock()
	s.opts.OnTurn = hook
	s.mu.Unlock()
	return t.Share()
}

// tipKids is the children's current tips (a hand-added turn leaves them where they are).
func (s *Session) tipKids() kidTips {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.childTips()
}

// PopTurn removes and returns the last turn, or nil when there is none.
func (s *Session) PopTurn() *trace.Turn {
	undone := s.Undo(1, false)
	if len(undone) == 0 {
		return nil
	}
	return undone[0]
}

// Undo removes up to steps turns and returns them most recent first. With cascade the
// children return to exactly where they were before the first undone turn. Undone turns
// can be brought back with Redo until a new turn is recorded.
func (s *Session) Undo(steps int, cascade bool) []*trace.Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*trace.Turn
	for i := 0; i < steps && s.storedCount() > 0; i++ {
		if s.tip.parent == nil && s.tip.depth > 1 {
			break // the first turn a RestoreTail holds: what came before it is not here
		}
		out = append(out, s.turnCopy(s.tip)) // with its score, as the reference's popped turn
		s.redo = append(s.redo, s.tip)
		s.tip = s.tip.parent
	}
	if cascade && len(out) > 0 {
		s.restoreChildTips(s.currentKids())
	}
	return out
}

// currentKids is the children's tips belonging to the current tip (caller holds s.mu).
func (s *Session) currentKids() kidTips {
	if s.tip == nil {
		return s.baseKids
	}
	return s.tip.kids
}

// Redo re-applies up to steps undone turns and returns them oldest first.
func (s *Session) Redo(steps int, cascade bool) []*trace.Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*trace.Turn
	for i := 0; i < steps && len(s.redo) > 0; i++ {
		nd := s.redo[len(s.redo)-1]
		s.redo = s.redo[:len(s.redo)-1]
		s.tip = nd
		out = append(out, s.turnCopy(nd))
	}
	if cascade && len(out) > 0 {
		s.restoreChildTips(s.currentKids())
	}
	return out
}

// CanRedo reports how many undone turns can be redone.
func (s *Session) CanRedo() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.redo)
}

// Reset clears the turns (the seed history stays). With cascade every child is cleared too.
func (s *Session) Reset(cascade bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tip, s.redo = nil, nil
	if cascade {
		for _, ch := range s.children {
			if ch.session != nil {
				ch.session.Reset(true)
			}
		}
		s.baseKids = s.childTips()
	}
}

// Fork returns an independent session that shares this one's turns (nothing is copied:
// turns are immutable and both sides only ever add new ones). With cascade every child
// session is forked too, so the whole tree continues independently; without it the fork
// shares the children with the original (dspy-session's flat fork has none).
func (s *Session) Fork(cascade bool) *Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := &Session{module: s.module, opts: s.opts, name: s.name, seed: s.seed.Clone(), tip: s.tip,
		byModule: map[Module]*child{}, isChild: s.isChild, l2: s.l2, fileNodes: s.fileNodes}
	f.filters = s.filters
	f.baseKids = s.baseKids
	if len(s.scores) > 0 {
		f.scores = make(map[*trace.Turn]float64, len(s.scores))
		for k, v := range s.scores {
			f.scores[k] = v
		}
	}
	for _, ch := range s.children {
		nc := *ch
		if cascade && ch.session != nil && ch.kind != childSession {
			nc.session = ch.session.Fork(true)
		}
		f.children = append(f.children, &nc)
		f.byModule[nc.module] = &nc
	}
	return f
}

// UpdateModule hot-swaps the module, keeping the turns (e.g. an optimised predictor).
func (s *Session) UpdateModule(m Module) error {
	o := s.opts
	ns, err := Sessionify(m, o)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.module = m
	// Children keep their state when the new module has a child at the same path.
	old := map[string]*child{}
	for _, ch := range s.children {
		old[ch.path] = ch
	}
	s.children, s.byModule = ns.children, ns.byModule
	for _, ch := range s.children {
		if prev, ok := old[ch.path]; ok && prev.session != nil && ch.session != nil && ch.kind != childSession {
			prev.session.mu.Lock()
			prev.session.module = ch.module
			prev.session.mu.Unlock()
			ch.session = prev.session
		}
	}
	return nil
}

// Children returns the immediate child sessions by path.
func (s *Session) Children() map[string]*Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]*Session{}
	for _, ch := range s.children {
		if ch.session != nil {
			out[ch.path] = ch.session
		}
	}
	return out
}

// ChildPaths lists the child paths in discovery order.
func (s *Session) ChildPaths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, ch := range s.children {
		if ch.session != nil {
			out = append(out, ch.path)
		}
	}
	return out
}

// NamedSessions flattens the tree of sessions below s (nested sessions' own children
// appear under their path).
func (s *Session) NamedSessions() map[string]*Session {
	out := map[string]*Session{}
	for path, cs := range s.Children() {
		out[path] = cs
		for sub, gs := range cs.NamedSessions() {
			out[path+"."+sub] = gs
		}
	}
	return out
}

// TurnGroup says which of a child's turns an outer turn produced: [Start, End).
type TurnGroup struct {
	OuterTurn int
	Start     int
	End       int
}

// TurnGroups derives, for the child at path, the range of its turns made by each outer
// turn (seed 000 §6.4), from the recorded tips.
func (s *Session) TurnGroups(path string) []TurnGroup {
	s.mu.Lock()
	defer s.mu.Unlock()
	var cs *Session
	for _, ch := range s.children {
		if ch.path == path {
			cs = ch.session
		}
	}
	if cs == nil {
		return nil
	}
	depthOf := func(n *node) int {
		if n == nil {
			return 0
		}
		return n.depth
	}
	var out []TurnGroup
	for _, nd := range s.visible() {
		before := depthOf(s.kidsBefore(nd).get(path))
		after := depthOf(nd.kids.get(path))
		out = append(out, TurnGroup{OuterTurn: nd.turn.Index, Start: before, End: after})
	}
	return out
}

// ChildSnapshots returns, for the stored turn at position i, the history every keep-child
// had before that turn (what it would see when the turn is replayed).
func (s *Session) ChildSnapshots(i int) map[string]sig.History {
	s.mu.Lock()
	defer s.mu.Unlock()
	nodes := s.visible()
	if i < 0 {
		i += len(nodes)
	}
	if i < 0 || i >= len(nodes) {
		return nil
	}
	kids := s.kidsBefore(nodes[i])
	out := map[string]sig.History{}
	for _, ch := range s.children {
		if ch.session == nil {
			continue
		}
		cs := ch.session
		cs.mu.Lock()
		saved := cs.tip
		cs.tip = kids.get(ch.path)
		out[ch.path] = cs.buildHistory(nil)
		cs.tip = saved
		cs.mu.Unlock()
	}
	return out
}
