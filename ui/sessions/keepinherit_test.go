package sessions

import (
	"context"
	"slices"
	"testing"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/demo"
)

// Every built-in agent shows what the workbench is for by its second turn: at least one
// of that turn's calls sends a different request under keep (strategy 1) than under
// inherit (strategy 2).
func TestEveryDemoAgentKeepDiffersFromInherit(t *testing.T) {
	questions := map[string][]string{
		"SupportAgent":         {"I can't log in", "The reset email never arrives"},
		"CorrectThenTranslate": {"This plant is red", "Can I have it?"},
		"RetryAgent":           {"Plan a team offsite for 12 people", "Plan the launch of our data export feature"},
		"StepAgent":            {"What is 17 * 23 + 4?", "What is our refund policy?"},
		"RAGAgent":             {"How long do refunds take?", "How do I enable two-factor authentication?"},
		"Orchestrator":         {"Plan a team offsite for 12 people", "Now write the invitation email"},
		"ResearchAgent":        {"How long do refunds take?", "When can I talk to a human?"},
	}
	ctx := context.Background()
	for _, ag := range demo.Agents() {
		t.Run(ag.Name, func(t *testing.T) {
			qs, ok := questions[ag.Name]
			if !ok {
				t.Fatalf("no questions for %s: add two to this test", ag.Name)
			}
			a, _, _, _ := newWorkbench(t)
			conv := mustConversation(t, a, ag.Name)
			for _, q := range qs {
				mustSend(t, a, conv, "main", sig.NewMap(ag.Inputs[0], q))
			}
			pg := pageOf(t, a, conv, "main")
			var differ []string
			trace.WalkCalls(pg.Turns[1].Calls, func(c *trace.Call, _ int) {
				if len(c.Children) > 0 {
					return // a module record sends nothing itself
				}
				var rs [2]Rendering
				for i, strategy := range []int{1, 2} {
					r, err := a.Preview(ctx, PreviewRequest{Conv: conv, Branch: "main", Turn: pg.IDs[1], Call: c.ID, Strategy: strategy})
					if err != nil || r.Err != "" {
						t.Fatalf("%s under strategy %d: %v %s", c.Path, strategy, err, r.Err)
					}
					rs[i] = r
				}
				if !slices.EqualFunc(rs[0].Messages, rs[1].Messages, func(x, y RenderedMessage) bool { return x.Message == y.Message }) {
					differ = append(differ, c.Path)
				}
			})
			if len(differ) == 0 {
				t.Errorf("turn 1 of %s sends the same requests under keep and inherit in every call", ag.Name)
			}
		})
	}
}
