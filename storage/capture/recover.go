package capture

import (
	"context"
	"fmt"
	"time"

	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
)

// Recover ends the turns a proxy left open when it was killed (their owner is gone:
// storage reports them interrupted): every call it stored is kept, and the turn is
// completed with its last successful call's outputs, or kept as failed when its last call
// failed. Turns of a proxy still running, and turns whose branch moved since, are left
// alone. New runs it; the workbench runs it at start. onTurn, when set, is told about
// each turn it ends.
func Recover(ctx context.Context, st *storage.Store, onTurn func(ctx context.Context, convID, turnKey string)) (int, error) {
	pending, err := st.PendingTurns(ctx)
	if err != nil {
		return 0, fmt.Errorf("capture: %w", err)
	}
	n := 0
	for _, p := range pending {
		if !p.Resumable() {
			continue
		}
		c, err := st.Conversation(ctx, p.ConvID)
		if err != nil {
			return n, fmt.Errorf("capture: %w", err)
		}
		if !Recorded(c.Agent) {
			continue
		}
		sink := st.Sink(p.ConvID, p.Branch)
		if err := sink.Resume(ctx, p.Key); err != nil {
			return n, fmt.Errorf("capture: recover turn %s of %s: %w", p.Key, p.ConvID, err)
		}
		key, err := sink.BeginTurn(ctx, p.Inputs)
		if err != nil {
			return n, fmt.Errorf("capture: recover turn %s of %s: %w", p.Key, p.ConvID, err)
		}
		t := &trace.Turn{Inputs: p.Inputs, Started: p.Started, Ended: p.Started}
		var lastEnd, lastOut time.Time
		var failed *trace.Call
		trace.WalkCalls(p.Calls, func(c *trace.Call, _ int) {
			end := c.Started.Add(c.Latency)
			if end.After(t.Ended) {
				t.Ended = end
			}
			if !end.Before(lastEnd) {
				lastEnd, failed = end, nil
				if c.Error != "" {
					failed = c
				}
			}
			if c.Error == "" && c.Outputs != nil && !end.Before(lastOut) {
				t.Outputs, lastOut = c.Outputs, end
			}
		})
		if err := end(ctx, sink, key, t, failed); err != nil {
			return n, fmt.Errorf("capture: recover turn %s of %s: %w", p.Key, p.ConvID, err)
		}
		n++
		if onTurn != nil {
			onTurn(ctx, p.ConvID, key)
		}
	}
	return n, nil
}
