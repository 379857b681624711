package sessions

import (
	"context"
	"fmt"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/storage/capture"
)

// Pending lists the turns a crash, kill or signal left interrupted (in conv, or
// everywhere when conv is ""), oldest first. A turn still running in a live process
// (this one or another) is not offered: resuming it would pay for its calls twice.
func (a *Service) Pending(ctx context.Context, conv string) ([]PendingInfo, error) {
	ps, err := a.store.PendingTurns(ctx)
	if err != nil {
		return nil, err
	}
	convs := map[string]*storage.Conversation{}
	var out []PendingInfo
	for _, p := range ps {
		if (conv != "" && p.ConvID != conv) || p.Status != trace.StatusInterrupted {
			continue
		}
		c, ok := convs[p.ConvID]
		if !ok {
			c, _ = a.store.Conversation(ctx, p.ConvID)
			convs[p.ConvID] = c
		}
		title := ""
		if c != nil {
			title = c.Title
			if capture.Recorded(c.Agent) {
				// a killed proxy's turn: nothing here runs it; the next proxy (or
				// workbench) start ends it as the proxy would have (capture.Recover)
				continue
			}
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

// Resume runs the interrupted turn key again on its branch (Retry with its own inputs);
// a turn that is not interrupted (running, or ended) is refused.
func (a *Service) Resume(ctx context.Context, key string, events chan<- Event) (*trace.Turn, error) {
	p, err := a.store.PendingTurn(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("resume turn %s: %w", key, err)
	}
	if p.Status != trace.StatusInterrupted {
		return nil, fmt.Errorf("resume turn %s: it is running in %s", key, p.Owner)
	}
	_, t, err := a.Retry(ctx, RetryRequest{Key: key}, events)
	return t, err
}

// RetryRequest asks to run a turn that did not complete again from where it stopped.
type RetryRequest struct {
	Key string
	// Inputs replace the turn's inputs when set (edit and retry): answered calls whose
	// exact request does not depend on the change are still reused.
	Inputs *sig.Map
	// Branch, when set, is a new branch forked at the turn's parent to retry on (the
	// turn's own branch may have moved on since).
	Branch string
	// NewBranch retries on a new branch forked at the turn's parent even when Branch
	// is empty: a free name ("retry-1", "retry-2", ...) is chosen.
	NewBranch bool
}

// KeptTurnError is the error of a turn that did not complete: it is stored under Key
// beside its branch (Turn.Status says how it ended), to inspect, retry or delete.
type KeptTurnError struct {
	Key  string
	Turn *trace.Turn
	Err  error
}

func (e *KeptTurnError) Error() string { return e.Err.Error() }
func (e *KeptTurnError) Unwrap() error { return e.Err }

// Retry runs turn key again through the engine from where it stopped: an interrupted
// turn continues in place, a failed or cancelled one becomes a new turn on the branch
// (the failed one stays beside it). The model is wrapped so that requests the turn
// already got answers for are served from storage: only the failed call and what
// follows are paid for. A retry that fails in turn is kept like any failed turn.
func (a *Service) Retry(ctx context.Context, req RetryRequest, events chan<- Event) (string, *trace.Turn, error) {
	key := req.Key
	n, err := a.store.TurnInfo(ctx, key)
	if err != nil {
		return "", nil, fmt.Errorf("retry turn %s: %w", key, err)
	}
	branch := n.Branch
	if req.Branch != "" || req.NewBranch {
		name := req.Branch
		if name == "" {
			if name, err = a.store.FreeBranchName(ctx, n.Conv, "retry"); err != nil {
				return "", nil, fmt.Errorf("retry turn %s: %w", key, err)
			}
		}
		if branch, err = a.forkAt(ctx, n.Conv, n.Parent, name); err != nil {
			return "", nil, fmt.Errorf("retry turn %s: %w", key, err)
		}
		send(events, Event{Kind: EventBranch, Branch: branch})
	}
	if branch == "" {
		return "", nil, fmt.Errorf("retry turn %s: its branch was deleted; retry it on a new branch", key)
	}
	inputs := req.Inputs
	if inputs == nil {
		t, err := a.store.LoadTurn(ctx, key)
		if err != nil {
			return "", nil, fmt.Errorf("retry turn %s: %w", key, err)
		}
		inputs = t.Inputs
	}
	l := a.branchLock(n.Conv, branch)
	l.Lock()
	defer l.Unlock()
	r, err := a.session(ctx, n.Conv, branch, "")
	if err != nil {
		return "", nil, fmt.Errorf("retry turn %s: %w", key, err)
	}
	if err := r.sink.Resume(ctx, key); err != nil {
		return "", nil, fmt.Errorf("retry turn %s: %w", key, err)
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
	t, err := a.run(ctx, r, a.store.ReplayLM(key, a.model), resolver, inputs, events, nil)
	return branch, t, err
}

// forkAt makes branch name end at turn parent ("" for an empty branch).
func (a *Service) forkAt(ctx context.Context, conv, parent, name string) (string, error) {
	if parent == "" {
		if _, err := a.store.CreateBranch(ctx, conv, name); err != nil {
			return "", err
		}
		return name, nil
	}
	src, at, err := a.locate(ctx, conv, parent)
	if err != nil {
		return "", err
	}
	if err := a.store.ForkOnly(ctx, conv, src, name, at); err != nil {
		return "", err
	}
	return name, nil
}

// Discard drops the pending turn key.
func (a *Service) Discard(ctx context.Context, key string) error {
	if err := a.store.DiscardTurn(ctx, key, "discarded by the user at the resume offer"); err != nil {
		return fmt.Errorf("discard turn %s: %w", key, err)
	}
	return nil
}
