package workflow

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// The best attempt is the highest score; a tie keeps the earlier one; failed attempts
// count but are never best (seed 003's add_attempt, with the first scored attempt best).
func TestAttemptLogBest(t *testing.T) {
	fail := -1.0 // stands for a failed attempt
	cases := []struct {
		name   string
		scores []float64
		best   int
	}{
		{"seed 003: 0.65 0.78 0.72 0.69", []float64{0.65, 0.78, 0.72, 0.69}, 2},
		{"ties keep the earlier", []float64{0.5, 0.7, 0.7}, 2},
		{"first scored is best even at 0", []float64{0, 0}, 1},
		{"failed attempts are never best", []float64{fail, 0.2, fail}, 2},
		{"all failed", []float64{fail, fail}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := &AttemptLog{Step: "s", Max: len(c.scores)}
			for _, s := range c.scores {
				l.Begin(context.Background())
				if s == fail {
					l.Fail(errors.New("boom"))
					continue
				}
				l.Add(s, sig.NewMap("score", s))
			}
			if l.BestAttempt != c.best || l.Count() != len(c.scores) || l.CanRetry() {
				t.Fatalf("best %d of %d (can retry %v), want %d", l.BestAttempt, l.Count(), l.CanRetry(), c.best)
			}
		})
	}
}

const seed003Agent = `
name = "review"
inputs = ["q"]
outputs = ["score", "n", "best"]
[[predictors]]
name = "scorer"
signature = "q -> score: float, ok: bool"
[[steps]]
name = "outer"
inputs = { q = "{q}" }
outputs = { score = "score", n = "n", best = "best" }
  [[steps.steps]]
  name = "try"
  predictor = "scorer"
  max_retries = 4
  retry_until = "ok"
  best = "score"
  counter = "n"
  best_attempt = "best"
`

// Every scored try of a retrying step lands in the turn with its number, score, time,
// summary, what it produced and its calls; the best is marked (seed 003's example).
func TestRetryingStepRecordsItsAttempts(t *testing.T) {
	var answers []string
	for _, s := range []float64{0.65, 0.78, 0.72, 0.69} {
		answers = append(answers, chat("score", s, "ok", false))
	}
	s, _ := session(t, mustAgent(t, seed003Agent))
	turn := run(t, s, &lm.Scripted{ByPath: map[string][]string{"scorer": answers}}, "q", "x")
	if got := turn.Outputs.String("best"); got != "2" {
		t.Fatalf("best_attempt = %s", got)
	}
	var got []string
	for _, a := range turn.Attempts {
		got = append(got, fmt.Sprintf("%s #%d %v best=%v %v %q %s", a.Step, a.N, a.Score, a.Best, a.Calls, a.Summary, a.Details.Keys()))
		if a.Time.IsZero() {
			t.Errorf("attempt %d has no timestamp", a.N)
		}
	}
	want := []string{
		`outer.try #1 0.65 best=false [c1] "score=0.65; ok=False" [score ok]`,
		`outer.try #2 0.78 best=true [c2] "score=0.78; ok=False" [score ok]`,
		`outer.try #3 0.72 best=false [c3] "score=0.72; ok=False" [score ok]`,
		`outer.try #4 0.69 best=false [c4] "score=0.69; ok=False" [score ok]`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("attempts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	ids := map[string]bool{}
	trace.WalkCalls(turn.Calls, func(c *trace.Call, _ int) { ids[c.ID] = true })
	for _, a := range turn.Attempts {
		for _, id := range a.Calls {
			if !ids[id] {
				t.Errorf("attempt %d names call %s, which the turn does not have", a.N, id)
			}
		}
	}
}

// A failed try of an on_error = "retry" step is an attempt with its error; loops record
// their iterations as attempts only when they are scored (best = ...).
func TestFailedAttemptsAndLoops(t *testing.T) {
	failFirst := func() *lm.Scripted {
		n := 0
		return &lm.Scripted{Func: func(req lm.Request) (string, bool, error) {
			if n++; n == 1 {
				return "", true, errors.New("server overloaded")
			}
			return echo(req)
		}}
	}
	text := `
name = "e"
inputs = ["q"]
outputs = ["a"]
[[predictors]]
name = "flaky"
signature = "q -> a"
[[steps]]
name = "call"
predictor = "flaky"
on_error = "retry"
max_retries = 2
`
	s, _ := session(t, mustAgent(t, text))
	turn := run(t, s, failFirst(), "q", "x")
	if n := len(turn.Attempts); n != 2 {
		t.Fatalf("%d attempts, want 2", n)
	}
	a1, a2 := turn.Attempts[0], turn.Attempts[1]
	if !strings.Contains(a1.Error, "overloaded") || a1.Best || a1.Details != nil || !reflect.DeepEqual(a1.Calls, []string{"c1"}) ||
		a2.Error != "" || !a2.Best || a2.Details.String("a") != "a:x" {
		t.Fatalf("attempts = %+v, %+v", a1, a2)
	}

	answers := []string{chat("a", "first", "done", false), chat("a", "second", "done", true)}
	s, _ = session(t, mustAgent(t, strings.Replace(loopAgent, "MAX", "5", 1)))
	if turn := run(t, s, &lm.Scripted{ByPath: map[string][]string{"checker": answers}}, "q", "x"); turn.Attempts != nil {
		t.Errorf("an unscored loop recorded attempts: %+v", turn.Attempts)
	}
	scored := strings.Replace(strings.Replace(loopAgent, "MAX", "5", 1), `counter = "n"`, "counter = \"n\"\nbest = \"a\"", 1)
	s, _ = session(t, mustAgent(t, scored))
	turn = run(t, s, &lm.Scripted{ByPath: map[string][]string{"checker": answers}}, "q", "x")
	if n := len(turn.Attempts); n != 2 || turn.Attempts[0].Step != "work" || !reflect.DeepEqual(turn.Attempts[1].Calls, []string{"c2"}) {
		t.Fatalf("scored loop attempts = %+v", turn.Attempts)
	}
}
