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
	if ch := findChild(s, prefix, path); ch != nil {
		return sourceOf(ch)
	}
	return HistoryNone
}

func sourceOf(ch *child) string {
	switch {
	case ch.kind == childExcluded || ch.session == nil:
		return HistoryNone
	case ch.nested == NestedInherit || ch.nested == NestedUnwrap:
		return HistoryOuter
	case ch.scope == Stateless:
		return HistoryNone
	}
	return HistoryOwn
}

// findChild is the child recorded under a call path, looking inside nested sessions.
func findChild(s *Session, prefix, path string) *child {
	for _, ch := range s.children {
		full := joinPath(prefix, ch.path)
		if full == path {
			return ch
		}
		if ch.kind == childSession && strings.HasPrefix(path, full+".") {
			return findChild(ch.session, full, path)
		}
	}
	return nil
}

// NextHistory is the history the predictor at path would receive as the first call of
// the next turn, with the session's settings (filters, windows, scope) applied, and
// where it comes from. Dry runs use it to show what would be sent.
func (s *Session) NextHistory(path string) (sig.History, string) {
	ch := findChild(s, "", path)
	if ch == nil {
		return sig.History{}, HistoryNone
	}
	switch src := sourceOf(ch); src {
	case HistoryOwn:
		cs := ch.session
		cs.mu.Lock()
		defer cs.mu.Unlock()
		if cs.opts.InnerScope == PerTurn {
			return cs.buildHistory(orSentinel(cs.tip)), src // a turn starts afresh
		}
		return cs.buildHistory(nil), src
	case HistoryOuter:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.buildHistory(nil), src
	}
	return sig.History{}, HistoryNone
}
