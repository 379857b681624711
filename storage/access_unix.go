//go:build unix

package storage

import (
	"os"
	"syscall"
)

// canWrite asks the kernel whether this process may write path (permissions, and a
// read-only mount: EROFS).
func canWrite(path string) error {
	if err := syscall.Access(path, 2 /* W_OK */); err != nil {
		return &os.PathError{Op: "access", Path: path, Err: err}
	}
	return nil
}
