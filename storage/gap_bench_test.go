package storage

import (
	"context"
	"testing"
	"time"
)

// BenchmarkWriteAfterGap is the floor under "beyond the model": the store's smallest
// write transaction (BEGIN, the cache's data_version, one UPDATE, COMMIT, the syncer
// asked to fsync) run back to back, and after a gap like a model call's, idle or with
// the CPU busy. On the 2-core VM this was written on, the same transaction cost about
// 10x more after a 10 ms gap than back to back, busy or idle: what the CPU caches held of
// SQLite's code and pages is gone by then, so a turn's commit after its last model call
// runs cold whatever it does. A raw database/sql loop over the driver showed the same.
func BenchmarkWriteAfterGap(b *testing.B) {
	ctx := context.Background()
	for _, g := range []struct {
		name string
		gap  time.Duration
		busy bool
	}{{"none", 0, false}, {"idle-1ms", time.Millisecond, false}, {"idle-30ms", 30 * time.Millisecond, false}, {"busy-30ms", 30 * time.Millisecond, true}} {
		b.Run(g.name, func(b *testing.B) {
			s := openTemp(b)
			mustConv(b, s, "x")
			var spent time.Duration
			n := 0
			for b.Loop() {
				b.StopTimer()
				if g.busy {
					for t0 := time.Now(); time.Since(t0) < g.gap; {
					}
				} else {
					time.Sleep(g.gap)
				}
				b.StartTimer()
				t0 := time.Now()
				err := s.write(ctx, func(tx *wtx) error {
					_, err := tx.ExecContext(ctx, "UPDATE conversations SET updated_at = ? WHERE id = ?", fmtTime(now()), "x")
					return err
				})
				spent += time.Since(t0)
				n++
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(spent.Microseconds())/float64(n), "write-µs/op")
		})
	}
}
