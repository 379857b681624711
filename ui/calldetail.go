package ui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// callDetail is the full text of one call: inputs, outputs, raw completion, the exact
// request, attempts and error, for the detail view.
func callDetail(st *stylesheet, c *trace.Call, w int) []string {
	s := st.s
	var out []string
	sec := func(name string) { out = append(out, "", s.Title.Render(name)) }
	kv := func(k, v string) {
		out = append(out, wrapLines(s.Muted.Render(k+": ")+termtext.Sanitize(v), w)...)
	}
	if isModuleRecord(c) {
		out = append(out, s.Title.Render(termtext.OneLine(c.Path))+s.Muted.Render("  "+termtext.OneLine(c.PredictorType)+" · module: "+
			termtext.Count(len(c.Children), "inner call")+", no request of its own"))
	} else {
		out = append(out, s.Title.Render(termtext.OneLine(c.Path))+s.Muted.Render("  "+termtext.OneLine(c.PredictorType)+" · "+termtext.OneLine(c.Adapter)+" adapter · "+termtext.OneLine(c.Model)))
	}
	kv("id", c.ID)
	kv("latency", fmtDuration(c.Latency))
	u, of := callUsage(c), ""
	if u != c.Usage {
		of = " (sum of its inner calls)"
	}
	if u.Estimated {
		of += " (≈ estimated with tiktoken: the server reported no usage)"
	}
	kv("usage", fmt.Sprintf("%d prompt + %d completion = %d tokens (%d cached)%s", u.PromptTokens, u.CompletionTokens, u.TotalTokens, u.CachedTokens, of))
	if c.Error != "" {
		out = append(out, wrapLines(s.Error.Render("error: ")+termtext.Sanitize(c.Error), w)...)
	}
	sec("Inputs")
	c.Inputs.Range(func(k string, v any) bool { kv(k, py.Text(v)); return true })
	sec("Outputs")
	if c.Outputs == nil {
		out = append(out, s.Muted.Render("(none: the call failed)"))
	}
	c.Outputs.Range(func(k string, v any) bool { kv(k, py.Text(v)); return true })
	sec(fmt.Sprintf("History seen (%d messages)", len(c.History.Messages)))
	for i, m := range c.History.Messages {
		out = append(out, s.Muted.Render(fmt.Sprintf("[%d]", i)))
		m.Range(func(k string, v any) bool { kv("  "+k, py.Text(v)); return true })
	}
	sec("Raw completion")
	out = append(out, wrapLines(termtext.Sanitize(c.Completion), w)...)
	sec(fmt.Sprintf("Exact request (%d messages)", c.Messages.Len()))
	for _, m := range c.Messages.All() {
		out = append(out, roleStyle(st, m.Role).Render("── "+termtext.OneLine(m.Role)+" ──"))
		out = append(out, wrapLines(termtext.Sanitize(m.Content), w)...)
	}
	if len(c.Tries) > 0 {
		sec("Tries")
		for _, a := range c.Tries {
			line := fmt.Sprintf("#%d  status %d  %s", a.N, a.Status, fmtDuration(a.Latency))
			if a.Err != "" {
				line += "  " + a.Err
			}
			if a.Retrying {
				line += "  (retried after " + fmtDuration(a.Wait) + ")"
			}
			if a.Adapter != "" {
				line += "  · " + a.Adapter + " adapter, given up"
			}
			out = append(out, wrapLines(termtext.Sanitize(line), w)...)
			// a request the call gave up on (the ChatAdapter -> JSONAdapter fallback):
			// what was sent and what came back, as for the call's own request
			if len(a.Messages) > 0 {
				out = append(out, s.Muted.Render(fmt.Sprintf("  request sent (%d messages, %s adapter):", len(a.Messages), termtext.OneLine(a.Adapter))))
				for _, m := range a.Messages {
					out = append(out, roleStyle(st, m.Role).Render("  ── "+termtext.OneLine(m.Role)+" ──"))
					out = append(out, indent(wrapLines(termtext.Sanitize(m.Content), w-2), "  ")...)
				}
			}
			if a.Completion != "" {
				out = append(out, s.Muted.Render("  completion received:"))
				out = append(out, indent(wrapLines(termtext.Sanitize(a.Completion), w-2), "  ")...)
			}
		}
	}
	if c.RawRequest != "" {
		sec("HTTP request body")
		out = append(out, wrapLines(termtext.Sanitize(c.RawRequest), w)...)
	}
	if c.RawResponse != "" {
		sec("HTTP response body")
		out = append(out, wrapLines(termtext.Sanitize(c.RawResponse), w)...)
	}
	return out
}

// attemptDetail is an attempt's full record (seed 003): score, whether it is its run's
// best, when it was scored, its summary, the fields it produced and its calls.
func attemptDetail(st *stylesheet, a *trace.Attempt, w int) []string {
	s := st.s
	var out []string
	kv := func(k, v string) {
		out = append(out, wrapLines(s.Muted.Render(k+": ")+termtext.Sanitize(v), w)...)
	}
	head := s.Title.Render(attemptTitle(a))
	if a.Best {
		head += s.Success.Render("  ★ best of its run")
	}
	out = append(out, head)
	kv("score", strconv.FormatFloat(a.Score, 'g', -1, 64))
	kv("scored at", a.Time.Local().Format("2006-01-02 15:04:05"))
	if a.Error != "" {
		out = append(out, wrapLines(s.Error.Render("error: ")+termtext.Sanitize(a.Error), w)...)
	}
	kv("summary", a.Summary)
	kv("calls", strings.Join(a.Calls, ", "))
	out = append(out, "", s.Title.Render("Produced"))
	if a.Details == nil {
		out = append(out, s.Muted.Render("(nothing: the attempt failed)"))
	}
	a.Details.Range(func(k string, v any) bool { kv(k, py.Text(v)); return true })
	return out
}
