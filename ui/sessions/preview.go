package sessions

import (
	"context"
	"fmt"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/core/wirediff"
	"github.com/sessionbench/sessionbench/llm"
)

// Preview renders a recorded call under a strategy without calling any model. Strategy 0
// is what was actually sent. The predictor's own history is its calls along the branch
// before this one; the outer history is the turn's snapshot.
func (a *Service) Preview(ctx context.Context, req PreviewRequest) (Rendering, error) {
	t, err := a.store.LoadTurn(ctx, req.Turn)
	if err != nil {
		return Rendering{}, err
	}
	var call *trace.Call
	var earlier []*trace.Call
	trace.WalkCalls(t.Calls, func(c *trace.Call, _ int) {
		if call == nil && (req.Call == "" || c.ID == req.Call) && len(c.Children) == 0 {
			call = c
		} else if call == nil {
			earlier = append(earlier, c)
		}
	})
	if call == nil {
		return Rendering{}, fmt.Errorf("turn %s has no call %q", req.Turn, req.Call)
	}
	r := Rendering{Strategy: req.Strategy, CallID: call.ID, Path: call.Path}
	if req.Strategy == 0 {
		return a.previewActual(r, call), nil
	}
	if call.Recovered != "" {
		return a.previewRecorded(ctx, req, r, t, call, earlier)
	}
	ag, err := a.conversationAgent(ctx, req.Conv, "")
	if err != nil {
		r.Err = err.Error()
		return r, nil
	}
	mod, _, err := ag.Build()
	if err != nil {
		return r, err
	}
	p := core.FindPredictor(mod, call.Path)
	if p == nil {
		r.Err = fmt.Sprintf("no predictor at %q in %s", call.Path, ag.Name)
		return r, nil
	}
	path, err := a.branchPath(ctx, req.Conv, req.Branch)
	if err != nil {
		return r, err
	}
	at, turns := path.index(req.Turn), path.turns
	if at < 0 {
		// A turn kept beside the branch (failed, cancelled, interrupted) is rendered where
		// it happened: after its parent, with the histories the branch had there.
		if at, err = a.keptAt(ctx, path, req.Turn, req.Branch); err != nil {
			return r, err
		}
		turns = append(turns[:at:at], t)
	}
	outer, source, err := a.outerHistory(ctx, req.Conv, req.Branch, turns, at, call.Path)
	if err != nil {
		return r, err
	}
	// A call that ran keeping its own history recorded what it saw, with the agent's
	// filters, window and scope applied; re-deriving it would lose those. Otherwise keep
	// strategies are a what-if over its earlier calls.
	own := call.History
	if source != core.HistoryOwn {
		own = ownHistory(turns[:at], call.Path, earlier)
	}
	msgs, ad, hist, err := render(req.Strategy, p, agentInfo(ag).Signature, call.Inputs, own, outer)
	if err != nil {
		r.Err = err.Error()
		return r, nil
	}
	return a.finish(r, msgs, ad, core.WithHistoryField(p.Signature, "history"), &hist), nil
}

// render formats one predictor call under strategy n.
func render(n int, p *core.Predict, outerSig *sig.Signature, inputs *sig.Map, own, outer sig.History) ([]lm.Message, adapter.Adapter, sig.History, error) {
	eff := core.WithHistoryField(p.Signature, "history")
	st, err := core.Preset(n, eff, core.PresetOptions{Outer: outerSig})
	if err != nil {
		return nil, nil, sig.History{}, err
	}
	msgs, hist, err := st.Render(eff, p.Demos, inputs, own, outer)
	return msgs, st.Adapter, hist, err
}

// ownHistory collects the predictor's own earlier calls: those of the turns before the
// previewed one, then the turn's calls before the previewed call.
func ownHistory(before []*trace.Turn, path string, earlier []*trace.Call) sig.History {
	var h sig.History
	add := func(c *trace.Call) {
		if c.Path == path && c.Error == "" && c.Outputs != nil {
			m := c.Inputs.Clone()
			c.Outputs.Range(func(k string, v any) bool { m.Set(k, v); return true })
			h.Messages = append(h.Messages, m)
		}
	}
	for _, tr := range before {
		trace.WalkCalls(tr.Calls, func(c *trace.Call, _ int) { add(c) })
	}
	for _, c := range earlier {
		add(c)
	}
	return h
}

