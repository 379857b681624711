package sessions

import (
	"context"
	"fmt"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
)

// Pending lists the turns a crash or kill left in flight (in conv, or everywhere when
// conv is ""), oldest first.
func (a *Service) Pending(ctx context.Context, conv string) ([]PendingInfo, error) {
	ps, err := a.store.PendingTurns(ctx)
	if err != nil {
		return nil, err
	}
	titles := map[string]string{}
	var out []PendingInfo
	for _, p := range ps {
		if conv != "" && p.ConvID != conv {
			continue
		}
		title, ok := titles[p.ConvID]
		if !ok {
			if c, err := a.store.Conversation(ctx, p.ConvID); err == nil {
				title = c.Title
			}
			titles[p.ConvID] = title
		}
		out = append(out, PendingInfo{Conv: p.ConvID, ConvTitle: title, Branch: p.Branch, TurnKey: p.Key,
			Index: p.Index, Inputs: p.Inputs, Started: p.Started, CallsDone: requests(p.Calls),
			CallsExpected: a.expectedCalls(ctx, p), Stale: p.Stale})
	}
	return out, nil
}

// requests counts answered model requests in a call tree: module-level records (calls
// with children) are not requests of their own, and a failed call is not an answer that
// a resume could replay.
func requests(calls []*trace.Call) int {
	n := 0
	trace.WalkCalls(calls, func(c *trace.Call, _ int) {
		if len(c.Children) == 0 && c.Error == "" {
			n++
		}
	})
	return n
}

// expectedCalls estimates a pending turn's requests from the branch's previous turn.
func (a *Service) expectedCalls(ctx context.Context, p *storage.PendingTurn) int {
	if p.Stale || p.Branch == "" {
		return 0
	}
	b, err := a.store.Branch(ctx, p.ConvID, p.Branch)
	if err != nil || b.Tip == "" {
		return 0
	}
	t, err := a.store.LoadTurn(ctx, b.Tip)
	if err != nil {
		return 0
	}
	return requests(t.Calls)
}

// Resume runs the pending turn key again through the engine on its branch: the sink
// continues that turn instead of beginning one, and the model is wrapped so requests
// the turn already got answers for are served from storage. A failing or cancelled
// resume discards the turn, as a failing Send records nothing.
func (a *Service) Resume(ctx context.Context, key string, events chan<- Event) (*trace.Turn, error) {
	p, err := a.store.PendingTurn(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("resume turn %s: %w", key, err)
	}
	if p.Stale {
		return nil, fmt.Errorf("resume turn %s: branch %q moved since the turn began, so it can only be discarded", key, p.Branch)
	}
	l := a.branchLock(p.ConvID, p.Branch)
	l.Lock()
	defer l.Unlock()
	r, err := a.session(ctx, p.ConvID, p.Branch, "")
	if err != nil {
		return nil, fmt.Errorf("resume turn %s: %w", key, err)
	}
	if err := r.sink.Resume(ctx, key); err != nil {
		return nil, fmt.Errorf("resume turn %s: %w", key, err)
	}
	var resolver func(string) (lm.LM, error)
	if a.resolver != nil {
		resolver = func(name string) (lm.LM, error) {
			m, err := a.resolver(name)
			if err != nil {
				return nil, err
			}
			return a.store.ReplayLM(key, m), nil
		}
	}
	t, err := a.run(ctx, r, a.store.ReplayLM(key, a.model), resolver, p.Inputs, events)
	if err != nil {
		return nil, fmt.Errorf("resume turn %s: %w", key, err)
	}
	return t, nil
}

// Discard drops the pending turn key.
func (a *Service) Discard(ctx context.Context, key string) error {
	if err := a.store.DiscardTurn(ctx, key, "discarded by the user at the resume offer"); err != nil {
		return fmt.Errorf("discard turn %s: %w", key, err)
	}
	return nil
}
