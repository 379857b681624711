package sessions

import (
	"runtime/debug"
	"sync"
)

// Restoring a branch's session allocates what stays live: the path's values and the
// session built from them. A new process starts with a heap of a few megabytes, so the
// collector ran again and again during its first restore, each time marking all that
// was restored so far and freeing almost nothing: at 1,000 turns of SupportAgent it
// doubled the first Send of `sessionbench run` (10-13 ms beyond the model, 6 ms
// without; BenchmarkBeyondModel run-process). So while a session is loaded and
// restored, and in a Send until its first request is out (Service.run), the
// collector's target is raised (restoreGCPercent) and set back after. The heap then
// grows by what the restore allocates, most of which it keeps anyway.
// The setting is the process's: pauses nest (a prefetch beside a preview), and the
// last to end sets back what the first found. Disabling the collector outright
// (SetGCPercent(-1)) would wait for a collection in progress to end.
var gcPause struct {
	mu      sync.Mutex
	n       int
	saved   int
	changed bool // false when the target found was off or higher already (GOGC)
}

// restoreGCPercent is the collector's target while sessions are restored: the heap may
// grow to eleven times what was live when the first restore began before the next
// collection.
const restoreGCPercent = 1000

// pauseGC raises the collector's target until resume is called (once).
func pauseGC() (resume func()) {
	gcPause.mu.Lock()
	if gcPause.n == 0 {
		gcPause.saved = debug.SetGCPercent(restoreGCPercent)
		gcPause.changed = gcPause.saved >= 0 && gcPause.saved < restoreGCPercent
		if !gcPause.changed {
			debug.SetGCPercent(gcPause.saved)
		}
	}
	gcPause.n++
	gcPause.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			gcPause.mu.Lock()
			defer gcPause.mu.Unlock()
			if gcPause.n--; gcPause.n == 0 && gcPause.changed {
				debug.SetGCPercent(gcPause.saved)
			}
		})
	}
}
