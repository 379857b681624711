package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// runTurnJSON is one line of run --json (and of session retry --json): a completed turn,
// or the kept turn that failed, was cancelled or interrupted (Status, Error, FailedCall).
type runTurnJSON struct {
	Conversation string       `json:"conversation"`
	Branch       string       `json:"branch"`
	Turn         string       `json:"turn"`
	Index        int          `json:"index"`
	Source       string       `json:"source"`
	Status       trace.Status `json:"status"`
	Error        string       `json:"error,omitempty"`
	FailedCall   string       `json:"failed_call,omitempty"`
	RetryOf      string       `json:"retry_of,omitempty"`
	Inputs       *sig.Map     `json:"inputs"`
	Outputs      *sig.Map     `json:"outputs"`
	Score        *float64     `json:"score,omitempty"`
	Calls        int          `json:"calls"`
	Usage        lm.Usage     `json:"usage"`
	LatencyMS    int64        `json:"latency_ms"`
}

// turnPrinter reports the turns of run and session retry, as text or JSON lines.
type turnPrinter struct {
	env          Env
	json         bool
	conv, branch string
}

// completed prints a completed turn (now the branch's tip).
func (p turnPrinter) completed(ctx context.Context, s *storage.Store, where string, t *trace.Turn, start time.Time) int {
	if err := s.Settle(); err != nil { // its transaction runs beside the Send
		fmt.Fprintf(p.env.Stderr, "sessionbench: turn from %s ran but could not be stored: %v\n", where, err)
		return storeError
	}
	b, err := s.Branch(ctx, p.conv, p.branch)
	if err != nil {
		fmt.Fprintf(p.env.Stderr, "sessionbench: turn from %s ran but its branch cannot be read: %v\n", where, err)
		return storeError
	}
	calls, usage := callTotals(t.Calls)
	latency := t.Ended.Sub(t.Started)
	if t.Started.IsZero() || t.Ended.IsZero() {
		latency = time.Since(start)
	}
	retryOf := ""
	if n, err := s.TurnInfo(ctx, b.Tip); err == nil {
		retryOf = n.RetryOf
	}
	if p.json {
		err = p.encode(runTurnJSON{Conversation: p.conv, Branch: p.branch, Turn: b.Tip, Index: t.Index, Source: where,
			Status: trace.StatusCompleted, RetryOf: retryOf, Inputs: t.Inputs, Outputs: t.Outputs, Score: t.Score, Calls: calls,
			Usage: usage, LatencyMS: latency.Milliseconds()})
	} else {
		err = runPrintTurn(p.env.Stdout, b.Tip, t, calls, usage, latency)
	}
	if err != nil {
		fmt.Fprintf(p.env.Stderr, "sessionbench: %v\n", err)
		return storeError
	}
	return storeOK
}

func (p turnPrinter) encode(v any) error { return writeJSON(p.env.Stdout, v, false) }

// failed reports a turn that did not complete and returns the exit code: a failed turn
// is kept (inspect it with 'session show', retry it with 'session retry'); a cancelled
// or interrupted one too, the interrupted one resumable.
func (p turnPrinter) failed(ctx context.Context, where string, done int, err error, db string) int {
	kept := ""
	if done > 0 {
		kept = fmt.Sprintf(" %s of this run stored in conversation %s, branch %s.", termtext.Count(done, "earlier turn"), p.conv, p.branch)
	}
	dbArg := dbFlag(db)
	var kt *sessions.KeptTurnError
	if !errors.As(err, &kt) {
		// Nothing was stored for the turn: it failed before it began (a busy branch, an
		// agent that cannot start).
		what, code := "failed", storeError
		if ctx.Err() != nil {
			what, code = "was interrupted", interruptCode(ctx)
		}
		fmt.Fprintf(p.env.Stderr, "sessionbench: the turn from %s %s before it began, nothing stored for it: %v.%s\n", where, what, err, kept)
		return code
	}
	t := kt.Turn
	failedCall := ""
	if c := trace.FailedCall(t.Calls); c != nil {
		failedCall = c.ID + " " + dash(c.Path)
	}
	if p.json {
		calls, usage := callTotals(t.Calls)
		_ = p.encode(runTurnJSON{Conversation: p.conv, Branch: p.branch, Turn: kt.Key, Index: t.Index, Source: where,
			Status: t.Status, Error: t.Error, FailedCall: failedCall, Inputs: t.Inputs, Calls: calls, Usage: usage,
			LatencyMS: t.Ended.Sub(t.Started).Milliseconds()})
	}
	retry := fmt.Sprintf("sessionbench session retry %s%s", kt.Key, dbArg)
	switch t.Status {
	case trace.StatusInterrupted:
		fmt.Fprintf(p.env.Stderr, "sessionbench: %s during the turn from %s; it is left resumable as turn %d [%s] of conversation %s (answered calls are kept): %s.%s\n",
			context.Cause(ctx), where, t.Index, kt.Key, p.conv, retry, kept)
		return interruptCode(ctx)
	case trace.StatusCancelled:
		fmt.Fprintf(p.env.Stderr, "sessionbench: cancelled during the turn from %s; it is kept as cancelled turn %d [%s] of conversation %s (retry: %s; delete: sessionbench session rm-turn %s%s).%s\n",
			where, t.Index, kt.Key, p.conv, retry, kt.Key, dbArg, kept)
		return exitInterrupted
	}
	in := ""
	if failedCall != "" {
		in = " in call " + failedCall
	}
	fmt.Fprintf(p.env.Stderr, "sessionbench: the turn from %s failed%s: %v\nit is kept as failed turn %d [%s] with every call it made (see: sessionbench session show %s%s); retry it from the failure: %s.%s\n",
		where, in, err, t.Index, kt.Key, p.conv, dbArg, retry, kept)
	return storeError
}

// callTotals counts a call tree's calls and sums their usage.
func callTotals(calls []*trace.Call) (int, lm.Usage) {
	var usage lm.Usage
	n := 0
	trace.WalkCalls(calls, func(c *trace.Call, _ int) {
		n++
		usage.PromptTokens += c.Usage.PromptTokens
		usage.CompletionTokens += c.Usage.CompletionTokens
		usage.CachedTokens += c.Usage.CachedTokens
		usage.TotalTokens += c.Usage.TotalTokens
	})
	return n, usage
}

func runPrintTurn(w io.Writer, key string, t *trace.Turn, calls int, u lm.Usage, latency time.Duration) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\nturn %d (id %s) · %s · %d tokens · %s\n", t.Index, key, termtext.Count(calls, "call"), u.TotalTokens, latency.Round(time.Millisecond))
	field := func(mark, k string, v any) {
		lines := strings.Split(py.Text(v), "\n")
		fmt.Fprintf(&b, "  %s %s: %s\n", mark, k, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(&b, "      %s\n", l)
		}
	}
	t.Inputs.Range(func(k string, v any) bool { field(">", k, v); return true })
	t.Outputs.Range(func(k string, v any) bool { field("<", k, v); return true })
	if t.Score != nil {
		fmt.Fprintf(&b, "  score %s\n", py.Float(*t.Score))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
