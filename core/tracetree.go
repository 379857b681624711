package core

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// PrintTraceTree prints a turn and its call records as the seed's §4.3 tree:
//
//	▼ [Turn 1] SupportAgent
//	  Inputs: question="The reset email never arrives."
//	  ├─ classify (Predict)  → intent="technical"
//	  └─ respond (Predict)   → reply="Let's check your spam folder..."
//	  Outputs: reply="Let's check your spam folder..."
//
// The heading numbers the turn by its index, as every sessionbench view does (the
// seed's picture counts from 1; a turn has one number across the workbench, the CLI
// and the exports). The calls made in one scored attempt of a
// retrying step (seed 003) hang under a line of that attempt, the run's best marked;
// an attempt that made no call (a tool step) is a line of its own (trace.Tree).
func PrintTraceTree(w io.Writer, t *trace.Turn, name string) {
	fmt.Fprintf(w, "▼ [Turn %d] %s\n", t.Index, name)
	fmt.Fprintf(w, "  Inputs: %s\n", kvLine(t.Inputs))
	nodes := trace.Tree(t.Calls, t.Attempts)
	width := 0
	var measure func(ns []*trace.Node, d int)
	measure = func(ns []*trace.Node, d int) {
		for _, n := range ns {
			if n.Call != nil {
				width = max(width, 3*d+len(callLabel(n.Call)))
			}
			measure(n.Children, d+1)
		}
	}
	measure(nodes, 0)
	var rec func(ns []*trace.Node, indent string)
	rec = func(ns []*trace.Node, indent string) {
		for i, n := range ns {
			branch, next := "├─ ", "│  "
			if i == len(ns)-1 {
				branch, next = "└─ ", "   "
			}
			if a := n.Attempt; a != nil {
				fmt.Fprintf(w, "  %s%s%s\n", indent, branch, attemptLine(a, len(n.Children) == 0))
				rec(n.Children, indent+next)
				continue
			}
			c := n.Call
			label := callLabel(c)
			pad := strings.Repeat(" ", max(width-utf8.RuneCountInString(indent)-len(label), 0))
			result := "→ " + kvLine(c.Outputs)
			if c.Error != "" {
				result = "✗ " + strconv.Quote(truncate(c.Error, 60)) // quoted: server text reaches a terminal
			}
			fmt.Fprintf(w, "  %s%s%s%s  %s\n", indent, branch, label, pad, result)
			rec(n.Children, indent+next)
		}
	}
	rec(nodes, "")
	fmt.Fprintf(w, "  Outputs: %s\n", kvLine(t.Outputs))
}

// attemptLine is an attempt's line: "attempt 2 of review  score 0.78  ★ best".
func attemptLine(a *trace.Attempt, callless bool) string {
	line := fmt.Sprintf("attempt %d of %s", a.N, a.Step)
	if a.Error != "" {
		line += "  ✗ failed: " + strconv.Quote(truncate(a.Error, 60))
	} else {
		line += "  score " + strconv.FormatFloat(a.Score, 'g', -1, 64)
	}
	if a.Best {
		line += "  ★ best"
	}
	if callless {
		line += "  (no model calls)"
	}
	return line
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