// finish adds token counts and lint warnings to a rendering.
func (a *Service) finish(r Rendering, msgs []lm.Message, ad adapter.Adapter, s *sig.Signature, hist *sig.History) Rendering {
	per, total, err := llm.CountTokens(a.model.Name(), msgs)
	for i, m := range msgs {
		rm := RenderedMessage{Message: m}
		if err == nil && i < len(per) {
			rm.Tokens = per[i]
		}
		r.Messages = append(r.Messages, rm)
	}
	r.Tokens = total
	if s != nil && ad != nil {
		for _, w := range wirediff.Lint(wirediff.Facts{Signature: s, Adapter: ad, History: hist, Messages: msgs}) {
			r.Warnings = append(r.Warnings, Lint{Message: w.Message, Field: w.Field, Text: w.String()})
		}
	}
	return r
}

// DryRun renders the first predictor's request for the next turn under a strategy: its
// input fields are filled from the typed inputs by name.
func (a *Service) DryRun(ctx context.Context, conv, branch string, inputs *sig.Map, strategy int) ([]Rendering, error) {
	ag, err := a.conversationAgent(ctx, conv, "")
	if err != nil {
		return nil, err
	}
	mod, _, err := ag.Build()
	if err != nil {
		return nil, err
	}
	path, p := firstPredictor(mod)
	if p == nil {
		return nil, fmt.Errorf("agent %s has no predictor", ag.Name)
	}
	bp, err := a.branchPath(ctx, conv, branch)
	if err != nil {
		return nil, err
	}
	turns := bp.turns
	// The histories the next turn would really give: the restored session applies the
	// agent's filters, windows and scopes (keep strategies), and the outer history is
	// what the session would pass down (inherit strategies).
	run, err := a.sessionFrom(ctx, conv, branch, "", turns)
	if err != nil {
		return nil, err
	}
	outer := run.s.History()
	own, src := run.s.NextHistory(path)
	if src != core.HistoryOwn {
		own = ownHistory(turns, path, nil) // a what-if: the predictor keeps no history of its own
	}
	in := sig.NewMap()
	for _, f := range p.Signature.Inputs {
		if v, ok := inputs.Get(f.Name); ok {
			in.Set(f.Name, v)
		}
	}
	if strategy < 1 {
		strategy = 1
	}
	r := Rendering{Strategy: strategy, Path: path}
	msgs, ad, hist, err := render(strategy, p, agentInfo(ag).Signature, in, own, outer)
	if err != nil {
		r.Err = err.Error()
		return []Rendering{r}, nil
	}
	return []Rendering{a.finish(r, msgs, ad, core.WithHistoryField(p.Signature, "history"), &hist)}, nil
}

// firstPredictor is the first predictor in the agent's module tree.
func firstPredictor(m core.Module) (string, *core.Predict) {
	if p, ok := m.(*core.Predict); ok {
		return "", p
	}
	if s, ok := m.(*core.Session); ok {
		return firstPredictor(s.Module())
	}
	c, ok := m.(core.Composite)
	if !ok {
		return "", nil
	}
	for _, s := range c.Submodules() {
		if p, ok := s.Module.(*core.Predict); ok {
			return s.Name, p
		}
		if path, p := firstPredictor(s.Module); p != nil {
			if path == "" { // a session wrapping a predictor records under its own name
				return s.Name, p
			}
			return s.Name + "." + path, p
		}
	}
	return "", nil
}

// outerHistory is the history the session gave the turn at index at of the branch's path
// turns (derived with the agent's settings; storage keeps only explicit snapshots), and
// where the predictor at callPath takes its history from in that session.
func (a *Service) outerHistory(ctx context.Context, conv, branch string, turns []*trace.Turn, at int, callPath string) (sig.History, string, error) {
	r, err := a.sessionFrom(ctx, conv, branch, "", turns)
	if err != nil {
		return sig.History{}, "", err
	}
	if t := r.s.Turn(at); t != nil {
		return t.History, r.s.HistorySource(callPath), nil
	}
	return sig.History{}, "", fmt.Errorf("turn %d is not on branch %s", at, branch)
}
