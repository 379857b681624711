package termtext

import (
	"io"
	"sync"
	"unicode/utf8"
)

// Writer sanitises everything written through it before it reaches w, as Sanitize
// does but keeping tabs (a terminal expands them harmlessly). Text may arrive in any
// pieces, a UTF-8 sequence or a CRLF split across two writes included: the unfinished
// tail waits for the next write, or for Flush. It is safe for concurrent use.
type Writer struct {
	mu   sync.Mutex // writes may come from several goroutines (the proxy's log, a run)
	w    io.Writer
	json bool   // JSON text: escapes (EscapeJSON) instead of pictures
	tail []byte // an unfinished UTF-8 sequence or a lone CR, at most utf8.UTFMax bytes
	buf  []byte
}

// NewWriter returns a Writer that writes the safe form of its input to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// NewJSONWriter returns a Writer for JSON text: it writes what EscapeJSON would, so a
// streamed JSON document stays the same JSON value and is safe on a terminal.
func NewJSONWriter(w io.Writer) *Writer { return &Writer{w: w, json: true} }

func (w *Writer) safe(p []byte) []byte {
	if w.json {
		return appendJSON(w.buf[:0], p)
	}
	return appendSafe(w.buf[:0], string(p), "\t")
}

// Write sanitises p and writes it; it reports len(p) once the safe text is written.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	if len(w.tail) > 0 {
		p = append(w.tail, p...)
		w.tail = nil
	}
	cut := len(p) - unfinished(p)
	w.tail = append([]byte(nil), p[cut:]...)
	w.buf = w.safe(p[:cut])
	if _, err := w.w.Write(w.buf); err != nil {
		return 0, err
	}
	return n, nil
}

// Flush writes what an earlier write left unfinished (an incomplete UTF-8 sequence
// shows as U+FFFD, a trailing CR as ␍).
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.tail) == 0 {
		return nil
	}
	w.buf = w.safe(w.tail)
	w.tail = nil
	_, err := w.w.Write(w.buf)
	return err
}

// unfinished returns how many bytes at the end of p may still become something else
// with the next write: a CR (maybe followed by LF) or the start of a UTF-8 sequence.
func unfinished(p []byte) int {
	if len(p) == 0 {
		return 0
	}
	if p[len(p)-1] == '\r' {
		return 1
	}
	for i := 1; i < utf8.UTFMax && i <= len(p); i++ {
		c := p[len(p)-i]
		if c < 0x80 {
			return 0
		}
		if utf8.RuneStart(c) {
			if utf8.FullRune(p[len(p)-i:]) {
				return 0
			}
			return i
		}
	}
	return 0
}
