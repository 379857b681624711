//go:build unix

package adapter

import (
	"syscall"
	"time"
)

// cpuTime is the process's user+system CPU time: on a shared machine it varies far less
// than wall time, so the parse benchmark reports it beside ns/op.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
