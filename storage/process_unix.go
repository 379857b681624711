//go:build unix

package storage

import (
	"errors"
	"syscall"
)

// processExists reports whether a process with this pid exists (signal 0 checks without
// sending anything; EPERM means it exists under another user).
func processExists(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
