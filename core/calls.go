package core

import (
	"context"
	"fmt"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// predictorCall runs predictor p inside session s's active turn f: it decides which
// history p sees (its own, the outer one, or none), runs it, records the call and, for
// a keep-child, the child's turn.
func (s *Session) predictorCall(ctx context.Context, f *frame, p *Predict, inputs *sig.Map) (*Prediction, error) {
	seq := f.next()
	ch := s.childFor(p)
	eff := p.Signature
	var hist *sig.History
	var keepChild *Session
	path := ""
	if ch != nil {
		path = ch.path
	}
	hf := s.opts.HistoryField
	switch {
	case ch == nil && p == s.module:
		// The session wraps this predictor directly: the turn's own history.
		eff = withHistoryField(p.Signature, hf)
		hist = &f.history
	case ch == nil:
		// A flat session injects its history into every predictor inside it.
		eff = withHistoryField(p.Signature, hf)
		hist = &f.history
		path = pathOf(s, p)
	case ch.kind == childExcluded:
		// Excluded from recursion: no history injected.
	case ch.nested == NestedInherit || ch.nested == NestedUnwrap:
		eff = ch.effSig
		hist = &f.history
	case ch.scope == Stateless:
		eff = ch.effSig
		hist = &sig.History{}
	default: // keep (and error, which only concerns sessions)
		eff = ch.effSig
		h := s.childHistory(f, ch.path, ch.session)
		hist = &h
		keepChild = ch.session
	}
	hf2 := eff.HistoryField()
	if hf2 != "" {
		if v, ok := inputs.Get(hf2); ok && v != nil {
			// Explicit history given to the predictor itself wins and records no child turn.
			h, err := sig.HistoryFromValue(sig.Clone(v))
			if err != nil {
				return nil, fmt.Errorf("predictor %s: %s: %w", displayPath(path), hf2, err)
			}
			hist, keepChild = &h, nil
		}
	}
	// The predictor's inputs, copied, with the history it sees under its field.
	var in *sig.Map
	if hf2 != "" && hist != nil {
		in = copyMap(inputs, nil, hf2, *hist)
	} else {
		in = copyMap(inputs, nil, "", nil)
	}
	c, err := p.invoke(ctx, eff, in, joinPath(f.prefix, path), hist)
	s.finishCall(ctx, f, seq, c)
	if err != nil {
		return nil, err
	}
	if keepChild != nil && !f.readonly && ch.scope != Stateless && keepChild.opts.Lifespan != LifespanStateless {
		keepChild.appendTurn(&trace.Turn{
			Inputs: cloneMap(c.Inputs), Outputs: cloneMap(c.Outputs), History: hist.Share(),
			Calls: []*trace.Call{}, Started: c.Started, Ended: c.Started.Add(c.Latency),
		}, nil)
	}
	return &Prediction{Fields: cloneMap(c.Outputs)}, nil
}

// callID is a call's ID: its sequence number, under its parent call's ID when nested
// ("c2.c3").
func callID(ctx context.Context, seq int64) string {
	id := fmt.Sprintf("c%d", seq)
	if pc := parentCallFrom(ctx); pc != nil {
		id = pc.ID + "." + id
	}
	return id
}

// finishCall files a finished call record: to the durable sink, into the current
// collector (trace), to the observer and the on_call hook. The sink always gets the
// whole call; record mode "calls" then drops the request from what the session keeps in
// memory (a long session's requests grow with it, and the sink has them).
func (s *Session) finishCall(ctx context.Context, f *frame, seq int64, c *trace.Call) {
	if !f.record {
		if obs := observerFrom(ctx); obs != nil {
			obs.CallFinished(c.Path, c)
		}
		return
	}
	c.ID = callID(ctx, seq)
	if f.sink != nil {
		parentID := ""
		if pc := parentCallFrom(ctx); pc != nil {
			parentID = pc.ID
		}
		_ = f.sink.RecordCall(context.WithoutCancel(ctx), f.turnKey, parentID, c)
	}
	if f.root.opts.Record == RecordCalls {
		c.Messages, c.Completion, c.RawRequest, c.RawResponse = lm.MessageList{}, "", "", ""
	}
	collectorFrom(ctx).add(seq, c)
	if obs := observerFrom(ctx); obs != nil {
		obs.CallFinished(c.Path, c)
	}
	if hook := f.root.opts.OnCall; hook != nil {
		func() {
			defer func() { _ = recover() }()
			hook(f.root, c)
		}()
	}
}

// childHistory is what a keep-child sees: its own turns along the outer path, limited to
// the current outer turn for per_turn scope; during a replay, as it was at that turn.
func (s *Session) childHistory(f *frame, path string, cs *Session) sig.History {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if f.readonly {
		saved := cs.tip
		if f.replay != nil {
			cs.tip = s.kidsBefore(f.replay).get(path)
		}
		defer func() { cs.tip = saved }()
	}
	if cs.opts.InnerScope == PerTurn {
		start := f.start.get(path)
		if f.readonly {
			start = cs.tip // a replayed turn starts from the restored tip
		}
		return cs.buildHistory(orSentinel(start))
	}
	return cs.buildHistory(nil)
}

// sentinel stands for "the beginning" in buildHistory's since parameter when a per_turn
// child had no turns yet: distinct from nil, which means "include the seed".
var sentinel = &node{}

func orSentinel(n *node) *node {
	if n == nil {
		return sentinel
	}
	return n
}

// parentCall is the module-level call record that encloses the current one.
type parentCallKey struct{}

func withParentCall(ctx context.Context, c *trace.Call) context.Context {
	return context.WithValue(ctx, parentCallKey{}, c)
}

func parentCallFrom(ctx context.Context) *trace.Call {
	c, _ := ctx.Value(parentCallKey{}).(*trace.Call)
	return c
}

// pathOf names a predictor found anywhere in s's module tree (flat sessions).
func pathOf(s *Session, p Module) string {
	found := ""
	walk(s.module, "", func(path string, m Module) {
		if found == "" && m == p {
			found = path
		}
	})
	return found
}

// forwardNested runs session (or wrapped module) cs inside the active turn f of another
// session, following the outer session's nested policy for it.
func (cs *Session) forwardNested(ctx context.Context, f *frame, inputs *sig.Map) (*Prediction, error) {
	ch := f.root.childFor(cs.module)
	if ch == nil || ch.session != cs {
		ch = f.root.childFor(cs)
	}
	if ch != nil && ch.kind == childSession && ch.session != nil {
		cs = ch.session // the bound state's own copy of a nested session
	}
	policy, path := f.root.opts.NestedSessions, cs.name
	if ch != nil {
		policy, path = ch.nested, ch.path
	}
	isModuleChild := ch != nil && ch.kind == childModule
	if policy == NestedError && !isModuleChild {
		return nil, fmt.Errorf("session %q called inside active session %q: set nested_sessions to inherit, keep or unwrap to allow this", path, f.root.name)
	}
	if policy == NestedUnwrap && !isModuleChild {
		return Call(ctx, cs.module, inputs)
	}
	// A nested session around a single predictor is traced as that predictor's call;
	// anything else gets a module-level record whose children are its inner calls.
	_, single := cs.module.(*Predict)
	single = single && !isModuleChild
	var rec *trace.Call
	var seq int64
	inner := ctx
	if !single {
		seq = f.next()
		rec = &trace.Call{Path: joinPath(f.prefix, path), PredictorType: TypeName(cs.module), Inputs: inputs.Clone(), Started: time.Now().UTC()}
		// The inner calls finish first and take their IDs ("c2.c3") and the sink's parent
		// ID from this record, so it needs its ID now (finishCall gives it the same one).
		rec.ID = callID(ctx, seq)
		inner = withCollector(withParentCall(ctx, rec), &collector{})
	}
	finish := func(p *Prediction, err error, children []*trace.Call) (*Prediction, error) {
		if rec == nil {
			return p, err
		}
		rec.Latency = time.Since(rec.Started)
		rec.Children = children
		if rec.Children == nil {
			rec.Children = collectorFrom(inner).sorted()
		}
		if err != nil {
			rec.Error = err.Error()
		} else {
			rec.Outputs = p.Fields.Clone()
		}
		f.root.finishCall(ctx, f, seq, rec)
		return p, err
	}
	finish2 := func(p *Prediction, err error) (*Prediction, error) { return finish(p, err, nil) }
	nested := func(readonly bool, h sig.History) *frame {
		return &frame{root: cs, parent: f, history: h, record: f.record, readonly: readonly,
			start: kidTips{}, sink: f.sink, turnKey: f.turnKey,
			prefix: joinPath(f.prefix, path), seq: f.seq}
	}
	switch {
	case isModuleChild:
		// recursive="modules": the module runs under the same root; its own session keeps
		// a module-level turn unless it inherits or is stateless.
		h := f.history
		if policy == NestedKeep {
			h = f.root.childHistory(f, ch.path, cs)
		}
		p, err := finish2(cs.module.Forward(withActive(inner, cs, h), inputs))
		if err == nil && policy == NestedKeep && ch.scope != Stateless && cs.opts.Lifespan != LifespanStateless && !f.readonly {
			cs.appendTurn(&trace.Turn{Inputs: inputs.Clone(), Outputs: p.Fields.Clone(), History: h,
				Calls: []*trace.Call{}, Started: rec.Started, Ended: time.Now().UTC()}, nil)
		}
		return p, err
	case policy == NestedInherit || f.readonly:
		// Inherit: the inner session runs on the outer history and records nothing of its
		// own. Replay (override): it answers from its state at the replayed turn.
		h := f.history
		if policy != NestedInherit {
			cs.mu.Lock()
			saved := cs.tip
			if f.replay != nil {
				cs.tip = f.root.kidsBefore(f.replay).get(path)
			}
			h = cs.buildHistory(nil)
			cs.tip = saved
			cs.mu.Unlock()
		}
		p, err := Call(withFrame(inner, nested(true, h)), cs.module, inputs)
		return finish(p, err, nil)
	default: // keep: a real turn on the inner session's own state
		p, _, calls, err := cs.forwardRoot(inner, inputs, f, joinPath(f.prefix, path))
		if single {
			for _, c := range calls {
				collectorFrom(ctx).add(f.next(), c)
			}
		}
		return finish(p, err, calls)
	}
}

// recordedRequest is msgs as the call records them: when the session keeps requests
// (RecordAll), as runs shared with what the predictor at path sent before, so a long
// session's calls cost their new messages, not their length (shared: msgs' runs are
// already, as the adapter's request cache made them); otherwise msgs alone.
func recordedRequest(ctx context.Context, path string, msgs lm.MessageList, shared bool) lm.MessageList {
	f := frameFrom(ctx)
	if f == nil || !f.record || f.root.opts.Record != RecordAll {
		return msgs
	}
	g, ok := f.root.wire.Load(path)
	if !ok {
		g, _ = f.root.wire.LoadOrStore(path, new(lm.MessageLog))
	}
	return g.(*lm.MessageLog).Record(msgs, shared)
}
