package core

import (
	"strings"

	"github.com/sessionbench/sessionbench/core/sig"
)

// FindPredictor returns the predictor at a dotted path inside m ("" is m itself), or nil.
// Previews use it to re-render a recorded call from its predictor's signature. Unlike
// walk it enters sessions used as submodules: their predictors' calls are recorded under
// the session's path too (the Orchestrator's container holds sessionified predictors).
func FindPredictor(m Module, path string) *Predict {
	if s, ok := m.(*Session); ok {
		return FindPredictor(s.Module(), path)
	}
	if path == "" {
		p, _ := m.(*Predict)
		return p
	}
	c, ok := m.(Composite)
	if !ok {
		return nil
	}
	for _, sub := range c.Submodules() {
		if sub.Module == nil {
			continue
		}
		if sub.Name == path {
			return FindPredictor(sub.Module, "")
		}
		if rest, ok := strings.CutPrefix(path, sub.Name+"."); ok {
			if p := FindPredictor(sub.Module, rest); p != nil {
				return p
			}
		}
	}
	return nil
}

// WithHistoryField is the signature a session gives a predictor: the history input
// appended last (description "Conversation history") unless it already has one.
func WithHistoryField(s *sig.Signature, name string) *sig.Signature { return withHistoryField(s, name) }

// Where a predictor's history comes from in a session (HistorySource).
const (
	HistoryOwn   = "own"   // keep: its own earlier calls
	HistoryOuter = "outer" // inherit or unwrap: the outer conversation
	HistoryNone  = ""      // nothing injected: excluded, stateless, or not a child
)

// HistorySource tells where the predictor (or module) recorded under a call path takes
// its history from in this session, so a preview can tell the history a call really
// saw (own or outer) from a what-if under another strategy.
func (s *Session) HistorySource(path string) string {
	return historySource(s, "", path)
}

func historySource(s *Session, prefix, path string) string {
	for _, ch := range s.children {
		full := joinPath(prefix, ch.path)
		if full != path {
			if ch.kind == childSession && strings.HasPrefix(path, full+".") {
				return historySource(ch.session, full, path)
			}
			continue
		}
		switch {
		case ch.kind == childExcluded || ch.session == nil:
			return HistoryNone
		case ch.nested == Inherit || ch.nested == Unwrap:
			return HistoryOuter
		case ch.scope == Stateless:
			return HistoryNone
		}
		return HistoryOwn
	}
	return HistoryNone
}
