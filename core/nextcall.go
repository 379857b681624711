package core

import (
	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
)

// A process's first turn on a long branch waits for its session's restore before its
// first call can be made: at 1,000 turns most of `sessionbench run`'s time beyond the
// model. NextCallHistory and NextCallRequest let that call be made without it: the
// process that ran the branch's last turn keeps the history the next turn's first call
// will send, as rendered (storage.FirstCall), and the next process makes the request from
// it while its session is restored, to be checked against the session's own request
// (ui/sessions/speculate.go).

// nextCall is the predictor recorded under call path path, the signature the session
// calls it with and the history it gives it as the first call of the next turn; ok is
// false when there is no such predictor or it is given no history.
func (s *Session) nextCall(path string) (p *Predict, eff *sig.Signature, h sig.History, ok bool) {
	if len(s.children) == 0 {
		// a flat session gives its own history to every predictor inside it
		if p = FindPredictor(s.module, path); p == nil {
			return nil, nil, h, false
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		return p, withHistoryField(p.Signature, s.opts.HistoryField), s.buildHistory(nil), true
	}
	ch := findChild(s, "", path)
	if ch == nil || ch.effSig == nil {
		return nil, nil, h, false
	}
	if p, ok = ch.module.(*Predict); !ok {
		return nil, nil, h, false
	}
	h, src := s.NextHistory(path)
	if src == HistoryNone {
		return nil, nil, h, false
	}
	return p, ch.effSig, h, true
}

// NextCallHistory is the run of messages the predictor recorded under path will send
// for its history if it makes the next turn's first call (adapter.HistoryList), rendered
// through its request cache as that call will render it. ok is false when the session
// gives it no history or its adapter is not Chat or JSON.
func (s *Session) NextCallHistory(path string) (lm.MessageList, bool, error) {
	p, eff, h, ok := s.nextCall(path)
	if !ok {
		return lm.MessageList{}, false, nil
	}
	hf := eff.HistoryField()
	if hf == "" {
		return lm.MessageList{}, false, nil
	}
	return adapter.HistoryList(p.adapterOrDefault(), adapter.Request{Signature: eff, Demos: p.Demos, Inputs: sig.NewMap(hf, h), Cache: &p.requests})
}

// NextCallRequest is the request the predictor recorded under path sends as the next
// turn's first call with inputs (its own, without a history), its history's messages
// given as NextCallHistory rendered them in a session restored from the same turns. It
// does not read the session's history: a session just built, with no turn restored,
// makes the request. ok is false where NextCallHistory's is.
func (s *Session) NextCallRequest(path string, hist lm.MessageList, inputs *sig.Map) (lm.Request, bool, error) {
	p, eff, _, ok := s.nextCall(path)
	if !ok || eff.HistoryField() == "" {
		return lm.Request{}, false, nil
	}
	ad := p.adapterOrDefault()
	msgs, ok, err := adapter.FormatAround(ad, adapter.Request{Signature: eff, Demos: p.Demos, Inputs: inputs}, hist)
	if !ok || err != nil {
		return lm.Request{}, ok, err
	}
	return lm.Request{Messages: msgs, Params: p.Params, Meta: lm.Meta{
		Path: path, PredictorType: p.TypeName(), Adapter: ad.Name(), Signature: eff, Inputs: inputs.Clone(),
	}}, true, nil
}
