package demo

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/llm"
)

var fixedNow = func() time.Time { return time.Date(2025, 1, 15, 10, 0, 0, 0, time.UTC) }

// conversations are the seed's example dialogues (and one per other agent), by the
// Go agent's name and by its agent file.
var conversations = []struct {
	goName, file string
	turns        []string
}{
	{"SupportAgent", "support.toml", []string{"I can't log in", "The reset email never arrives", "It's in my spam folder"}},
	{"CorrectThenTranslate", "translate.toml", []string{"This plant is red", "Can I have it?", "No it to precious, I want to keep it."}},
	{"RetryAgent", "retry.toml", []string{"Plan a team offsite for 12 people", "Plan the launch of our data export feature"}},
	{"StepAgent", "step.toml", []string{"What is 17 * 23 + 4?", "What is our refund policy?", "What day is it today?"}},
	{"RAGAgent", "rag.toml", []string{"How long do refunds take?", "How do I enable two-factor authentication?"}},
	{"Orchestrator", "orchestrator.toml", []string{"Plan a team offsite for 12 people", "Now write the invitation email"}},
	{"ResearchAgent", "research.toml", []string{"How long do refunds take?", "When can I talk to a human?", "What's the weather like?"}},
}

func demoCtx(a Agent) context.Context {
	return core.WithLM(context.Background(), llm.NewDemo(llm.DemoOptions{Scripts: a.Scripts()}))
}

// runConversation runs turns through a fresh session of the agent on the demo model.
func runConversation(t *testing.T, a Agent, turns []string) (*core.Session, []*trace.Turn) {
	t.Helper()
	a = a.WithClock(fixedNow)
	m, o, err := a.Build()
	if err != nil {
		t.Fatal(err)
	}
	s, err := core.Sessionify(m, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := demoCtx(a)
	var out []*trace.Turn
	for _, q := range turns {
		_, turn, err := s.Run(ctx, sig.NewMap(a.Inputs[0], q))
		if err != nil {
			t.Fatalf("%s: turn %q: %v", a.Name, q, err)
		}
		out = append(out, turn)
	}
	return s, out
}

// stable is a turn's JSON without timings, which differ from run to run.
func stable(t *testing.T, turns []*trace.Turn) string {
	t.Helper()
	var cp []*trace.Turn
	for _, tr := range turns {
		c := tr.Clone()
		c.Started, c.Ended = time.Time{}, time.Time{}
		for _, a := range c.Attempts {
			a.Time = time.Time{}
		}
		trace.WalkCalls(c.Calls, func(cl *trace.Call, _ int) {
			cl.Started, cl.Latency = time.Time{}, 0
			for i := range cl.Tries {
				cl.Tries[i].Latency = 0
			}
		})
		cp = append(cp, c)
	}
	b, err := json.MarshalIndent(cp, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestGoAndFileAgentsRecordIdenticalCalls(t *testing.T) {
	for _, c := range conversations {
		t.Run(c.goName, func(t *testing.T) {
			goAgent, ok := Lookup(c.goName)
			if !ok {
				t.Fatalf("no built-in agent %s", c.goName)
			}
			data, err := ExampleFile(c.file)
			if err != nil {
				t.Fatal(err)
			}
			fileAgent, err := ParseAgentFile(c.file, data)
			if err != nil {
				t.Fatal(err)
			}
			_, goTurns := runConversation(t, goAgent, c.turns)
			_, fileTurns := runConversation(t, fileAgent, c.turns)
			// Both record the same attempts (step, number, score, best, calls); what an
			// attempt produced is the Go agent's result fields but every field the file's
			// loop body wrote (its reasoning and next task too).
			for _, tr := range append(append([]*trace.Turn(nil), goTurns...), fileTurns...) {
				for _, a := range tr.Attempts {
					a.Details, a.Summary = nil, ""
				}
			}
			g, f := stable(t, goTurns), stable(t, fileTurns)
			if g != f {
				t.Fatalf("records differ:\n--- Go\n%s\n--- file\n%s", g, f)
			}
		})
	}
}
