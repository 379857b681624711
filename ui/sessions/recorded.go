package sessions

import (
	"context"
	"fmt"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/recognize"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// Calls recorded by the proxy (trace.Call.Recovered set) come from a program that runs
// outside sessionbench: there is no agent to ask for the predictor, so the preview reads
// the signature and demos back from the recorded request itself (core/recognize).

// previewActual is strategy 0 of a recorded call: the request as sent, linted against
// the recovered signature, with a warning when what was recovered does not format back
// to it byte for byte.
func (a *Service) previewActual(r Rendering, call *trace.Call) Rendering {
	msgs := call.Messages.Slice()
	if call.Recovered == "" {
		return a.finish(r, msgs, nil, nil, &call.History)
	}
	rq := recognize.Parse(msgs)
	if rq.Adapter == "" {
		return a.finish(r, msgs, nil, nil, &call.History)
	}
	r = a.finish(r, msgs, rq.Formatter(), rq.Signature, &call.History)
	if !rq.Exact || call.Recovered == trace.RecoveredInexact {
		why := rq.Mismatch
		if why == "" {
			why = "as recorded"
		}
		r.Warnings = append(r.Warnings, Lint{Message: -1, Text: "recognised as DSPy's " + rq.Adapter +
			" format, but the recovered signature and inputs do not format back to this request byte for byte (" +
			why + "); other strategies render what was recovered"})
	}
	return r
}

// previewRecorded renders a recorded call under strategy n (1-5). The call's own history
// is what its history field held when the program passed one, else its earlier calls
// with the same path; the outer history is the branch's earlier turns (each turn's first
// call's inputs and last call's outputs, as the proxy records turns).
func (a *Service) previewRecorded(ctx context.Context, req PreviewRequest, r Rendering, turn *trace.Turn, call *trace.Call, earlier []*trace.Call) (Rendering, error) {
	rq := recognize.Parse(call.Messages.Slice())
	if rq.Adapter == "" {
		r.Err = "this call's request is in no known format, so it has no signature to render under a strategy (" + rq.Reason + "); strategy 0 shows it as sent"
		return r, nil
	}
	path, err := a.branchPath(ctx, req.Conv, req.Branch)
	if err != nil {
		return r, err
	}
	at := path.index(req.Turn)
	if at < 0 {
		return r, fmt.Errorf("turn %s is not on branch %s", req.Turn, req.Branch)
	}
	own := call.History
	if rq.Signature.HistoryField() == "" {
		own = ownHistory(path.turns[:at], call.Path, earlier)
	}
	var outer sig.History
	for _, t := range path.turns[:at] {
		e := sig.NewMap()
		for _, m := range []*sig.Map{t.Inputs, t.Outputs} {
			m.Range(func(k string, v any) bool { e.Set(k, v); return true })
		}
		outer.Messages = append(outer.Messages, e)
	}
	eff := core.WithHistoryField(rq.Signature, "history")
	st, err := core.Preset(req.Strategy, eff, core.PresetOptions{Outer: turnSignature(turn)})
	if err != nil {
		r.Err = err.Error()
		return r, nil
	}
	msgs, hist, err := st.Render(eff, rq.Demos, call.Inputs, own, outer)
	if err != nil {
		r.Err = err.Error()
		return r, nil
	}
	return a.finish(r, msgs, st.Adapter, eff, &hist), nil
}

// turnSignature is a recorded turn's outer signature: its inputs' and outputs' names.
func turnSignature(t *trace.Turn) *sig.Signature {
	var ins, outs []sig.Field
	t.Inputs.Range(func(k string, _ any) bool { ins = append(ins, sig.Field{Name: k}); return true })
	t.Outputs.Range(func(k string, _ any) bool { outs = append(outs, sig.Field{Name: k}); return true })
	return sig.New("RecordedProgram", "", ins, outs)
}
