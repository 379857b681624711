package core

import (
	"context"
	"sync"

	"github.com/sessionbench/sessionbench/core/trace"
)

// attemptList gathers the attempts recorded during one outer turn (nested sessions and
// module calls file theirs into the same turn). Safe for concurrent use: parallel
// workflow branches record at the same time.
type attemptList struct {
	mu       sync.Mutex
	attempts []*trace.Attempt
}

type attemptsKey struct{}

func withAttempts(ctx context.Context, l *attemptList) context.Context {
	return context.WithValue(ctx, attemptsKey{}, l)
}

func (l *attemptList) items() []*trace.Attempt {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*trace.Attempt(nil), l.attempts...)
}

// RecordAttempt files a scored attempt of a retrying step (seed 003) into the turn being
// run under ctx: it ends up in the turn's Attempts and, with the turn, in its sink.
// Outside a turn, or in a turn that records nothing, it does nothing.
func RecordAttempt(ctx context.Context, a *trace.Attempt) {
	l, _ := ctx.Value(attemptsKey{}).(*attemptList)
	if l == nil || a == nil {
		return
	}
	l.mu.Lock()
	l.attempts = append(l.attempts, a.Clone())
	l.mu.Unlock()
}

// ObserverFrom returns the observer attached to ctx (nil when none), so that code
// watching a span of calls can pass every event on to it.
func ObserverFrom(ctx context.Context) Observer { return observerFrom(ctx) }
