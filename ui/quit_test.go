package ui_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/ui"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/uitest"
)

// cleanupBackend's turns run until cancelled, then take a while to drop their pending
// record, as the real backend does in the database.
type cleanupBackend struct {
	*uitest.Memory
	once        sync.Once
	started     chan struct{}
	cleaned     atomic.Bool
	interrupted atomic.Bool
}

func (b *cleanupBackend) Send(ctx context.Context, req sessions.SendRequest, ev chan<- sessions.Event) (*trace.Turn, error) {
	b.once.Do(func() { close(b.started) })
	<-ctx.Done()
	b.interrupted.Store(errors.Is(context.Cause(ctx), trace.ErrInterrupted))
	time.Sleep(300 * time.Millisecond)
	b.cleaned.Store(true)
	return nil, ctx.Err()
}

// Quitting during a turn asks first; confirmed, it stops the turn as interrupted (so the
// backend keeps it resumable, not cancelled) and Run returns only once the backend has
// recorded it (found end to end: ctrl+c mid-turn sometimes left a turn in flight,
// depending on whether the process exited before the backend's cleanup).
func TestQuitDuringTurnWaitsForCleanup(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	b := &cleanupBackend{Memory: uitest.New(), started: make(chan struct{})}
	in, keys := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- ui.Run(context.Background(), b, ui.Options{Theme: "dark", ProgramOptions: []tea.ProgramOption{
			tea.WithInput(in), tea.WithOutput(io.Discard), tea.WithWindowSize(100, 30)}})
	}()
	// the first conversation opens; type a question and send it
	go func() {
		time.Sleep(200 * time.Millisecond)
		_, _ = keys.Write([]byte("hello\r"))
	}()
	select {
	case <-b.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the turn did not start")
	}
	_, _ = keys.Write([]byte{0x03}) // ctrl+c: are you sure?
	time.Sleep(200 * time.Millisecond)
	if b.cleaned.Load() {
		t.Fatal("ctrl+c stopped the turn without asking")
	}
	_, _ = keys.Write([]byte("y"))
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after ctrl+c")
	}
	if !b.cleaned.Load() {
		t.Error("Run returned before the cancelled turn was cleaned up")
	}
	if !b.interrupted.Load() {
		t.Error("quitting cancelled the turn instead of interrupting it (it would not be resumable)")
	}
}
