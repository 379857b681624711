package demo

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
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
			t.Errorf("turn %d: module outputs %s, summary %s", i, py.CompactJSON(res.Outputs), py.CompactJSON(sum.Outputs))
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

// Any question gets a deterministic answer from the demo model: cited from the
// knowledge base, or saying it is not covered.
func TestResearchScriptsAnswerAnyQuestion(t *testing.T) {
	a, _ := Lookup("ResearchAgent")
	cases := []struct{ q, want string }{
		{"How do I enable two-factor authentication?", "[Two-factor authentication]"},
		{"invoice", "[Billing cycle]"},
		{"Plan a team offsite", "[Team offsites]"},
		{"What's the weather like?", "does not cover this"},
		{"", "does not cover this"},
		{"  \n\n", "does not cover this"},
		{"Où est ma facture ? 請幫忙", "does not cover this"},
		{strings.Repeat("refund ", 200), "[Refund policy]"},
	}
	for _, c := range cases {
		_, first := runConversation(t, a, []string{c.q})
		_, again := runConversation(t, a, []string{c.q})
		got := first[0].Outputs.String("answer")
		if !strings.Contains(got, c.want) {
			t.Errorf("%q: answer %q, want %q in it", c.q, got, c.want)
		}
		if stable(t, first) != stable(t, again) {
			t.Errorf("%q: two runs differ", c.q)
		}
		if n := len(first[0].Calls[1].Children); n != 3 {
			t.Errorf("%q: research made %d calls", c.q, n)
		}
	}
}

// The scripts answer only the ResearchAgent's predictors: another agent's "answer"
// predictor with other inputs is left to the demo model's default.
func TestResearchScriptsStayOwn(t *testing.T) {
	for _, s := range researchScripts() {
		if sc := s.(script); sc.inputs == nil {
			t.Errorf("script %s matches any inputs", sc.pred)
		}
	}
	ans := researchScripts()[3].(script)
	if _, ok := ans.Answer(lmMeta("answer", []string{"answer"}, "question"), nil); ok {
		t.Error("the answer script answered a question -> answer predictor")
	}
	if _, ok := ans.Answer(lmMeta("answer", []string{"answer"}, "question", "findings"), nil); !ok {
		t.Error("the answer script did not answer its own predictor")
	}
}

// lmMeta is a request's metadata for a Predict at path with the given outputs and inputs.
func lmMeta(path string, outputs []string, inputs ...string) lm.Meta {
	var in, out []sig.Field
	vals := sig.NewMap()
	for _, n := range inputs {
		in = append(in, str(n, ""))
		vals.Set(n, "x")
	}
	for _, n := range outputs {
		out = append(out, str(n, ""))
	}
	return lm.Meta{Path: path, PredictorType: "Predict", Signature: sig.New("S", "", in, out), Inputs: vals}
}
