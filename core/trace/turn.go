package trace

import (
	"context"
	"time"

	"github.com/sessionbench/sessionbench/core/sig"
)

// Turn is one user-facing call of a session (seed 000 invariant 1).
type Turn struct {
	Index   int         `json:"index"`
	Inputs  *sig.Map    `json:"inputs"`
	Outputs *sig.Map    `json:"outputs"`
	History sig.History `json:"history_snapshot"` // exactly the history sent for this turn
	// Explicit marks a snapshot that did not come from the session's own path (explicit
	// history under use_if_provided / replace_session); only such snapshots need storing.
	Explicit bool      `json:"explicit,omitempty"`
	Score    *float64  `json:"score"`
	Calls    []*Call   `json:"calls,omitempty"` // top-level inner calls, in start order
	Started  time.Time `json:"started"`
	Ended    time.Time `json:"ended"`
}

// Clone deep-copies the turn and its calls.
func (t *Turn) Clone() *Turn {
	if t == nil {
		return nil
	}
	out := *t
	out.Inputs = t.Inputs.Clone()
	out.Outputs = t.Outputs.Clone()
	out.History = t.History.Clone()
	if t.Score != nil {
		s := *t.Score
		out.Score = &s
	}
	out.Calls = make([]*Call, len(t.Calls))
	for i, c := range t.Calls {
		out.Calls[i] = c.Clone()
	}
	return &out
}

// Sink receives a turn as it happens, so a crash mid-turn loses nothing that finished:
// the engine calls BeginTurn, then RecordCall for each inner call the moment it completes
// (children before their parent), then exactly one of CommitTurn or AbortTurn.
// Implementations must be safe for concurrent RecordCall (inner calls may run in parallel).
type Sink interface {
	BeginTurn(ctx context.Context, inputs *sig.Map) (turnKey string, err error)
	RecordCall(ctx context.Context, turnKey, parentCallID string, c *Call) error
	CommitTurn(ctx context.Context, turnKey string, t *Turn) error
	AbortTurn(ctx context.Context, turnKey string, reason string) error
}
