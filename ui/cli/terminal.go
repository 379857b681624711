package cli

import (
	"encoding/json"
	"io"
	"os"

	"github.com/charmbracelet/x/term"
	"github.com/sessionbench/sessionbench/core/redact"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// guard makes what the commands write safe for a terminal, in one place, so no command
// can forget it:
//   - standard error (errors, notes, progress) always goes through the sanitiser: its
//     text quotes models, files and servers, and it ends on a terminal or in a log;
//   - standard output goes through it when it is a terminal (env.Terminal, or an
//     *os.File that is one). Piped or redirected, it carries the exact bytes: it is data
//     for another program or a file, like --out (sanitise a pipe's end yourself, or let
//     the pager do it: less without -R shows controls as ^[);
//   - --json output is written through writeJSON, whose escapes are lossless, so it is
//     the same JSON on a terminal and in a pipe.
//
// Standard error is also redacted: no configured key or sk-shaped token reaches it.
//
// The returned flush writes what a write left unfinished (half a UTF-8 sequence).
func guard(env Env) (Env, func()) {
	errW := termtext.NewWriter(env.Stderr)
	env.Stderr = redactWriter{errW}
	flush := func() { _ = errW.Flush() }
	if env.Terminal || isTerminal(env.Stdout) {
		outW := termtext.NewWriter(env.Stdout)
		env.Stdout = outW
		env.Terminal = true
		flush = func() { _ = outW.Flush(); _ = errW.Flush() }
	}
	return env, flush
}

// isTerminal reports whether w is a file that is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// writeJSONOut writes v as --json output: indented JSON, as writeJSON.
func writeJSONOut(w io.Writer, v any) error { return writeJSON(w, v, true) }

// writeJSON writes v as JSON (no HTML escaping) with every character a terminal could
// act on as a \u escape (termtext.EscapeJSON): the value is unchanged.
func writeJSON(w io.Writer, v any, indent bool) error {
	data, err := marshalJSON(v, indent)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// marshalJSON is writeJSON's text: Go's encoder without HTML escaping, one value and a
// newline, escaped for terminals.
func marshalJSON(v any, indent bool) ([]byte, error) {
	var b jsonBuffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return termtext.EscapeJSON(b), nil
}

type jsonBuffer []byte

func (b *jsonBuffer) Write(p []byte) (int, error) { *b = append(*b, p...); return len(p), nil }

// redactWriter writes each write's text with keys redacted (redact.String); messages are
// written whole (one Fprintf each), so a key is never split between two writes.
type redactWriter struct{ w io.Writer }

func (r redactWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, redact.String(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
