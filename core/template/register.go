package template

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

// The wire request for this adapter:
//
//	{"adapter":"template","template":{"messages":[…],"parse_mode":"json"},
//	 "outer_history":{"messages":[…]}, "signature":{…}, "inputs":{…}, …}
func init() {
	adapter.Register("template", FromWireRequest)
}

// FromWireRequest builds the adapter from a whole wire request object: its "template"
// key is the template; "outer_history" (optional) is used by {outer_history()} when the
// rendering request carries none; a history input given as a bare list is inserted
// verbatim, as the reference does with a raw list.
func FromWireRequest(spec json.RawMessage) (adapter.Adapter, error) {
	if len(spec) == 0 {
		return nil, errors.New("template adapter: the request needs a \"template\" object")
	}
	top, err := sig.DecodeJSON(spec)
	if err != nil {
		return nil, fmt.Errorf("template adapter: %w", err)
	}
	m, ok := top.(*sig.Map)
	if !ok {
		return nil, errors.New("template adapter: the request must be a JSON object")
	}
	raw, ok := m.Get("template")
	if !ok || raw == nil {
		return nil, errors.New("template: missing (the template adapter needs {\"messages\":[…],\"parse_mode\":…})")
	}
	t, err := Load([]byte(py.CompactJSON(raw)))
	if err != nil {
		return nil, err
	}
	w := &wireTemplate{Template: t}
	if oh, ok := m.Get("outer_history"); ok && oh != nil {
		h, err := sig.HistoryFromValue(oh)
		if err != nil {
			return nil, fmt.Errorf("outer_history: %w", err)
		}
		w.outer = &h
	}
	if in, ok := m.Get("inputs"); ok {
		w.rawInputs, _ = in.(*sig.Map)
	}
	return w, nil
}

// wireTemplate is a Template with the wire request's extras.
type wireTemplate struct {
	*Template
	outer     *sig.History
	rawInputs *sig.Map
}

func (w *wireTemplate) Format(req adapter.Request) ([]lm.Message, error) {
	if req.OuterHistory == nil {
		req.OuterHistory = w.outer
	}
	if req.Signature != nil {
		if hf := req.Signature.HistoryField(); hf != "" {
			if raw, ok := w.rawInputs.Get(hf); ok {
				if list, isList := raw.([]any); isList {
					in := req.Inputs.Clone()
					if in == nil {
						in = sig.NewMap()
					}
					in.Set(hf, list)
					req.Inputs = in
				}
			}
		}
	}
	return w.Template.Format(req)
}
