package llm

import (
	"sync"
	"time"
)

// Watchdog fires when, once armed, nothing kicks it for d. A zero d never fires. The
// model client bounds a stream's silences with it, and the proxy its upstream's.
type Watchdog struct {
	mu    sync.Mutex
	d     time.Duration
	fire  func()
	t     *time.Timer
	ended bool
}

// NewWatchdog is a watchdog calling fire (once) when it runs out.
func NewWatchdog(d time.Duration, fire func()) *Watchdog { return &Watchdog{d: d, fire: fire} }

// Arm starts the clock (once; later calls are kicks).
func (w *Watchdog) Arm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.d <= 0 || w.ended {
		return
	}
	if w.t == nil {
		w.t = time.AfterFunc(w.d, w.fire)
		return
	}
	w.t.Reset(w.d)
}

// Kick restarts the clock if it runs.
func (w *Watchdog) Kick() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.t != nil && !w.ended {
		w.t.Reset(w.d)
	}
}

// Stop ends the clock for good.
func (w *Watchdog) Stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ended = true
	if w.t != nil {
		w.t.Stop()
	}
}
