package workflow

import (
	"strconv"
	"strings"

	"github.com/sessionbench/sessionbench/core/sig"
)

// AttemptRecord is one attempt in an AttemptLog.
type AttemptRecord struct {
	Attempt int      // 1-based
	Score   float64  // 0 when the attempt had no usable score
	Values  *sig.Map // what the attempt produced
}

// AttemptLog tracks retries and the best attempt as seed 003's ReviewSession does:
// the attempt count, every attempt's score, and the attempt with the highest score. A
// later attempt replaces the best only with a strictly higher score, so ties keep the
// earlier one. Unlike the seed, the first attempt is always the best so far (even with
// score 0), so there is always a best attempt to fall back to.
type AttemptLog struct {
	Max         int // attempts allowed in total
	History     []AttemptRecord
	BestAttempt int // 1-based; 0 before the first attempt
	BestScore   float64
}

// Count is the number of attempts made.
func (l *AttemptLog) Count() int { return len(l.History) }

// CanRetry reports whether another attempt is allowed.
func (l *AttemptLog) CanRetry() bool { return len(l.History) < l.Max }

// Add records an attempt and reports whether it is the best so far.
func (l *AttemptLog) Add(score float64, values *sig.Map) bool {
	n := len(l.History) + 1
	l.History = append(l.History, AttemptRecord{Attempt: n, Score: score, Values: values.Clone()})
	if l.BestAttempt == 0 || score > l.BestScore {
		l.BestAttempt, l.BestScore = n, score
		return true
	}
	return false
}

// Best returns the best attempt's record (nil before the first attempt).
func (l *AttemptLog) Best() *AttemptRecord {
	if l.BestAttempt == 0 {
		return nil
	}
	return &l.History[l.BestAttempt-1]
}

// Score reads a score value: a number, a bool (1 or 0) or a numeric string; anything
// else scores 0 and reports false.
func Score(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil
	}
	return 0, false
}

// Truthy is the stop and acceptance test of loops and retries: true, a non-zero
// number, or a string such as "true", "yes" or "done".
func Truthy(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case int64:
		return x != 0
	case float64:
		return x != 0
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true", "yes", "done", "1", "valid":
			return true
		}
	}
	return false
}
