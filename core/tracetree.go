package core

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// PrintTraceTree prints a turn and its call records as the seed's §4.3 tree:
//
//	▼ [Turn 2] SupportAgent
//	  Inputs: question="The reset email never arrives."
//	  ├─ classify (Predict)  → intent="technical"
//	  └─ respond (Predict)   → reply="Let's check your spam folder..."
//	  Outputs: reply="Let's check your spam folder..."
//
// Turns are numbered from 1 in the heading.
func PrintTraceTree(w io.Writer, t *trace.Turn, name string) {
	fmt.Fprintf(w, "▼ [Turn %d] %s\n", t.Index+1, name)
	fmt.Fprintf(w, "  Inputs: %s\n", kvLine(t.Inputs))
	width := 0
	trace.WalkCalls(t.Calls, func(c *trace.Call, d int) {
		width = max(width, 3*d+len(callLabel(c)))
	})
	var rec func(calls []*trace.Call, indent string)
	rec = func(calls []*trace.Call, indent string) {
		for i, c := range calls {
			branch, next := "├─ ", "│  "
			if i == len(calls)-1 {
				branch, next = "└─ ", "   "
			}
			label := callLabel(c)
			pad := strings.Repeat(" ", max(width-len(indent)-len(label), 0))
			result := "→ " + kvLine(c.Outputs)
			if c.Error != "" {
				result = "✗ " + strconv.Quote(truncate(c.Error, 60)) // quoted: server text reaches a terminal
			}
			fmt.Fprintf(w, "  %s%s%s%s  %s\n", indent, branch, label, pad, result)
			rec(c.Children, indent+next)
		}
	}
	rec(t.Calls, "")
	fmt.Fprintf(w, "  Outputs: %s\n", kvLine(t.Outputs))
}

func callLabel(c *trace.Call) string { return fmt.Sprintf("%s (%s)", c.Path, c.PredictorType) }

// kvLine renders `k="v", n=3` with long values cut.
func kvLine(m *sig.Map) string {
	var parts []string
	m.Range(func(k string, v any) bool {
		if s, ok := v.(string); ok {
			parts = append(parts, fmt.Sprintf("%s=%q", k, truncate(s, 60)))
		} else {
			parts = append(parts, k+"="+truncate(py.Text(v), 60))
		}
		return true
	})
	return strings.Join(parts, ", ")
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-3]) + "..."
}
