package demo

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// tree is a turn's call paths with their depth ("  research.query" one level down).
func tree(t *trace.Turn) []string {
	var out []string
	trace.WalkCalls(t.Calls, func(c *trace.Call, depth int) {
		out = append(out, strings.Repeat("  ", depth)+c.Path+" "+c.PredictorType)
	})
	return out
}

// checkResearchConversation: every turn is plan, research -> [query, query, summarize],
// answer; the research predictors start afresh each turn (per_turn) while plan and
// answer keep theirs; the answers come from the knowledge base with sources.
func checkResearchConversation(t *testing.T, s *core.Session, turns []*trace.Turn) {
	wantTree := []string{"plan Predict", "research Research", "  research.query Predict", "  research.query Predict",
		"  research.summarize Predict", "answer Predict"}
	for i, tr := range turns {
		if got := tree(tr); !reflect.DeepEqual(got, wantTree) {
			t.Fatalf("turn %d tree:\n%s", i, strings.Join(got, "\n"))
		}
		res := tr.Calls[1]
		q1, q2, sum := res.Children[0], res.Children[1], res.Children[2]
		if n1, n2, n3 := len(q1.History.Messages), len(q2.History.Messages), len(sum.History.Messages); n1 != 0 || n2 != 1 || n3 != 0 {
			t.Errorf("turn %d: research histories %d/%d/%d, want 0/1/0 (per_turn)", i, n1, n2, n3)
		}
		if n := len(tr.Calls[0].History.Messages); n != i {
			t.Errorf("turn %d: plan saw %d earlier turns, want %d (cross_turn)", i, n, i)
		}
		if got := res.Inputs.Keys(); !reflect.DeepEqual(got, []string{"plan", "question"}) {
			t.Errorf("turn %d: research inputs %v", i, got)
		}
		if res.Outputs.String("findings") != sum.Outputs.String("findings") || !strings.HasPrefix(res.Outputs.String("findings"), "- [") {
			t.Errorf("turn %d: module outputs %s, summary %s", i, sig.JSON(res.Outputs), sig.JSON(sum.Outputs))
		}
		if q1.Outputs.String("query") == q2.Outputs.String("query") {
			t.Errorf("turn %d: both queries are %q", i, q1.Outputs.String("query"))
		}
		if !strings.Contains(q2.Inputs.String("notes"), "["+q1.Outputs.String("query")+"]") {
			t.Errorf("turn %d: second query's notes lack the first search:\n%s", i, q2.Inputs.String("notes"))
		}
	}
	want := []string{
		"Refunds are available within 30 days of purchase and are paid back to the original card within 5 to 10 business days. [Refund policy]",
		"Human support is available Monday to Friday, 8:00 to 18:00 CET; the help centre is open around the clock. [Support hours]",
		"The knowledge base does not cover this, so I would rather not guess.",
	}
	for i, w := range want {
		if got := turns[i].Outputs.String("answer"); !strings.HasPrefix(got, w) {
			t.Errorf("turn %d answer = %q, want it to start with %q", i, got, w)
		}
	}
	if n := s.Children()["research"].Len(); n != len(turns) {
		t.Errorf("research module kept %d turns, want %d", n, len(turns))
	}
}

// A ResearchAgent session rebuilt from its recorded turns (as the workbench does from
// storage) runs the next turn exactly as the live session does: plan and answer are
// restored from their top-level records, and the research predictors start afresh
// every turn (per_turn), so nothing of theirs needs restoring.
func TestResearchAgentRestoredRunsLikeLive(t *testing.T) {
	a, _ := Lookup("ResearchAgent")
	qs := []string{"How long do refunds take?", "How do I export my data?", "When can I talk to a human?"}
	_, live := runConversation(t, a, qs)
	m, o := a.New()
	s, err := core.Restore(m, o, live[:2])
	if err != nil {
		t.Fatal(err)
	}
	_, next, err := s.Run(demoCtx(a), sig.NewMap("question", qs[2]))
	if err != nil {
		t.Fatal(err)
	}
	if g, w := stable(t, []*trace.Turn{next}), stable(t, live[2:]); g != w {
		t.Fatalf("restored run differs:\n--- restored\n%s\n--- live\n%s", g, w)
	}
}
