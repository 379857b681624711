package demo

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

func paths(t *trace.Turn) []string {
	var out []string
	for _, c := range t.Calls {
		out = append(out, c.Path)
	}
	return out
}

// histJSON is the history's messages as a JSON list.
func histJSON(h sig.History) string {
	s := py.CompactJSON(h)
	return strings.TrimSuffix(strings.TrimPrefix(s, `{"messages":`), "}")
}

// Each demo agent holds a multi-turn conversation through the session engine with the
// turns, calls, histories and outputs the seed describes.
func TestDemoAgentConversations(t *testing.T) {
	checks := map[string]func(t *testing.T, s *core.Session, turns []*trace.Turn){
		"SupportAgent": func(t *testing.T, s *core.Session, turns []*trace.Turn) {
			want := []string{`{"reply":"Try resetting your password.","intent":"technical"}`}
			if got := py.CompactJSON(turns[0].Outputs); got != want[0] {
				t.Errorf("turn 0 outputs = %s", got)
			}
			for _, tr := range turns {
				if !reflect.DeepEqual(paths(tr), []string{"classify", "respond"}) {
					t.Errorf("turn %d calls = %v", tr.Index, paths(tr))
				}
			}
			// keep, cross_turn: classify sees its own earlier question -> intent pairs,
			// respond its own reasoning (which the outer history lacks).
			if got := histJSON(turns[1].Calls[0].History); got != `[{"question":"I can't log in","intent":"technical"}]` {
				t.Errorf("classify history at turn 1 = %s", got)
			}
			if got := histJSON(turns[2].Calls[1].History); got != `[{"question":"I can't log in","intent":"technical","reasoning":"The customer has a technical question I have a known answer for.","reply":"Try resetting your password."},{"question":"The reset email never arrives","intent":"technical","reasoning":"The customer has a technical question I have a known answer for.","reply":"Let's check your spam folder: reset emails can take up to 5 minutes and often land there. If it is not there, I can resend it to the address on file."}]` {
				t.Errorf("respond history at turn 2 = %s", got)
			}
			if n := s.Children()["classify"].Len(); n != 3 {
				t.Errorf("classify child turns = %d, want 3", n)
			}
		},
		"CorrectThenTranslate": func(t *testing.T, s *core.Session, turns []*trace.Turn) {
			if got := py.CompactJSON(turns[2].Outputs); got != `{"corrected":"No, it's too precious. I want to keep it.","translated":"Non, elle est trop précieuse. Je veux la garder."}` {
				t.Errorf("turn 2 outputs = %s", got)
			}
			// Seed 000 line 731: the translator's own history on turn 2.
			if got := histJSON(turns[2].Calls[1].History); got != `[{"corrected":"This plant is red.","target_language":"French","translated":"Cette plante est rouge."},{"corrected":"Can I have it?","target_language":"French","translated":"Puis-je l'avoir ?"}]` {
				t.Errorf("translator history = %s", got)
			}
			if got := histJSON(turns[2].Calls[0].History); got != `[{"text":"This plant is red","corrected":"This plant is red."},{"text":"Can I have it?","corrected":"Can I have it?"}]` {
				t.Errorf("corrector history = %s", got)
			}
		},
		"RetryAgent": func(t *testing.T, s *core.Session, turns []*trace.Turn) {
			if !reflect.DeepEqual(paths(turns[0]), []string{"planner", "validator", "planner", "validator"}) {
				t.Fatalf("calls = %v", paths(turns[0]))
			}
			o := turns[0].Outputs
			valid, _ := o.Get("is_valid")
			if o.String("status") != string(trace.StatusCompleted) || o.String("attempts") != "2" || o.String("best_attempt") != "2" || valid != true {
				t.Errorf("outputs = %s", py.CompactJSON(o))
			}
			// per_turn: the retry sees the first attempt; the next turn starts afresh.
			if n := len(turns[0].Calls[2].History.Messages); n != 1 {
				t.Errorf("second planner call saw %d messages, want 1", n)
			}
			if n := len(turns[1].Calls[0].History.Messages); n != 0 {
				t.Errorf("next turn's first planner call saw %d messages, want 0", n)
			}
			// Seed 003: both attempts are recorded with their scores and calls; the valid
			// second one is the best.
			var got []string
			for _, a := range turns[0].Attempts {
				got = append(got, fmt.Sprintf("%s #%d %v best=%v %v", a.Step, a.N, a.Score, a.Best, a.Calls))
			}
			if want := []string{"attempt #1 0.3 best=false [c1 c2]", "attempt #2 0.9 best=true [c3 c4]"}; !reflect.DeepEqual(got, want) {
				t.Errorf("attempts = %q, want %q", got, want)
			}
			if got := turns[0].Calls[2].Inputs.String("task"); got != "Plan a team offsite for 12 people\n\nPrevious attempt was invalid: The plan has only one step: add a budget, a schedule and a way to check the result." {
				t.Errorf("retry task = %q", got)
			}
		},
		"StepAgent": func(t *testing.T, s *core.Session, turns []*trace.Turn) {
			wantAnswers := []string{"17 * 23 + 4 = 395", "Refunds are available within 30 days of purchase and are paid back to the original card within 5 to 10 business days.", "Today is 2025-01-15 (Wednesday)."}
			for i, tr := range turns {
				if got := tr.Outputs.String("answer"); got != wantAnswers[i] {
					t.Errorf("turn %d answer = %q", i, got)
				}
				if !reflect.DeepEqual(paths(tr), []string{"thinker", "thinker"}) || len(tr.Calls[0].History.Messages) != 0 || len(tr.Calls[1].History.Messages) != 1 {
					t.Errorf("turn %d: calls %v, histories %d/%d", i, paths(tr), len(tr.Calls[0].History.Messages), len(tr.Calls[1].History.Messages))
				}
			}
			if got := turns[0].Calls[1].Inputs.String("observation"); got != "17 * 23 + 4 = 395" {
				t.Errorf("observation = %q", got)
			}
		},
		"RAGAgent": func(t *testing.T, s *core.Session, turns []*trace.Turn) {
			ret, ans := turns[1].Calls[0], turns[1].Calls[1]
			if len(ret.History.Messages) != 0 || ret.Inputs.Has("history") {
				t.Errorf("retriever got history %s", histJSON(ret.History))
			}
			if got := histJSON(ans.History); got != `[{"question":"How long do refunds take?","answer":"Refunds are available within 30 days of purchase and are paid back to the original card within 5 to 10 business days."}]` {
				t.Errorf("answerer history = %s (documents must be excluded)", got)
			}
			if docs, _ := ans.Inputs.Get("documents"); len(docs.([]any)) == 0 {
				t.Error("answerer got no documents")
			}
		},
		"ResearchAgent": checkResearchConversation,
		"Orchestrator": func(t *testing.T, s *core.Session, turns []*trace.Turn) {
			if !reflect.DeepEqual(paths(turns[1]), []string{"planner", "researcher", "writer"}) {
				t.Fatalf("calls = %v", paths(turns[1]))
			}
			// inherit: every inner call sees the outer conversation.
			for _, c := range turns[1].Calls {
				if !py.Same(c.History, turns[1].History) || len(c.History.Messages) != 1 {
					t.Errorf("%s history = %s, want the outer %s", c.Path, histJSON(c.History), histJSON(turns[1].History))
				}
			}
			if got := turns[1].History.Messages[0].Keys(); !reflect.DeepEqual(got, []string{"task", "plan", "research", "draft"}) {
				t.Errorf("outer history keys = %v", got)
			}
		},
	}
	for _, c := range conversations {
		t.Run(c.goName, func(t *testing.T) {
			a, _ := Lookup(c.goName)
			s, turns := runConversation(t, a, c.turns)
			if s.Len() != len(c.turns) {
				t.Fatalf("session has %d turns, want %d", s.Len(), len(c.turns))
			}
			checks[c.goName](t, s, turns)
		})
	}
}

