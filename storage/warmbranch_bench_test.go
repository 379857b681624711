package storage

import (
	"context"
	"testing"
)

// BenchmarkWarmBranch is what the workbench's prefetch, or a turn's first model call,
// spends in the background on a branch the process has not written on: the tip turn's
// stored lists put in the write cache. The branch is unwindowed, 500 turns long (the
// tip's requests hold about a thousand messages). Opening and closing the store (a new
// process) are left out.
func BenchmarkWarmBranch(b *testing.B) {
	ctx := context.Background()
	path := branchFile(b, 500)
	for b.Loop() {
		b.StopTimer()
		s, err := Open(ctx, path)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := s.WarmBranch(ctx, "S", MainBranch); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if s.wc.path("m\x00agent.answer").l.Len() == 0 {
			b.Fatal("the tip's request was not cached")
		}
		s.Close()
		b.StartTimer()
	}
}
