package trace

import (
	"time"

	"github.com/sessionbench/sessionbench/core/sig"
)

// Attempt is one try of a retrying workflow step with its score: seed 003's attempt
// record (attempt number, quality score, timestamp, review summary, details), plus the
// step it belongs to, whether it is its run's best attempt and the calls it made. A
// turn keeps its attempts (Turn.Attempts) in the order they were made.
type Attempt struct {
	Step    string    `json:"step"`           // the step's path: "attempt", "review.check"
	N       int       `json:"attempt"`        // 1-based within one run of the step
	Score   float64   `json:"quality_score"`  // 0 when the attempt had no usable score
	Time    time.Time `json:"timestamp"`      // when it was scored
	Summary string    `json:"review_summary"` // one line: what the attempt produced
	Details *sig.Map  `json:"details"`        // the fields the attempt produced; nil when it failed
	// Best marks the run's best attempt: the highest score, the earlier one on a tie.
	Best  bool     `json:"best,omitempty"`
	Error string   `json:"error,omitempty"` // why the attempt failed, when it did
	Calls []string `json:"calls,omitempty"` // IDs of the call records it made (Call.ID)
}

// Clone deep-copies the attempt.
func (a *Attempt) Clone() *Attempt {
	if a == nil {
		return nil
	}
	out := *a
	out.Details = a.Details.Clone()
	out.Calls = append([]string(nil), a.Calls...)
	return &out
}
