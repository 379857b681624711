package ui_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/uitest"
)

// reportP99 adds the 99th percentile of the measured iterations.
func reportP99(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds())/1000, "p99-ms")
}

// View at the bottom of a 10,000-turn branch, scrolling up a few lines per frame: only
// the visible turns are drawn and finished turns are memoised.
func BenchmarkView10kTurns(b *testing.B) {
	hs, _ := open(b, 160, 50, 10_000)
	hs.press("esc")
	var ds []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		if i%2 == 0 {
			hs.send(tea.MouseWheelMsg{Button: tea.MouseWheelUp, X: 5, Y: 5})
		} else {
			hs.send(tea.MouseWheelMsg{Button: tea.MouseWheelDown, X: 5, Y: 5})
		}
		_ = hs.m.View()
		ds = append(ds, time.Since(start))
		b.StopTimer()
		hs.settle() // let the commands the key started finish, outside the measurement
		b.StartTimer()
	}
	reportP99(b, ds)
}

// A turn whose call tree has 2,000 calls, all expanded, cursor moving through it.
func BenchmarkView2000NodeCallTree(b *testing.B) {
	mb := uitest.New()
	ctx := context.Background()
	if _, err := mb.NewConversation(ctx, "support", "deep"); err != nil {
		b.Fatal(err)
	}
	turn := &trace.Turn{Inputs: sig.NewMap("question", "q"), Outputs: sig.NewMap("reply", "a"),
		Calls: []*trace.Call{uitest.CallTree("t0", 2000)}}
	if _, err := mb.AddTurn("c1", "main", turn); err != nil {
		b.Fatal(err)
	}
	hs := newHarness(b, mb, 160, 50)
	hs.press("enter", "esc", "enter") // open, focus the chat pane, then the tree
	var ds []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		if i%200 < 100 {
			hs.send(keyMsg("down"))
		} else {
			hs.send(keyMsg("up"))
		}
		_ = hs.m.View()
		ds = append(ds, time.Since(start))
		b.StopTimer()
		hs.settle() // let the commands the key started finish, outside the measurement
		b.StartTimer()
	}
	reportP99(b, ds)
}

// From start to the first drawn conversation on a backend holding 100,000 turns (the
// in-memory backend: this measures the workbench's share, not SQLite's).
func BenchmarkFirstFrame100kTurns(b *testing.B) {
	mb := uitest.New()
	ctx := context.Background()
	if _, err := mb.NewConversation(ctx, "support", "huge"); err != nil {
		b.Fatal(err)
	}
	if err := mb.Seed("c1", "main", 100_000, 1); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		hs := newHarness(b, mb, 160, 50)
		hs.press("enter")
		_ = hs.m.View()
	}
}

// The compare view on a call whose history holds 1,000 turns (2,001 messages a side, a
// difference in every reply): scrolling, paging and jumping between differences. The
// diff and the layout are made once, off the frame; a frame draws what is on screen.
func BenchmarkCompareView1000TurnHistory(b *testing.B) {
	mb := uitest.New()
	ctx := context.Background()
	conv, err := mb.NewConversation(ctx, "support", "long")
	if err != nil {
		b.Fatal(err)
	}
	ev := make(chan sessions.Event, 64)
	go func() {
		for range ev {
		}
	}()
	for i := 0; i <= 1000; i++ {
		if _, err := mb.Send(ctx, sessions.SendRequest{Conv: conv.ID, Branch: "main", Inputs: sig.NewMap("question", fmt.Sprintf("question %d", i))}, ev); err != nil {
			b.Fatal(err)
		}
	}
	close(ev)
	hs := newHarness(b, mb, 160, 45)
	hs.press("enter")
	hs.press("esc", "enter", "down", "c") // the last turn's respond call
	if s := hs.screen(); !strings.Contains(s, "differ") {
		b.Fatalf("the compare view is not ready:\n%s", s)
	}
	keys := []string{"n", "n", "down", "pgdown", "N", "up"}
	var ds []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		hs.send(keyMsg(keys[i%len(keys)]))
		_ = hs.m.View()
		ds = append(ds, time.Since(start))
		b.StopTimer()
		hs.settle()
		b.StartTimer()
	}
	reportP99(b, ds)
}