func TestOrchestratorInnerSessionsRecordNothing(t *testing.T) {
	a, _ := Lookup("Orchestrator")
	m, o := a.New()
	s := core.MustSessionify(m, o)
	ctx := demoCtx(a)
	if _, err := s.Forward(ctx, sig.NewMap("task", "Plan a team offsite")); err != nil {
		t.Fatal(err)
	}
	if n := m.(*Orchestrator).Sessions.Len(); n != 0 {
		t.Fatalf("inner sessions recorded %d turns under inherit, want 0", n)
	}
}

func TestRegistry(t *testing.T) {
	names := map[string]bool{}
	for _, a := range Agents() {
		if a.Description == "" || len(a.Inputs) == 0 || len(a.Outputs) == 0 || len(a.Scripts()) == 0 {
			t.Errorf("%s: incomplete entry %+v", a.Name, a)
		}
		if names[a.Name] {
			t.Errorf("duplicate %s", a.Name)
		}
		names[a.Name] = true
		m1, o := a.New()
		m2, _ := a.New()
		if m1 == m2 {
			t.Errorf("%s: New must return a fresh module", a.Name)
		}
		if _, err := core.Sessionify(m1, o); err != nil {
			t.Errorf("%s: options rejected: %v", a.Name, err)
		}
		if sg := a.Signature(); len(sg.Inputs) != len(a.Inputs) {
			t.Errorf("%s: signature %s", a.Name, sg)
		}
	}
	if _, ok := Lookup("supportagent"); !ok {
		t.Error("lookup must ignore case")
	}
	if len(names) != 7 {
		t.Errorf("want 7 demo agents, have %d", len(names))
	}
}
