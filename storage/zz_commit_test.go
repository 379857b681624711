package storage

import (
	"context"
	"testing"
)

func BenchmarkZZCommit(b *testing.B) {
	ctx := context.Background()
	s := openTemp(b)
	mustConv(b, s, "x")
	sink := s.Sink("x", MainBranch)
	i := 0
	for ; i < 20; i++ {
		if _, err := runTurn(ctx, sink, fixtureTurn(i, 4, false)); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if _, err := runTurn(ctx, sink, fixtureTurn(i, 4, false)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
