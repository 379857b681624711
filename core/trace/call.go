// Package trace holds the recorded data of a session: turns (one per user-facing call)
// and call records (one per inner LLM call, as a tree), plus the contract through which
// the engine hands them to durable storage. It is plain data with no behaviour beyond
// copying and walking, so storage, the UI and exports can share it.
package trace

import (
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
)

// Call is one inner predictor call (seed 000 §3.4 CallRecord): what it was given, the
// history it saw, the EXACT request it sent, what came back, and the calls made inside it.
type Call struct {
	ID            string         `json:"id"`             // unique within its session, e.g. "t3.c2"
	Path          string         `json:"path"`           // "classify", "agent.researcher.summarizer"
	PredictorType string         `json:"predictor_type"` // "Predict", "ChainOfThought"
	Inputs        *sig.Map       `json:"inputs"`         // history field excluded
	Outputs       *sig.Map       `json:"outputs"`        // nil when the call failed
	History       sig.History    `json:"history"`        // the history this call saw
	Adapter       string         `json:"adapter"`        // "chat", "json", "template"
	Messages      lm.MessageList `json:"messages"`       // the exact request sent, runs shared with other requests
	Params        lm.Params      `json:"params"`
	Completion    string         `json:"completion"` // raw model text
	Usage         lm.Usage       `json:"usage"`
	Model         string         `json:"model,omitempty"`
	Started       time.Time      `json:"started"`
	Latency       time.Duration  `json:"latency"`
	Error         string         `json:"error,omitempty"`
	Tries         []lm.Try       `json:"attempts,omitempty"`
	Score         *float64       `json:"score,omitempty"`
	Children      []*Call        `json:"children,omitempty"` // calls made inside this one
	// RawRequest and RawResponse are the HTTP bodies when a network model was used.
	RawRequest  string `json:"raw_request,omitempty"`
	RawResponse string `json:"raw_response,omitempty"`
	// Recovered is set on a call recorded outside the engine (by `sessionbench proxy`):
	// how its request was understood (RecoveredExact, RecoveredInexact, RecoveredNone).
	Recovered string `json:"recovered,omitempty"`
}

// How a call recorded outside the engine was understood (Call.Recovered).
const (
	// RecoveredExact: a DSPy ChatAdapter or JSONAdapter request whose recovered signature,
	// demos and inputs format back to the recorded messages byte for byte.
	RecoveredExact = "exact"
	// RecoveredInexact: recognised, but formatting what was recovered gives other bytes.
	RecoveredInexact = "inexact"
	// RecoveredNone: in no known format; the messages are all there is.
	RecoveredNone = "messages"
)

// Walk visits c and its descendants depth-first, parents first; depth starts at 0.
func (c *Call) Walk(f func(c *Call, depth int)) {
	var rec func(c *Call, d int)
	rec = func(c *Call, d int) {
		f(c, d)
		for _, ch := range c.Children {
			rec(ch, d+1)
		}
	}
	rec(c, 0)
}

// Clone deep-copies the call tree; the requests, immutable, are shared.
func (c *Call) Clone() *Call {
	if c == nil {
		return nil
	}
	out := *c
	out.Inputs = c.Inputs.Clone()
	out.Outputs = c.Outputs.Clone()
	out.History = c.History.Clone()
	out.Tries = append([]lm.Try(nil), c.Tries...)
	out.Children = make([]*Call, len(c.Children))
	for i, ch := range c.Children {
		out.Children[i] = ch.Clone()
	}
	return &out
}

// Share copies the call tree as Turn.Share does: history messages and requests shared.
func (c *Call) Share() *Call {
	if c == nil {
		return nil
	}
	out := *c
	out.Inputs = c.Inputs.Clone()
	out.Outputs = c.Outputs.Clone()
	out.History = c.History.Share()
	out.Tries = append([]lm.Try(nil), c.Tries...)
	out.Children = make([]*Call, len(c.Children))
	for i, ch := range c.Children {
		out.Children[i] = ch.Share()
	}
	return &out
}

// WalkCalls visits every call of a forest depth-first.
func WalkCalls(calls []*Call, f func(c *Call, depth int)) {
	for _, c := range calls {
		c.Walk(f)
	}
}

// FailedCall is the call that made a turn fail: the last call in start order with an
// Error (earlier failures were survived, or the turn would have stopped there), and
// inside it the deepest failing descendant (a module-level record fails because one of
// its inner calls did). nil when no call failed.
func FailedCall(calls []*Call) *Call {
	for i := len(calls) - 1; i >= 0; i-- {
		c := calls[i]
		if inner := FailedCall(c.Children); inner != nil {
			return inner
		}
		if c.Error != "" {
			return c
		}
	}
	return nil
}
