//go:build !unix

package storage

import "os"

// canWrite reports whether path can be written: a file opened for writing (and closed
// untouched), a folder by its mode.
func canWrite(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.IsDir() {
		if st.Mode().Perm()&0o200 == 0 {
			return &os.PathError{Op: "write", Path: path, Err: os.ErrPermission}
		}
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	return f.Close()
}
