package sessions

import (
	"context"
	"runtime/debug"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/storage"
)

// gcPercent is the collector's target as set now.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// Pauses nest: the target is raised while any is in force and set back to what the
// first found when the last ends; a target found off, or higher already, is left alone;
// ending a pause twice counts once.
func TestPauseGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	// an earlier test's background restore may still hold a pause
	for i := 0; i < 200 && pausesHeld() > 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	for _, c := range []struct {
		name        string
		found, held int
	}{{"default", 100, restoreGCPercent}, {"low", 50, restoreGCPercent}, {"off", -1, -1}, {"higher", 5000, 5000}} {
		t.Run(c.name, func(t *testing.T) {
			debug.SetGCPercent(c.found)
			outer := pauseGC()
			inner := pauseGC()
			if got := gcPercent(); got != c.held {
				t.Fatalf("during two pauses: %d, want %d", got, c.held)
			}
			inner()
			inner()
			if got := gcPercent(); got != c.held {
				t.Fatalf("after the inner pause ended (twice): %d, want %d", got, c.held)
			}
			outer()
			if got := gcPercent(); got != c.found {
				t.Fatalf("after both ended: %d, want %d", got, c.found)
			}
		})
	}
}

// pausesHeld is how many pauses are in force.
func pausesHeld() int {
	gcPause.mu.Lock()
	defer gcPause.mu.Unlock()
	return gcPause.n
}

// gcProbeLM answers at once, noting the collector's target once its call has waited a
// while (the model thinking).
type gcProbeLM struct {
	instantLM
	seen []int
}

func (m *gcProbeLM) Call(ctx context.Context, req lm.Request) (lm.Response, error) {
	time.Sleep(30 * warmAfter)
	m.seen = append(m.seen, gcPercent())
	return m.instantLM.Call(ctx, req)
}

// A Send holds the collector off only until its first request is on its way: while the
// model thinks, and after the Send (whether it failed before any call or not), the
// target is the process's own again.
func TestSendPausesTheCollectorUntilItsRequestIsOut(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	ctx := context.Background()
	model := &gcProbeLM{}
	a, _ := serviceWith(t, model)
	conv := mustConversation(t, a, "SupportAgent")
	mustSend(t, a, conv, storage.MainBranch, question("first"))
	if len(model.seen) != 2 || model.seen[0] != 100 || model.seen[1] != 100 {
		t.Errorf("the target while the model thought: %v, want 100 for both calls", model.seen)
	}
	if got := gcPercent(); got != 100 {
		t.Errorf("after the Send: %d, want 100", got)
	}
	if _, err := a.Send(ctx, SendRequest{Conv: conv, Branch: storage.MainBranch, Inputs: sig.NewMap("nope", "x")}, nil); err == nil {
		t.Fatal("a Send without the agent's input succeeded")
	}
	if got := gcPercent(); got != 100 {
		t.Errorf("after a Send that failed: %d, want 100", got)
	}
}
