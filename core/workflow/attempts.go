package workflow

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// AttemptLog tracks one run of a retrying step as seed 003's ReviewSession does: the
// attempt count, every attempt (trace.Attempt) and the attempt with the highest score. A
// later attempt replaces the best only with a strictly higher score, so ties keep the
// earlier one. Unlike the seed, the first scored attempt is always the best so far (even
// with score 0), so there is always a best attempt to fall back to.
//
//	log := &AttemptLog{Step: "attempt", Max: 3}
//	for log.CanRetry() {
//		actx := log.Begin(ctx) // calls made under actx are the attempt's
//		...
//		log.Add(score, produced)
//	}
//	log.Record(ctx) // into the turn: Turn.Attempts, and with it storage and exports
type AttemptLog struct {
	Step        string // the step's path, as the records name it
	Max         int    // attempts allowed in total
	History     []*trace.Attempt
	BestAttempt int // 1-based; 0 before the first scored attempt
	BestScore   float64

	calls *callNoter // the calls of the attempt under way (Begin)
}

// Count is the number of attempts made.
func (l *AttemptLog) Count() int { return len(l.History) }

// CanRetry reports whether another attempt is allowed.
func (l *AttemptLog) CanRetry() bool { return len(l.History) < l.Max }

// Begin starts the next attempt: the calls made under the returned context become its
// Calls when Add or Fail ends it.
func (l *AttemptLog) Begin(ctx context.Context) context.Context {
	l.calls = &callNoter{inner: core.ObserverFrom(ctx)}
	return core.WithObserver(ctx, l.calls)
}

// Add ends the attempt under way with its score and the fields it produced, and reports
// whether it is the best so far.
func (l *AttemptLog) Add(score float64, produced *sig.Map) bool {
	a := l.next()
	a.Score, a.Details, a.Summary = score, produced.Clone(), summaryOf(produced)
	if l.BestAttempt == 0 || score > l.BestScore {
		l.BestAttempt, l.BestScore = a.N, score
		return true
	}
	return false
}

// Fail ends the attempt under way as failed: it counts, has no score and is never best.
func (l *AttemptLog) Fail(err error) {
	a := l.next()
	a.Error = err.Error()
	a.Summary = "failed: " + oneLine(a.Error, 160)
}

func (l *AttemptLog) next() *trace.Attempt {
	a := &trace.Attempt{Step: l.Step, N: len(l.History) + 1, Time: time.Now().UTC(), Calls: l.calls.ids()}
	l.calls = nil
	l.History = append(l.History, a)
	return a
}

// Best returns the best attempt (nil before the first scored attempt).
func (l *AttemptLog) Best() *trace.Attempt {
	if l.BestAttempt == 0 {
		return nil
	}
	return l.History[l.BestAttempt-1]
}

// Record files every attempt into the turn under ctx (core.RecordAttempt), the best one
// marked; outside a recorded turn it does nothing.
func (l *AttemptLog) Record(ctx context.Context) {
	for _, a := range l.History {
		a.Best = a.N == l.BestAttempt
		core.RecordAttempt(ctx, a)
	}
}

// summaryOf is an attempt's one-line summary: what it produced, "field=value; ...".
func summaryOf(m *sig.Map) string {
	var parts []string
	m.Range(func(k string, v any) bool {
		parts = append(parts, k+"="+oneLine(py.Str(v), 60))
		return true
	})
	return oneLine(strings.Join(parts, "; "), 200)
}

// oneLine folds whitespace and cuts s to n runes ("..." marks a cut).
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n-3]) + "..."
	}
	return s
}

// callNoter notes the IDs of the calls finished under it and passes every event on to
// the observer it replaced.
type callNoter struct {
	inner core.Observer
	mu    sync.Mutex
	seen  []string
}

func (n *callNoter) CallStarted(path string, c *trace.Call) {
	if n.inner != nil {
		n.inner.CallStarted(path, c)
	}
}

func (n *callNoter) Delta(path, delta string) {
	if n.inner != nil {
		n.inner.Delta(path, delta)
	}
}

func (n *callNoter) Try(path string, t lm.Try) {
	if n.inner != nil {
		n.inner.Try(path, t)
	}
}

func (n *callNoter) CallFinished(path string, c *trace.Call) {
	if c != nil && c.ID != "" {
		n.mu.Lock()
		n.seen = append(n.seen, c.ID)
		n.mu.Unlock()
	}
	if n.inner != nil {
		n.inner.CallFinished(path, c)
	}
}

// ids are the outermost calls noted ("c3", not its inner "c3.c4"), in start order.
func (n *callNoter) ids() []string {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, id := range n.seen {
		inner := false
		for _, p := range n.seen {
			if strings.HasPrefix(id, p+".") {
				inner = true
				break
			}
		}
		if !inner {
			out = append(out, id)
		}
	}
	// Call IDs end in the turn's call sequence number, which is the start order.
	sort.SliceStable(out, func(i, j int) bool { return callSeq(out[i]) < callSeq(out[j]) })
	return out
}

func callSeq(id string) int {
	last := id[strings.LastIndexByte(id, '.')+1:]
	n, _ := strconv.Atoi(strings.TrimPrefix(last, "c"))
	return n
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
