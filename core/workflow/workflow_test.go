package workflow

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// chat renders outputs as a ChatAdapter completion.
func chat(kv ...any) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, "[[ ## %s ## ]]\n%s\n\n", kv[i], py.Text(sig.Normalize(kv[i+1])))
	}
	return b.String() + "[[ ## completed ## ]]"
}

// echo answers every output with "<output>:<first input>".
func echo(req lm.Request) (string, bool, error) {
	first := ""
	if req.Meta.Inputs.Len() > 0 {
		first = req.Meta.Inputs.String(req.Meta.Inputs.Keys()[0])
	}
	var kv []any
	for _, f := range req.Meta.Signature.Outputs {
		kv = append(kv, f.Name, f.Name+":"+first)
	}
	return chat(kv...), true, nil
}

// testEnv gives test files one tool and the file system for template files.
var testEnv = Env{
	Tools: map[string]Tool{"upper": {Inputs: []string{"text"}, Outputs: []string{"upper"},
		Run: func(in *sig.Map, _ time.Time) (*sig.Map, error) {
			return sig.NewMap("upper", strings.ToUpper(in.String("text"))), nil
		}}},
	DemoScripts: []string{"SupportAgent"},
	ReadFile:    os.ReadFile,
}

func parse(path, text string) (*AgentFile, error) { return Parse(path, []byte(text), testEnv) }

func mustAgent(t *testing.T, text string) *AgentFile {
	t.Helper()
	a, err := parse("test.toml", text)
	if err != nil {
		t.Fatalf("agent file rejected:\n%v", err)
	}
	return a
}

func session(t *testing.T, a *AgentFile) (*core.Session, core.Options) {
	t.Helper()
	m, o, err := a.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return core.MustSessionify(m, o), o
}

func run(t *testing.T, s *core.Session, m lm.LM, kv ...any) *trace.Turn {
	t.Helper()
	_, turn, err := s.Run(core.WithLM(context.Background(), m), sig.NewMap(kv...))
	if err != nil {
		t.Fatal(err)
	}
	return turn
}

const modesAgent = `
name = "modes"
inputs = ["q"]
outputs = ["iso_a", "out_shared", "x", "inh"]
[params]
x = "outer"
[[predictors]]
name = "iso"
signature = "q -> a"
[[predictors]]
name = "sha"
signature = "q -> b"
[[predictors]]
name = "inh"
signature = "q -> c"
[[steps]]
name = "isolated"
context_mode = "isolated"
inputs = { q = "{q}" }
outputs = { iso_a = "a" }
  [[steps.steps]]
  name = "p"
  predictor = "iso"
[[steps]]
name = "shared"
context_mode = "shared"
  [[steps.steps]]
  name = "p"
  predictor = "sha"
  [[steps.steps]]
  name = "w"
  set = { out_shared = "shared {b}" }
[[steps]]
name = "inherited"
context_mode = "inherited"
outputs = { inh = "c" }
  [[steps.steps]]
  name = "p"
  predictor = "inh"
  [[steps.steps]]
  name = "w"
  set = { x = "inner" }
`

// Context modes: what a compound step's sub-steps see and hand back (fields), and
// which history their predictors get (session settings).
func TestContextModes(t *testing.T) {
	s, o := session(t, mustAgent(t, modesAgent))
	want := map[string]core.ChildConfig{
		"iso": {Nested: core.NestedKeep, Scope: core.PerTurn},
		"sha": {Nested: core.NestedInherit},
		"inh": {Nested: core.NestedKeep, Scope: core.CrossTurn},
	}
	if !reflect.DeepEqual(o.ChildConfigs, want) {
		t.Fatalf("child configs = %+v", o.ChildConfigs)
	}
	m := &lm.Scripted{Func: echo}
	run(t, s, m, "q", "one")
	t2 := run(t, s, m, "q", "two")
	if got := py.CompactJSON(t2.Outputs); got != `{"iso_a":"a:two","out_shared":"shared b:two","x":"outer","inh":"c:two"}` {
		t.Errorf("outputs = %s (inherited writes must not leak, shared ones must)", got)
	}
	byPath := map[string]*trace.Call{}
	for _, c := range t2.Calls {
		byPath[c.Path] = c
	}
	if n := len(byPath["iso"].History.Messages); n != 0 {
		t.Errorf("isolated (per_turn) predictor saw %d messages on turn 2", n)
	}
	if !py.Same(byPath["sha"].History, t2.History) {
		t.Errorf("shared predictor history %s, want the outer %s", py.CompactJSON(byPath["sha"].History), py.CompactJSON(t2.History))
	}
	if h := byPath["inh"].History; len(h.Messages) != 1 || h.Messages[0].String("c") != "c:one" {
		t.Errorf("inherited (keep, cross_turn) predictor history = %s", py.CompactJSON(h))
	}
	if s.Children()["sha"].Len() != 0 || s.Children()["inh"].Len() != 2 {
		t.Errorf("child turns: sha %d (inherit records none), inh %d", s.Children()["sha"].Len(), s.Children()["inh"].Len())
	}

	// Visibility is checked when the file is loaded.
	bad := []struct{ from, to, want string }{
		{`inputs = { q = "{q}" }
outputs = { iso_a = "a" }`, `inputs = { q = "{q}" }
outputs = { iso_a = "x" }`, `field "x" is not produced by the sub-steps`},
		{`outputs = ["iso_a", "out_shared", "x", "inh"]`, `outputs = ["iso_a", "out_shared", "x", "inh", "c"]`, `output "c" is not produced`},
	}
	for _, b := range bad {
		_, err := parse("test.toml", strings.Replace(modesAgent, b.from, b.to, 1))
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("err = %v, want %q", err, b.want)
		}
	}
}

