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
	"github.com/sessionbench/sessionbench/storage"
)

// Preview renders a recorded call under a strategy without calling any model. Strategy 0
// is what was actually sent. The predictor's own history is its calls along the branch
// before this one; the outer history is the turn's snapshot. A turn on the branch is
// read from the path and session the service keeps for the branch; only the request as
// sent (strategy 0, and recorded calls, which are read back from it) is loaded.
func (a *Service) Preview(ctx context.Context, req PreviewRequest) (Rendering, error) {
	path, err := a.anyPath(ctx, req.Conv, req.Branch)
	if err != nil {
		return Rendering{}, err
	}
	at := path.index(req.Turn)
	if at < 0 && path.base > 0 {
		// a turn before the last ones held, or a kept turn placed after its parent
		if path, err = a.branchPath(ctx, req.Conv, req.Branch); err != nil {
			return Rendering{}, err
		}
		at = path.index(req.Turn)
	}
	var t *trace.Turn
	var tKey storage.PathKey // t's, when it is the path's (read without its calls' histories)
	if at >= 0 && req.Strategy != 0 {
		t, tKey = path.turn(at), storage.PathKey{Key: req.Turn, Started: path.started[at-path.base]}
	}
	call, earlier := findCall(t, req.Call)
	if t == nil || call != nil && call.Recovered != "" {
		if t, err = a.store.LoadTurn(ctx, req.Turn); err != nil {
			return Rendering{}, err
		}
		tKey = storage.PathKey{}
		call, earlier = findCall(t, req.Call)
	}
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
	var outer sig.History
	var source string
	var run *turnRun
	turns := path.turns
	if at >= 0 {
		var h sig.History
		var ok bool
		for _, full := range []bool{false, true} {
			// the session kept for the branch, restored from the whole path when the
			// one kept holds only the last turns and they are not enough here
			_, lp, live, err := a.liveState(ctx, req.Conv, req.Branch, false, full)
			if err != nil {
				r.Err = err.Error()
				return r, nil
			}
			run, turns = live.run, lp.turns
			if at = lp.index(req.Turn); at < 0 {
				break
			}
			h, ok = run.s.HistoryAt(at)
			source = run.s.HistorySource(call.Path)
			if ok && (source == core.HistoryOwn || lp.base == 0) {
				break
			}
			ok = false
		}
		if !ok {
			return r, fmt.Errorf("turn %s is not on branch %s", req.Turn, req.Branch)
		}
		outer = h
	} else {
		// A turn kept beside the branch (failed, cancelled, interrupted) is rendered where
		// it happened: after its parent, with the histories the branch had there.
		if at, err = a.keptAt(ctx, path, req.Turn, req.Branch); err != nil {
			return r, err
		}
		turns = append(turns[:at:at], t)
		if run, err = a.sessionFrom(ctx, req.Conv, req.Branch, "", turns); err != nil {
			r.Err = err.Error()
			return r, nil
		}
		h, ok := run.s.HistoryAt(at)
		if !ok {
			return r, fmt.Errorf("turn %d is not on branch %s", at, req.Branch)
		}
		outer, source = h, run.s.HistorySource(call.Path)
	}
	p := core.FindPredictor(run.mod, call.Path)
	if p == nil {
		r.Err = fmt.Sprintf("no predictor at %q in %s", call.Path, run.agent.Name)
		return r, nil
	}
	// A call that ran keeping its own history recorded what it saw, with the agent's
	// filters, window and scope applied; re-deriving it would lose those. Otherwise keep
	// strategies are a what-if over its earlier calls.
	own := call.History
	if source != core.HistoryOwn {
		own = ownHistory(turns[:at], call.Path, earlier)
	} else if tKey.Key != "" {
		// the path's turns are read without what their calls saw
		if own, err = a.callHistory(ctx, tKey, call.ID); err != nil {
			return r, err
		}
	}
	msgs, ad, hist, err := render(req.Strategy, p, agentInfo(run.agent).Signature, call.Inputs, own, outer)
	if err != nil {
		r.Err = err.Error()
		return r, nil
	}
	return a.finish(r, msgs, ad, core.WithHistoryField(p.Signature, "history"), &hist), nil
}

// callHistory is the history call id of turn k (on the branch's path) ran with: as
// read for an earlier preview, or now, extending the list read for a call before it
// (storage.HistoryReader), so an unseen turn next to one seen reads one entry.
func (a *Service) callHistory(ctx context.Context, k storage.PathKey, id string) (sig.History, error) {
	ck := storage.PathKey{Key: k.Key + "\x00" + id, Started: k.Started}
	if h, ok := a.callHists.get(ck); ok {
		return h, nil
	}
	h, err := a.histories.CallHistory(ctx, k.Key, k.Started, id)
	if err != nil {
		return sig.History{}, err
	}
	a.callHists.put(ck, h)
	return h, nil
}

// findCall is the leaf call id of turn t (its first leaf call when id is ""), and the
// calls made before it in the turn; nil when t is nil or has no such call.
func findCall(t *trace.Turn, id string) (call *trace.Call, earlier []*trace.Call) {
	if t == nil {
		return nil, nil
	}
	trace.WalkCalls(t.Calls, func(c *trace.Call, _ int) {
		if call == nil && (id == "" || c.ID == id) && len(c.Children) == 0 {
			call = c
		} else if call == nil {
			earlier = append(earlier, c)
		}
	})
	return call, earlier
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
	// The histories the next turn would really give: the branch's session applies the
	// agent's filters, windows and scopes (keep strategies), and the outer history is
	// what the session would pass down (inherit strategies).
	_, bp, live, err := a.liveState(ctx, conv, branch, false, false)
	if err != nil {
		return nil, err
	}
	run := live.run
	path, p := firstPredictor(run.mod)
	if p == nil {
		return nil, fmt.Errorf("agent %s has no predictor", run.agent.Name)
	}
	own, src := run.s.NextHistory(path)
	if src != core.HistoryOwn && bp.base > 0 {
		// the what-if below reads every earlier turn
		if _, bp, live, err = a.liveState(ctx, conv, branch, false, true); err != nil {
			return nil, err
		}
		run = live.run
		own, src = run.s.NextHistory(path)
	}
	outer := run.s.History()
	if src != core.HistoryOwn {
		own = ownHistory(bp.turns, path, nil) // a what-if: the predictor keeps no history of its own
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
	msgs, ad, hist, err := render(strategy, p, agentInfo(run.agent).Signature, in, own, outer)
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
