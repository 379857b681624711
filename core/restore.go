package core

import (
	"fmt"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// Restore rebuilds a session from recorded turns (for example one branch's path loaded from
// storage), oldest first. NestedKeep-children need nothing stored of their own: a child's turns are
// its call records along the path (ARCHITECTURE.md), so they are replayed from each turn's calls,
// down into nested modules (per_turn children included; their history resets per outer
// turn anyway).
// Turn indices and explicit snapshots are kept as recorded; other snapshots are derived
// from the path with the session's settings, as Load does.
//
// The session shares the turns' values, calls and histories instead of deep-copying them
// (a call's history grows with the branch, so copies made restoring a long unwindowed
// branch cost O(n²)): the caller must not change the turns afterwards. The turns
// themselves are not modified.
func Restore(module Module, opts Options, turns []*trace.Turn) (*Session, error) {
	s, err := Sessionify(module, opts)
	if err != nil {
		return nil, err
	}
	log := newHistoryLog(s.opts, s.seed)
	episodic := s.episodicChildren()
	for i, t := range turns {
		if t == nil {
			return nil, fmt.Errorf("restore %s: turn %d is nil", s.name, i)
		}
		restoreChildren(s, "", t.Calls)
		for _, cs := range episodic {
			cs.tip, cs.redo = nil, nil
		}
		nt := *t // the session's own record: its History may differ from the caller's
		if !nt.Explicit {
			// Storage keeps only explicit snapshots; the rest derive from the path.
			nt.History = log.snapshot()
		}
		s.pushNode(&nt, nil)
		log.add(s.tip.msg)
	}
	return s, nil
}

// episodicChildren are the children whose lifespan ends their turns with each root call:
// Restore clears them after each turn, as the live session did (their consolidated L2
// memory is not in the call records, so a restored session starts with what its options
// give).
func (s *Session) episodicChildren() []*Session {
	var out []*Session
	for _, n := range s.sessionTree()[1:] {
		if l := n.s.opts.Lifespan; l == LifespanEpisodic || l == LifespanStateless {
			out = append(out, n.s)
		}
	}
	return out
}

// restoreChildren replays one outer turn's call records into the keep-children of s
// whose calls they are (prefix is s's own call path, "" for the root). A child that is
// itself a session or a module (a nested session around several predictors, or
// recursive="modules") recorded a module-level call whose Children are its inner calls:
// those go to its own children first, so its turn remembers their tips, as it does live.
func restoreChildren(s *Session, prefix string, calls []*trace.Call) {
	for _, c := range calls {
		var ch *child
		for _, cand := range s.children {
			if cand.session != nil && joinPath(prefix, cand.path) == c.Path {
				ch = cand
				break
			}
		}
		if ch == nil || c.Error != "" || c.Outputs == nil {
			continue
		}
		switch {
		case len(c.Children) == 0:
		case ch.kind == childModule:
			// recursive="modules": the parent session routes the module's inner calls too
			restoreChildren(s, prefix, c.Children)
		default:
			restoreChildren(ch.session, c.Path, c.Children)
		}
		if ch.nested != NestedKeep || ch.scope == Stateless || ch.session.opts.Lifespan == LifespanStateless {
			continue // an inheriting or stateless child keeps no turns of its own
		}
		ch.session.pushNode(&trace.Turn{Inputs: c.Inputs, Outputs: c.Outputs, History: c.History,
			Calls: []*trace.Call{}, Started: c.Started, Ended: c.Started.Add(c.Latency)}, nil)
		fixIndex(ch.session.tip)
	}
}

// fixIndex numbers a restored child turn after its parent.
func fixIndex(nd *node) {
	if nd.parent != nil {
		nd.turn.Index = nd.parent.turn.Index + 1
	} else {
		nd.turn.Index = 0
	}
}

// Seed replaces the session's initial history (e.g. a stored conversation's seed).
func (s *Session) Seed(h sig.History) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seed = h.Clone()
}
