package core

import (
	"fmt"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// Restore rebuilds a session from recorded turns (for example one branch's path loaded from
// storage), oldest first. Keep-children need nothing stored of their own: a child's turns are
// its top-level call records along the path (DESIGN.md), so they are replayed from each
// turn's calls (per_turn children included; their history resets per outer turn anyway).
// Turn indices and explicit snapshots are kept as recorded; other snapshots are derived
// from the path with the session's settings, as Load does.
func Restore(module Module, opts Options, turns []*trace.Turn) (*Session, error) {
	s, err := Sessionify(module, opts)
	if err != nil {
		return nil, err
	}
	byPath := map[string]*child{}
	for _, ch := range s.children {
		if ch.session != nil && ch.kind != childSession {
			byPath[ch.path] = ch
		}
	}
	for i, t := range turns {
		if t == nil {
			return nil, fmt.Errorf("restore %s: turn %d is nil", s.name, i)
		}
		for _, c := range t.Calls {
			ch, ok := byPath[c.Path]
			if !ok || c.Error != "" || c.Outputs == nil || ch.nested != Keep || ch.scope == Stateless {
				continue
			}
			ch.session.pushNode(&trace.Turn{Inputs: c.Inputs.Clone(), Outputs: c.Outputs.Clone(), History: c.History.Clone(),
				Calls: []*trace.Call{}, Started: c.Started, Ended: c.Started.Add(c.Latency)}, nil)
			fixIndex(ch.session.tip)
		}
		nt := t.Clone()
		if !nt.Explicit {
			// Storage keeps only explicit snapshots; the rest derive from the path.
			nt.History = s.buildHistory(nil)
		}
		s.pushNode(nt, nil)
	}
	return s, nil
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
