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
	Explicit bool     `json:"explicit,omitempty"`
	Score    *float64 `json:"score"`
	Calls    []*Call  `json:"calls,omitempty"` // top-level inner calls, in start order
	// Attempts are the scored tries of the turn's retrying steps, in the order made.
	Attempts []*Attempt `json:"attempts,omitempty"`
	Started  time.Time  `json:"started"`
	Ended    time.Time  `json:"ended"`
	// Status is how the turn ended; "" means completed (turns of sessions and save files
	// are completed: only those enter history). Error says why a turn that is not
	// completed stopped; its failing call, if any, is the one in Calls with an Error.
	Status Status `json:"status,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Completed reports whether the turn answered (the only turns history is built from).
func (t *Turn) Completed() bool { return t.Status == "" || t.Status == StatusCompleted }

// Clone deep-copies the turn and its calls.
func (t *Turn) Clone() *Turn { return t.copy(false) }

// Share copies the turn for a reader that does not change its history or requests: the
// history's messages and each call's request are shared with t (a session never changes
// them once recorded, so a long session's turns do not each carry a copy of everything
// before them); the values, calls and attempts are copied.
func (t *Turn) Share() *Turn { return t.copy(true) }

func (t *Turn) copy(share bool) *Turn {
	if t == nil {
		return nil
	}
	out := *t
	out.Inputs = t.Inputs.Clone()
	out.Outputs = t.Outputs.Clone()
	if share {
		out.History = t.History.Share()
	} else {
		out.History = t.History.Clone()
	}
	if t.Score != nil {
		s := *t.Score
		out.Score = &s
	}
	out.Calls = make([]*Call, len(t.Calls))
	for i, c := range t.Calls {
		if share {
			out.Calls[i] = c.Share()
		} else {
			out.Calls[i] = c.Clone()
		}
	}
	if t.Attempts != nil {
		out.Attempts = make([]*Attempt, len(t.Attempts))
		for i, a := range t.Attempts {
			out.Attempts[i] = a.Clone()
		}
	}
	return &out
}

// Sink receives a turn as it happens, so a crash mid-turn loses nothing that finished:
// the engine calls BeginTurn, then RecordCall for each inner call the moment it ends
// (children before their parent), a failing call included, before the error goes up;
// then exactly one of CommitTurn (t.Status completed) or AbortTurn. AbortTurn gets the
// turn as far as it went: Status failed, cancelled or interrupted, Error the reason, and
// the calls made (the failing one with its exact request, raw completion or partial
// stream, attempts and error). A sink keeps such a turn beside the branch, out of history.
// A CommitTurn that returns an error has ended the turn all the same, never left it in
// flight: the sink keeps it as failed, carrying the commit's error, or, when it cannot
// be written now, as interrupted (resumable), and then says so by wrapping
// ErrInterrupted. The engine calls nothing after it; the turn stays out of the session.
// A CommitTurn that returns nil has made the turn durable and visible to every later
// reader, not necessarily stored it everywhere yet (storage journals its end and writes
// its database beside the caller): the engine does not change the turn given to it
// afterwards, and the sink reports a later failure its own way.
// Implementations must be safe for concurrent RecordCall (inner calls may run in parallel).
type Sink interface {
	BeginTurn(ctx context.Context, inputs *sig.Map) (turnKey string, err error)
	RecordCall(ctx context.Context, turnKey, parentCallID string, c *Call) error
	CommitTurn(ctx context.Context, turnKey string, t *Turn) error
	AbortTurn(ctx context.Context, turnKey string, t *Turn) error
}
