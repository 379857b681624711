//go:build unix

package e2e

import (
	"os"
	"runtime"
	"syscall"
)

// maxRSSMiB is a finished process's peak resident memory in MiB (0 when unknown).
func maxRSSMiB(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok || ps == nil {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return ru.Maxrss >> 20 // bytes there, KiB elsewhere
	}
	return ru.Maxrss >> 10
}
