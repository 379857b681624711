//go:build !unix && !windows

package storage

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

// tryLock: this system has no file locks Go can use, so no turn can be run here (a
// turn's branch is held by locking its journal); reading a database works.
func tryLock(*os.File, bool) (bool, error) {
	return false, fmt.Errorf("running a turn needs file locks, which %s lacks: %w", runtime.GOOS, errors.ErrUnsupported)
}

func unlock(*os.File) error { return errors.ErrUnsupported }

// named reports whether path still names f, just locked (see lock_unix.go).
func named(f *os.File, _ os.FileInfo, path string) bool { return stillAt(f, path) }
