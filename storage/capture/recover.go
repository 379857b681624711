package capture

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"time"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
)

// Recover commits the turns a proxy left open when it was killed: every call it stored
// is kept, the turn's outputs are its last successful call's. Turns of a proxy still
// running (its process is alive on this host) are left alone, as are turns whose branch
// moved since. New runs it; the workbench runs it at start. onTurn, when set, is told
// about each committed turn.
func Recover(ctx context.Context, st *storage.Store, onTurn func(ctx context.Context, convID, turnKey string)) (int, error) {
	pending, err := st.PendingTurns(ctx)
	if err != nil {
		return 0, fmt.Errorf("capture: %w", err)
	}
	n := 0
	for _, p := range pending {
		c, err := st.Conversation(ctx, p.ConvID)
		if err != nil {
			return n, fmt.Errorf("capture: %w", err)
		}
		if c.Agent != Agent || p.Stale || p.Branch == "" || ownerAlive(c.Metadata[ownerKey]) {
			continue
		}
		sink := st.Sink(p.ConvID, p.Branch)
		if err := sink.Resume(ctx, p.Key); err != nil {
			return n, fmt.Errorf("capture: recover turn %s of %s: %w", p.Key, p.ConvID, err)
		}
		key, err := sink.BeginTurn(ctx, p.Inputs)
		if err != nil {
			return n, fmt.Errorf("capture: recover turn %s of %s: %w", p.Key, p.ConvID, err)
		}
		t := &trace.Turn{Inputs: p.Inputs, Outputs: sig.NewMap(), Started: p.Started, Ended: p.Started}
		var last time.Time
		trace.WalkCalls(p.Calls, func(c *trace.Call, _ int) {
			end := c.Started.Add(c.Latency)
			if end.After(t.Ended) {
				t.Ended = end
			}
			if c.Error == "" && c.Outputs != nil && !end.Before(last) {
				t.Outputs, last = c.Outputs, end
			}
		})
		if err := sink.CommitTurn(ctx, key, t); err != nil {
			return n, fmt.Errorf("capture: recover turn %s of %s: %w", p.Key, p.ConvID, err)
		}
		n++
		if onTurn != nil {
			onTurn(ctx, p.ConvID, key)
		}
	}
	return n, nil
}

// ownerAlive reports whether the process that recorded into a conversation (its owner
// metadata) may still be running: it is, when it is another live process on this host,
// or on another host (which cannot be checked from here).
func ownerAlive(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	host, _ := os.Hostname()
	if h, _ := m["host"].(string); h != host {
		return true
	}
	pid, _ := m["pid"].(float64)
	if int(pid) <= 0 || int(pid) == os.Getpid() {
		return false
	}
	proc, err := os.FindProcess(int(pid))
	if err != nil {
		return false
	}
	if runtime.GOOS == "windows" {
		return true // FindProcess found it; Windows has no signal 0
	}
	err = proc.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}
