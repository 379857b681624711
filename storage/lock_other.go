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