const retryAgentText = `
name = "r"
inputs = ["q"]
outputs = ["score", "ok", "n", "best", "status"]
[[predictors]]
name = "scorer"
signature = "q -> score: float, ok: bool"
[[steps]]
name = "try"
predictor = "scorer"
max_retries = 3
retry_until = "ok"
best = "score"
counter = "n"
best_attempt = "best"
status = "status"
`

func TestRetriesKeepTheBestAttempt(t *testing.T) {
	cases := []struct {
		name    string
		answers []string
		want    string
	}{
		{"none accepted: best of three", []string{chat("score", 0.4, "ok", false), chat("score", 0.8, "ok", false), chat("score", 0.6, "ok", false)},
			`{"score":0.8,"ok":false,"n":3,"best":2,"status":"needs_human"}`},
		{"accepted on the second", []string{chat("score", 0.4, "ok", false), chat("score", 0.3, "ok", true), chat("score", 1.0, "ok", true)},
			`{"score":0.3,"ok":true,"n":2,"best":1,"status":"completed"}`},
		{"ties keep the earlier", []string{chat("score", 0.5, "ok", false), chat("score", 0.5, "ok", false), chat("score", 0.2, "ok", false)},
			`{"score":0.5,"ok":false,"n":3,"best":1,"status":"needs_human"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, _ := session(t, mustAgent(t, retryAgentText))
			turn := run(t, s, &lm.Scripted{ByPath: map[string][]string{"scorer": c.answers}}, "q", "x")
			if got := py.CompactJSON(turn.Outputs); got != c.want {
				t.Fatalf("outputs = %s, want %s", got, c.want)
			}
		})
	}
}

func TestOnError(t *testing.T) {
	text := func(onError, extra string) string {
		return `
name = "e"
inputs = ["q"]
outputs = ["done"]
[[predictors]]
name = "flaky"
signature = "q -> a"
[[steps]]
name = "call"
predictor = "flaky"
on_error = "` + onError + `"
` + extra + `
[[steps]]
name = "finish"
set = { done = "finished {q}" }
`
	}
	failFirst := func() *lm.Scripted {
		n := 0
		return &lm.Scripted{Func: func(req lm.Request) (string, bool, error) {
			if n++; n == 1 {
				return "", true, errors.New("server overloaded")
			}
			return echo(req)
		}}
	}
	t.Run("retry", func(t *testing.T) {
		s, _ := session(t, mustAgent(t, text("retry", "max_retries = 2")))
		turn := run(t, s, failFirst(), "q", "x")
		if len(turn.Calls) != 2 || turn.Calls[0].Error == "" || turn.Calls[1].Error != "" {
			t.Fatalf("calls = %d (first error %q)", len(turn.Calls), turn.Calls[0].Error)
		}
	})
	t.Run("skip", func(t *testing.T) {
		s, _ := session(t, mustAgent(t, text("skip", "")))
		turn := run(t, s, failFirst(), "q", "x")
		if turn.Outputs.String("done") != "finished x" || len(turn.Calls) != 1 || !strings.Contains(turn.Calls[0].Error, "overloaded") {
			t.Fatalf("outputs %s, calls %d", py.CompactJSON(turn.Outputs), len(turn.Calls))
		}
	})
	t.Run("fail", func(t *testing.T) {
		s, _ := session(t, mustAgent(t, text("fail", "")))
		_, err := s.Forward(core.WithLM(context.Background(), failFirst()), sig.NewMap("q", "x"))
		if err == nil || !strings.Contains(err.Error(), `step "call"`) || !strings.Contains(err.Error(), "overloaded") || s.Len() != 0 {
			t.Fatalf("err = %v, turns %d", err, s.Len())
		}
	})
}

const loopAgent = `
name = "l"
inputs = ["q"]
outputs = ["n", "status", "work_summary", "last"]
[[steps]]
name = "work"
context_mode = "inherited"
summarize = true
counter = "n"
status = "status"
outputs = { n = "n", status = "status", last = "a" }
  [steps.loop]
  max_iterations = MAX
  until = "done"
  [[steps.steps]]
  name = "ask"
  predictor = "checker"
[[predictors]]
name = "checker"
signature = "q -> a, done: bool"
`

func TestLoopsAndSummaries(t *testing.T) {
	answers := []string{chat("a", "first", "done", false), chat("a", "second", "done", false), chat("a", "third", "done", true)}
	cases := []struct{ max, want string }{
		{"5", `{"n":3,"status":"completed","work_summary":"work: a=third; done=True; n=3; status=completed","last":"third"}`},
		{"2", `{"n":2,"status":"needs_human","work_summary":"work: a=second; done=False; n=2; status=needs_human","last":"second"}`},
	}
	for _, c := range cases {
		s, _ := session(t, mustAgent(t, strings.Replace(loopAgent, "MAX", c.max, 1)))
		turn := run(t, s, &lm.Scripted{ByPath: map[string][]string{"checker": answers}}, "q", "x")
		if got := py.CompactJSON(turn.Outputs); got != c.want {
			t.Errorf("max %s: outputs = %s\nwant %s", c.max, got, c.want)
		}
		// keep, cross_turn (inherited): the third call sees the two before it.
		if last := turn.Calls[len(turn.Calls)-1]; c.max == "5" && len(last.History.Messages) != 2 {
			t.Errorf("third call saw %d messages", len(last.History.Messages))
		}
	}
}

const parallelAgent = `
name = "p"
inputs = ["q"]
outputs = ["a0", "b0", "a1", "b1", "a2", "b2"]
[[predictors]]
name = "p0a"
signature = "q -> a0"
[[predictors]]
name = "p0b"
signature = "q -> b0"
[[predictors]]
name = "p1a"
signature = "q -> a1"
[[predictors]]
name = "p1b"
signature = "q -> b1"
[[predictors]]
name = "p2a"
signature = "q -> a2"
[[predictors]]
name = "p2b"
signature = "q -> b2"
[[steps]]
name = "fan out"
context_mode = "shared"
parallel = true
`

func branch(i int) string {
	return fmt.Sprintf(`
  [[steps.steps]]
  name = "b%d"
  context_mode = "inherited"
  outputs = { a%d = "a%d", b%d = "b%d" }
    [[steps.steps.steps]]
    name = "first"
    predictor = "p%da"
    [[steps.steps.steps]]
    name = "second"
    predictor = "p%db"
`, i, i, i, i, i, i, i)
}

// Parallel branches run concurrently, yet their calls are recorded in the same
// round-robin order on every run, however long each model call takes.
func TestParallelStepsDeterministicOrder(t *testing.T) {
	a := mustAgent(t, parallelAgent+branch(0)+branch(1)+branch(2))
	var active, peak atomic.Int32
	m := &lm.Scripted{Func: func(req lm.Request) (string, bool, error) {
		n := active.Add(1)
		defer active.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		// Branch 0 is slow, branch 2 fast: finishing order is the reverse of start order.
		time.Sleep(time.Duration(3-int(req.Meta.Path[1]-'0')) * 15 * time.Millisecond)
		return echo(req)
	}}
	for i := 0; i < 3; i++ {
		s, _ := session(t, a)
		turn := run(t, s, concurrent{m}, "q", "x")
		if got := paths(turn); !reflect.DeepEqual(got, []string{"p0a", "p1a", "p2a", "p0b", "p1b", "p2b"}) {
			t.Fatalf("run %d: record order %v", i, got)
		}
		if got := py.CompactJSON(turn.Outputs); got != `{"a0":"a0:x","b0":"b0:x","a1":"a1:x","b1":"b1:x","a2":"a2:x","b2":"b2:x"}` {
			t.Fatalf("joined outputs = %s", got)
		}
	}
	if peak.Load() < 2 {
		t.Errorf("at most %d model calls overlapped; branches did not run in parallel", peak.Load())
	}
}

// concurrent lets calls overlap (lm.Scripted holds its lock while answering).
type concurrent struct{ s *lm.Scripted }

func (c concurrent) Name() string { return "scripted" }
func (c concurrent) Call(ctx context.Context, req lm.Request) (lm.Response, error) {
	text, _, err := c.s.Func(req)
	if err != nil {
		return lm.Response{}, err
	}
	return lm.Response{Text: text, Model: "scripted"}, nil
}

var _ sync.Mutex

// paths are the paths of a turn's top-level calls, in record order.
func paths(t *trace.Turn) []string {
	var out []string
	for _, c := range t.Calls {
		out = append(out, c.Path)
	}
	return out
}

// An agent file that lists the session's history field among its inputs reads the history
// its session injected (dspy-session passes history= to a forward that asks for it).
func TestHistoryInput(t *testing.T) {
	a := mustAgent(t, `name = "h"
inputs = ["question", "history"]
outputs = ["seen"]
[[steps]]
name = "look"
set = { seen = "{history}" }
`)
	s, _ := session(t, a)
	m := &lm.Scripted{}
	for i, want := range []string{`{"messages": []}`, `{"messages": [{"question": "Q1", "seen": {"messages": []}}]}`} {
		turn := run(t, s, m, "question", fmt.Sprintf("Q%d", i+1))
		if got := turn.Outputs.String("seen"); got != want {
			t.Errorf("turn %d saw %s, want %s", i, got, want)
		}
	}
}
