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
