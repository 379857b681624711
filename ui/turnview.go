package ui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// renderer knows how to draw turns: the styles and the markdown renderer.
type renderer struct {
	st *stylesheet
	md *markdown
}

// turnLabel is how a turn is named everywhere (the TUI, the session commands, --at and
// the exports all count from 0: it is the turn's Index).
func turnLabel(index int) string { return "turn " + strconv.Itoa(index) }

// renderTurn draws a finished turn at width w: its inputs, a line of stats, its outputs
// (as markdown) and the errors of its calls.
func renderTurn(r renderer, t *trace.Turn, w int) []string {
	s := r.st.s
	var out []string
	calls, tok, lat, errs := turnStats(t)
	out = append(out, s.UserLabel.Render(fmt.Sprintf("#%d you", t.Index)))
	out = append(out, indent(fieldLines(r, t.Inputs, w-2), "  ")...)
	meta := " · " + termtext.Count(calls, "call") + " · " + usageLabel(tok) + " tok · " + fmtDuration(lat)
	out = append(out, s.AssistantLabel.Render("assistant")+s.Muted.Render(meta))
	if t.Outputs.Len() == 1 {
		k := t.Outputs.Keys()[0]
		v, _ := t.Outputs.Get(k)
		out = append(out, r.md.render(py.Text(v), w)...)
	} else {
		t.Outputs.Range(func(k string, v any) bool {
			text := py.Text(v)
			if label := "  " + termtext.OneLine(k) + ": "; plainShort(text, w-len(label)) {
				// a short plain value (a score, a flag, a label) reads best beside its name
				out = append(out, s.Muted.Render(label)+termtext.Sanitize(text))
				return true
			}
			out = append(out, s.Muted.Render("  "+termtext.OneLine(k)+":"))
			out = append(out, r.md.render(text, w)...)
			return true
		})
	}
	for _, e := range errs {
		out = append(out, indent(wrapLines(s.Error.Render("✗ ")+termtext.Sanitize(e), w-2), "  ")...)
	}
	return append(out, "")
}

// plainShort reports a one-line value of at most w cells with nothing markdown would
// render differently.
func plainShort(text string, w int) bool {
	if text == "" || len(text) > w || strings.ContainsAny(text, "\n\r\t*_`[]#|<>\\~") {
		return false
	}
	if strings.HasPrefix(text, "- ") || strings.HasPrefix(text, "+ ") {
		return false
	}
	if i := strings.IndexByte(text, '.'); i > 0 && i+1 < len(text) && text[i+1] == ' ' && strings.Trim(text[:i], "0123456789") == "" {
		return false // "1. step" is a list item
	}
	return true
}

// fieldLines shows inputs: a lone field as plain text, several as "name: value".
func fieldLines(r renderer, m *sig.Map, w int) []string {
	if m.Len() == 1 {
		v, _ := m.Get(m.Keys()[0])
		return wrapLines(termtext.Sanitize(py.Text(v)), w)
	}
	var out []string
	m.Range(func(k string, v any) bool {
		out = append(out, wrapLines(r.st.s.Muted.Render(termtext.OneLine(k)+": ")+termtext.Sanitize(py.Text(v)), w)...)
		return true
	})
	return out
}

func indent(ls []string, pre string) []string {
	for i := range ls {
		ls[i] = pre + ls[i]
	}
	return ls
}

// turnStats sums a turn's calls: count, usage, wall time and error texts.
func turnStats(t *trace.Turn) (calls int, usage lm.Usage, lat time.Duration, errs []string) {
	trace.WalkCalls(t.Calls, func(c *trace.Call, depth int) {
		calls++
		usage = usage.Add(c.Usage)
		if c.Error != "" {
			errs = append(errs, c.Path+": "+c.Error)
		}
	})
	if !t.Ended.IsZero() && !t.Started.IsZero() {
		lat = t.Ended.Sub(t.Started)
	} else {
		for _, c := range t.Calls {
			lat += c.Latency
		}
	}
	return
}

func fmtDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return strconv.Itoa(int(d/time.Millisecond)) + "ms"
	case d < time.Minute:
		return trimZero(d.Seconds()) + "s"
	default:
		return d.Round(time.Second).String()
	}
}

// streamState is a turn being written.
type streamState struct {
	index   int // the Index the turn will have
	inputs  *sig.Map
	path    string
	field   string
	outputs map[string][]adapter.FieldText // the completion so far per call path, by field, as the backend reports it
	try     lm.Try
	retryAt time.Time // when the next try starts, if retrying
	started time.Time
	calls   int
}

// streamLines draws the turn in flight: the inputs, then the text so far by output field
// (plain: it is re-rendered as markdown once finished), the field being written and any
// retry wait.
func streamLines(r renderer, st *streamState, w int) []string {
	s := r.st.s
	out := []string{s.UserLabel.Render(fmt.Sprintf("#%d you", st.index))}
	out = append(out, indent(fieldLines(r, st.inputs, w-2), "  ")...)
	label := "assistant"
	if st.path != "" {
		label += " · " + termtext.OneLine(st.path)
	}
	if st.field != "" {
		label += " · writing " + termtext.OneLine(st.field)
	}
	if st.calls > 0 {
		label += " · " + termtext.Count(st.calls, "call") + " done"
	}
	out = append(out, s.AssistantLabel.Render(label))
	for _, f := range st.outputs[st.path] {
		if f.Name != "" {
			out = append(out, s.Muted.Render("  "+termtext.OneLine(f.Name)+":"))
		}
		if text := strings.Trim(f.Text, "\n"); text != "" {
			out = append(out, indent(wrapLines(termtext.Sanitize(text), w-2), "  ")...)
		}
	}
	if st.try.Retrying {
		left := time.Until(st.retryAt).Round(time.Second)
		out = append(out, s.Warning.Render(fmt.Sprintf("  try %d failed: %s · retrying in %s",
			st.try.N, termtext.OneLine(st.try.Err), fmtDuration(max(left, 0)))))
	}
	out = append(out, s.Muted.Render("  … esc cancels"), "")
	return out
}
