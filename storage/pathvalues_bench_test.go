package storage

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/trace"
)

// BenchmarkPathValuesPerTurn is what a long branch's pack costs per turn in the steady
// state of one process per turn (`sessionbench run` in a loop): each op appends a turn,
// then reads the path as a new process's first Send does (LoadPathValues: the pack and
// the rows of the turns after it) and writes the pack that read asks for, as that
// Send's model call does (WritePathPack). Run it for a few hundred ops (-benchtime
// 700x) to average over the pack's whole cycle of lagging and repacking.
func BenchmarkPathValuesPerTurn(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("turns=%d", n), func(b *testing.B) {
			s := openTemp(b)
			mustConv(b, s, "c")
			bulkAppend(b, s, "c", MainBranch, n, 500, windowTurn)
			if _, err := s.LoadPathValues(ctx, "c", MainBranch); err != nil {
				b.Fatal(err)
			}
			if err := s.WritePathPack(ctx, "c", MainBranch); err != nil {
				b.Fatal(err)
			}
			var read, pack time.Duration
			var rows, ops int
			for b.Loop() {
				b.StopTimer()
				bulkAppend(b, s, "c", MainBranch, 1, 1, windowTurn)
				b.StartTimer()
				t0 := time.Now()
				pv, err := s.LoadPathValues(ctx, "c", MainBranch)
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := s.WritePathPack(ctx, "c", MainBranch); err != nil {
					b.Fatal(err)
				}
				read, pack = read+t1.Sub(t0), pack+time.Since(t1)
				rows += pv.Total - pv.Packed
				ops++
			}
			b.ReportMetric(float64(read.Microseconds())/1e3/float64(ops), "read-ms/op")
			b.ReportMetric(float64(pack.Microseconds())/1e3/float64(ops), "pack-ms/op")
			b.ReportMetric(float64(rows)/float64(ops), "rows-read/op")
		})
	}
}

// windowTurn is fixture turn i with its three calls under a sliding window of four
// turns: a turn as an agent's, its calls' values and all.
func windowTurn(i int) *trace.Turn { return fixtureTurn(i, 4, false) }
