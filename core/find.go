package core

import "github.com/sessionbench/sessionbench/core/sig"

// FindPredictor returns the predictor at a dotted path inside m ("" is m itself), or nil.
// Previews use it to re-render a recorded call from its predictor's signature.
func FindPredictor(m Module, path string) *Predict {
	if p, ok := m.(*Predict); ok && path == "" {
		return p
	}
	var found *Predict
	walk(m, "", func(p string, sub Module) {
		if found == nil && p == path {
			found, _ = sub.(*Predict)
		}
	})
	return found
}

// WithHistoryField is the signature a session gives a predictor: the history input
// appended last (description "Conversation history") unless it already has one.
func WithHistoryField(s *sig.Signature, name string) *sig.Signature { return withHistoryField(s, name) }
