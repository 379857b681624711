package core

import (
	"context"
	"fmt"
	"testing"
)

// sessionAt builds a session with n turns already recorded through the engine.
func sessionAt(b *testing.B, mk func() Module, o Options, n int) (*Session, context.Context) {
	b.Helper()
	s := MustSessionify(mk(), o)
	ctx := ctxWith(echoLM())
	for i := 0; i < n; i++ {
		if _, err := s.Forward(ctx, in("question", fmt.Sprint(i))); err != nil {
			b.Fatal(err)
		}
	}
	return s, ctx
}

// A flat session turn at turn 100 vs 10,000. The window keeps the request the same size,
// so any growth would be engine cost.
func BenchmarkFlatTurn(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprintf("at=%d", n), func(b *testing.B) {
			s, ctx := sessionAt(b, func() Module { return MustPredict("question -> answer") }, Options{MaxTurns: Int(10)}, n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Forward(ctx, in("question", "q")); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				s.Undo(1, true) // stay at n turns
				b.StartTimer()
			}
		})
	}
}

// A SupportAgent turn with record=all at outer turn 100 vs 10,000.
func BenchmarkSupportAgentTurn(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprintf("at=%d", n), func(b *testing.B) {
			s, ctx := sessionAt(b, func() Module { return supportAgent(true) }, Options{Recursive: Predictors, Record: RecordAll, MaxTurns: Int(10)}, n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Forward(ctx, in("question", "q")); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				s.Undo(1, true)
				b.StartTimer()
			}
		})
	}
}

// undo(cascade) and fork(cascade) at 10,000 turns: constant time, nothing copied.
func BenchmarkCascadeOps(b *testing.B) {
	for _, n := range []int{100, 10000} {
		s, _ := sessionAt(b, func() Module { return supportAgent(true) }, Options{Recursive: Predictors, MaxTurns: Int(10)}, n)
		b.Run(fmt.Sprintf("undo+redo/at=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				s.Undo(1, true)
				s.Redo(1, true)
			}
		})
		b.Run(fmt.Sprintf("fork/at=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				_ = s.Fork(true)
			}
		})
	}
}
