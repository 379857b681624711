package ui

import (
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/ui/sessions"
)

// A count the server did not report is shown with ≈, wherever usage is summed: a call,
// a module record over its inner calls, a turn, a pane's loaded turns.
func TestEstimatedUsageIsMarked(t *testing.T) {
	exact := lm.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}
	est := lm.Usage{PromptTokens: 1200, CompletionTokens: 34, TotalTokens: 1234, Estimated: true}
	module := &trace.Call{Path: "agent", Children: []*trace.Call{{Path: "agent.a", Usage: exact}, {Path: "agent.b", Usage: est}}}
	turn := &trace.Turn{Inputs: sig.NewMap("q", "x"), Outputs: sig.NewMap("a", "y"), Calls: []*trace.Call{module}}
	_, turnUsage, _, _ := turnStats(turn)
	p := &chatPane{}
	p.setPage(sessions.TurnPage{Turns: []*trace.Turn{turn}, IDs: []string{"t1"}, Total: 1})
	cases := []struct {
		name string
		got  string
		want string
	}{
		{"exact call", usageLabel(exact), "12"},
		{"estimated call", usageLabel(est), "≈1.2k"},
		{"module over an estimate", usageLabel(callUsage(module)), "≈1.2k"},
		{"turn", usageLabel(turnUsage), "≈1.2k"},
		{"pane", usageLabel(p.usage), "≈1.2k"},
		{"zero", usageLabel(lm.Usage{}), "0"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", c.name, c.got, c.want)
		}
	}
}
