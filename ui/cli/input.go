package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/sessionbench/sessionbench/core/limits"
)

// The largest inputs the commands read. Each is far beyond real use and keeps memory
// bounded: a command holds its input and what it decodes to (a few times its size).
const (
	maxRequest  = 32 << 20  // wire format|parse|strategies: one request or scenario
	maxMessage  = 16 << 20  // ask: one message (no model's context holds more)
	maxScript   = 64 << 20  // run --script
	maxSaveFile = 256 << 20 // import
)

// readInput reads r (standard input, an open file) whole, refusing more than limit
// bytes without reading further (a *limits.SizeError) and text that is not UTF-8 (a
// *limits.UTF8Error: what the user gave is never silently changed into U+FFFD).
func readInput(r io.Reader, what string, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	if int64(len(data)) > limit {
		return nil, &limits.SizeError{What: what, Limit: limit}
	}
	if err := limits.CheckUTF8(data); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return data, nil
}

// readFile is readInput for a file named on the command line; the size is checked
// before anything is read.
func readFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > limit {
		return nil, &limits.SizeError{What: path, Limit: limit}
	} else if err == nil && st.IsDir() {
		return nil, fmt.Errorf("%s is a directory, not a file", path)
	}
	return readInput(f, path, limit)
}
