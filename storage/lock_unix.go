//go:build unix

package storage

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes an advisory lock on f without waiting: exclusive for the process running
// a turn, shared for one that only looks. It reports false when another open file holds
// a conflicting lock (in this process or another). The kernel drops the lock when the
// file is closed or its process dies, however it dies: that is what makes a journal
// whose lock is free a turn whose process is gone.
func tryLock(f *os.File, exclusive bool) (bool, error) {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// unlock lets go of f's lock, keeping f open.
func unlock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// named reports whether path still names f, just locked, whose FileInfo is fi: a closing
// store may have swept the journal since f was opened. A journal is never renamed, so a
// file that still has a name has that one.
func named(_ *os.File, fi os.FileInfo, _ string) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink > 0
}
