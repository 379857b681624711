package proxy

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/sessionbench/sessionbench/core/trace"
)

// logLine writes the one line an exchange gets: time, status, method and path (never
// the query, which may carry a key), then for a chat completion the model, the call's
// path, tokens and latency, and the error if any.
func (s *Server) logLine(ex *exchange, c *trace.Call, recErr error) {
	if s.opts.Log == nil {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %3d %s %s", ex.started.Format("15:04:05"), ex.status, ex.method, ex.path)
	lat := time.Since(ex.started)
	if c != nil {
		lat = c.Latency
		fmt.Fprintf(&b, " model=%s call=%q tokens=%d+%d", orDash(c.Model), c.Path, c.Usage.PromptTokens, c.Usage.CompletionTokens)
	}
	fmt.Fprintf(&b, " %s", lat.Round(time.Millisecond))
	if ex.stream {
		b.WriteString(" stream")
	}
	switch {
	case c == nil:
		b.WriteString(" (not recorded: not a chat completion)")
	case c.Recovered == trace.RecoveredInexact:
		b.WriteString(" (" + c.Adapter + " format, not byte for byte)")
	case c.Recovered == trace.RecoveredNone:
		b.WriteString(" (plain messages)")
	}
	if c != nil && c.Error != "" {
		b.WriteString(" error: " + c.Error)
	}
	if recErr != nil {
		b.WriteString(" NOT RECORDED: " + ex.redact(recErr.Error()))
	}
	line := oneLine(b.String(), 400)
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintln(s.opts.Log, line)
}

// oneLine folds whitespace and drops control characters, so a log line is one line
// that cannot move a terminal's cursor, cut to max runes.
func oneLine(s string, max int) string {
	var b strings.Builder
	n := 0
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if unicode.IsControl(r) {
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
			n++
		}
		space = false
		if n >= max {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
