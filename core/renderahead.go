package core

import (
	"slices"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/sig"
)

// RenderAhead renders, for every predictor the session gives a history, the history its
// next call would send, as the predictor's adapter writes it, and drops the requests.
// Adapters keep each history entry's rendering with the entry (sig.Rendering), and a
// session's entries are shared by its next turns: a session just restored from a long
// branch otherwise renders its whole history in its first turn's calls (about 0.3 ms a
// call per 1,000 turns of history), where a later turn renders one entry. Callers run it
// while nothing waits (as the user types, or while a model answers); it only reads the
// session, and what goes wrong (a template that cannot render) is left for the turn.
// The last predictors go first: a turn that starts meanwhile renders its first call's
// history itself, and finds its later calls' done rather than done twice.
func (s *Session) RenderAhead() {
	if len(s.children) == 0 {
		// a flat session gives its own history to every predictor inside it
		s.mu.Lock()
		h := s.buildHistory(nil)
		hf := s.opts.HistoryField
		s.mu.Unlock()
		ps := []*Predict{}
		if p, ok := s.module.(*Predict); ok {
			ps = append(ps, p)
		}
		walk(s.module, "", func(_ string, m Module) {
			if p, ok := m.(*Predict); ok {
				ps = append(ps, p)
			}
		})
		for _, p := range slices.Backward(ps) {
			renderHistory(p, withHistoryField(p.Signature, hf), h)
		}
		return
	}
	s.renderChildren(s, "")
}

// renderChildren renders ahead for the predictors among s's children (prefix: s's own
// call path under root), and inside its nested sessions.
func (s *Session) renderChildren(root *Session, prefix string) {
	for _, ch := range slices.Backward(s.children) {
		path := joinPath(prefix, ch.path)
		if ch.kind == childSession && ch.session != nil {
			ch.session.renderChildren(root, path)
			continue
		}
		p, ok := ch.module.(*Predict)
		if !ok || ch.effSig == nil {
			continue
		}
		if h, src := root.NextHistory(path); src != HistoryNone {
			renderHistory(p, ch.effSig, h)
		}
	}
}

// renderHistory formats a request of predictor p under signature eff with history h and
// no other input: the request is dropped, the renderings of h's entries stay with them,
// and its history's messages in p's cache (adapter.RequestCache).
func renderHistory(p *Predict, eff *sig.Signature, h sig.History) {
	hf := eff.HistoryField()
	if hf == "" || len(h.Messages) == 0 {
		return
	}
	_, _, _ = adapter.FormatList(p.adapterOrDefault(), adapter.Request{Signature: eff, Demos: p.Demos, Inputs: sig.NewMap(hf, h), Cache: &p.requests})
}
