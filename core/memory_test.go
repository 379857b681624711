package core

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/sessionbench/sessionbench/core/savefile"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// twoCalls is a program whose worker is called twice per root call; fail makes the
// root call fail after the worker's calls.
func twoCalls(fail *bool) *Program {
	worker := MustPredict("question -> answer")
	return &Program{Name: "Agent", Subs: []Sub{{"worker", worker}}, Fn: func(ctx context.Context, in *sig.Map) (*Prediction, error) {
		for i := 0; i < 2; i++ {
			if _, err := worker.Forward(ctx, sig.NewMap("question", fmt.Sprintf("%s.%d", in.String("question"), i))); err != nil {
				return nil, err
			}
		}
		if fail != nil && *fail {
			return nil, errors.New("root failed")
		}
		return NewPrediction("answer", "done "+in.String("question")), nil
	}}
}

// consolidator records what it was given and answers updated_memory.
type consolidator struct {
	mu    sync.Mutex
	seen  []*sig.Map
	field string // the output field it answers (default updated_memory)
	err   error
}

func (c *consolidator) Forward(_ context.Context, in *sig.Map) (*Prediction, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = append(c.seen, in.Clone())
	if c.err != nil {
		return nil, c.err
	}
	field := c.field
	if field == "" {
		field = "updated_memory"
	}
	return NewPrediction(field, fmt.Sprintf("summary %d of %d chars", len(c.seen), len(in.String("episode_transcript")))), nil
}

// workerLens are the history lengths the worker's calls saw in each outer turn.
func workerLens(turns []*trace.Turn) [][]int {
	var out [][]int
	for _, t := range turns {
		var l []int
		for _, c := range t.Calls {
			l = append(l, len(c.History.Messages))
		}
		out = append(out, l)
	}
	return out
}

// Reference behaviour 24 and the with_memory lifespans: what the worker sees within and
// across root calls, what it keeps, and what its consolidator makes of each episode.
func TestLifespans(t *testing.T) {
	cases := []struct {
		name     string
		cfg      ChildConfig
		cons     *consolidator
		lens     [][]int
		keeps    int
		l2       string
		consSeen int
	}{
		{"persistent", ChildConfig{}, nil, [][]int{{0, 1}, {2, 3}}, 4, "", 0},
		{"episodic", ChildConfig{Lifespan: LifespanEpisodic}, &consolidator{}, [][]int{{0, 1}, {0, 1}}, 0, "summary 2 of 155 chars", 2},
		{"episodic, memory field", ChildConfig{Lifespan: LifespanEpisodic}, &consolidator{field: "memory"}, [][]int{{0, 1}, {0, 1}}, 0, "summary 2 of 155 chars", 2},
		{"episodic, any first field", ChildConfig{Lifespan: LifespanEpisodic}, &consolidator{field: "note"}, [][]int{{0, 1}, {0, 1}}, 0, "summary 2 of 155 chars", 2},
		{"episodic without consolidator", ChildConfig{Lifespan: LifespanEpisodic}, nil, [][]int{{0, 1}, {0, 1}}, 0, "", 0},
		{"failing consolidator", ChildConfig{Lifespan: LifespanEpisodic}, &consolidator{err: errors.New("no model")}, [][]int{{0, 1}, {0, 1}}, 0, "", 2},
		{"stateless", ChildConfig{Lifespan: LifespanStateless}, nil, [][]int{{0, 0}, {0, 0}}, 0, "", 0},
		{"shared (inherit)", ChildConfig{Nested: NestedInherit}, nil, [][]int{{0, 0}, {1, 1}}, 0, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			if tc.cons != nil {
				cfg.Consolidator = tc.cons
			}
			s := MustSessionify(twoCalls(nil), Options{Recursive: Predictors, ChildConfigs: map[string]ChildConfig{"worker": cfg}})
			ctx := ctxWith(echoLM())
			mustRun(t, ctx, s, "question", "Q1")
			mustRun(t, ctx, s, "question", "Q2")
			w := s.Children()["worker"]
			if got := workerLens(s.Turns()); !reflect.DeepEqual(got, tc.lens) {
				t.Errorf("worker saw history lengths %v, want %v", got, tc.lens)
			}
			if w.Len() != tc.keeps || s.Len() != 2 {
				t.Errorf("worker keeps %d turns (root %d), want %d", w.Len(), s.Len(), tc.keeps)
			}
			if w.L2Memory() != tc.l2 {
				t.Errorf("worker L2 memory %q, want %q", w.L2Memory(), tc.l2)
			}
			if tc.cons == nil {
				return
			}
			if len(tc.cons.seen) != tc.consSeen {
				t.Fatalf("consolidator called %d times, want %d", len(tc.cons.seen), tc.consSeen)
			}
			first, second := tc.cons.seen[0], tc.cons.seen[1]
			wantLedger := "- turn: 0\n  inputs: {\"question\": \"Q1.0\"}\n  outputs: {\"answer\": \"answer:Q1.0\"}\n" +
				"- turn: 1\n  inputs: {\"question\": \"Q1.1\"}\n  outputs: {\"answer\": \"answer:Q1.1\"}"
			if first.String("past_memory") != "" || first.String("episode_transcript") != wantLedger {
				t.Errorf("first episode: past %q transcript\n%s\nwant\n%s", first.String("past_memory"), first.String("episode_transcript"), wantLedger)
			}
			wantPast := "summary 1 of 155 chars"
			if tc.cons.err != nil {
				wantPast = ""
				if err := w.ConsolidatorError(); err == nil || !strings.Contains(err.Error(), "no model") {
					t.Errorf("consolidator error not kept: %v", err)
				}
			}
			if second.String("past_memory") != wantPast || !strings.Contains(second.String("episode_transcript"), "Q2.1") {
				t.Errorf("second episode: past %q transcript %q", second.String("past_memory"), second.String("episode_transcript"))
			}
		})
	}
}

// The finalizer runs also when the root call fails: an episodic child consolidates the
// failed call's turns; a persistent one is rolled back (a failing turn records nothing).
func TestLifespanOnFailedRootCall(t *testing.T) {
	fail := true
	for _, tc := range []struct {
		name     string
		cfg      ChildConfig
		consSeen int
	}{
		{"episodic", ChildConfig{Lifespan: LifespanEpisodic, Consolidator: &consolidator{}}, 1},
		{"persistent", ChildConfig{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := MustSessionify(twoCalls(&fail), Options{Recursive: Predictors, ChildConfigs: map[string]ChildConfig{"worker": tc.cfg}})
			if _, err := s.Forward(ctxWith(echoLM()), in("question", "Q")); err == nil {
				t.Fatal("the root call did not fail")
			}
			w := s.Children()["worker"]
			if s.Len() != 0 || w.Len() != 0 {
				t.Errorf("turns left: root %d, worker %d", s.Len(), w.Len())
			}
			if c, ok := tc.cfg.Consolidator.(*consolidator); ok && (len(c.seen) != tc.consSeen || w.L2Memory() == "") {
				t.Errorf("consolidator ran %d times, L2 %q", len(c.seen), w.L2Memory())
			}
		})
	}
}

// Reference behaviour 25 and the projection helpers: what a running program reads through
// its context, and that everything is empty outside a call.
func TestProjectionHelpers(t *testing.T) {
	type seen struct {
		current, outer int
		memory, ledger string
		trace          string
	}
	var got []seen
	worker := MustPredict("question -> answer")
	prog := &Program{Name: "Agent", Subs: []Sub{{"worker", worker}}, Fn: func(ctx context.Context, in *sig.Map) (*Prediction, error) {
		if _, err := worker.Forward(ctx, in); err != nil {
			return nil, err
		}
		cur, _ := CurrentHistory(ctx)
		outer, _ := OuterHistory(ctx)
		got = append(got, seen{len(cur.Messages), len(outer.Messages), NodeMemory(ctx), ChildLedger(ctx, "root.worker"), ExecutionTrace(ctx)})
		return NewPrediction("answer", "A"), nil
	}}
	s := MustSessionify(prog, Options{Recursive: Predictors})
	s.SetL2Memory("root notes")
	ctx := ctxWith(echoLM())
	mustRun(t, ctx, s, "question", "Q1")
	mustRun(t, ctx, s, "question", "Q2")
	want := []seen{
		{0, 0, "root notes", "- turn: 0\n  inputs: {\"question\": \"Q1\"}\n  outputs: {\"answer\": \"answer:Q1\"}",
			"root: turns=0 l2_chars=10\nworker: turns=1 l2_chars=0\nactive_stack=root"},
		{1, 1, "root notes", "- turn: 0\n  inputs: {\"question\": \"Q1\"}\n  outputs: {\"answer\": \"answer:Q1\"}\n" +
			"- turn: 1\n  inputs: {\"question\": \"Q2\"}\n  outputs: {\"answer\": \"answer:Q2\"}",
			"root: turns=1 l2_chars=10\nworker: turns=2 l2_chars=0\nactive_stack=root"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("inside the calls:\n%#v\nwant\n%#v", got, want)
	}
	outside := context.Background()
	if h, ok := CurrentHistory(outside); ok || len(h.Messages) != 0 || NodeMemory(outside) != "" || ChildLedger(outside, "worker") != "" || ExecutionTrace(outside) != "" {
		t.Error("helpers are not empty outside a call")
	}
}

// ChildLedger resolves paths as the reference does: exact, "root." dropped, unique suffix.
func TestChildLedgerPaths(t *testing.T) {
	a, b := MustPredict("q -> x"), MustPredict("q -> y")
	inner := &Program{Name: "Inner", Subs: []Sub{{"writer", b}}, Fn: func(ctx context.Context, in *sig.Map) (*Prediction, error) { return b.Forward(ctx, in) }}
	var ledgers map[string]string
	prog := &Program{Name: "P", Subs: []Sub{{"writer", a}, {"team", inner}}, Fn: func(ctx context.Context, in *sig.Map) (*Prediction, error) {
		if _, err := a.Forward(ctx, in); err != nil {
			return nil, err
		}
		if _, err := inner.Forward(ctx, in); err != nil {
			return nil, err
		}
		ledgers = map[string]string{}
		for _, p := range []string{"writer", "root.writer", "team.writer", "am.writer", "nobody", "root", ""} {
			ledgers[p] = ChildLedger(ctx, p)
		}
		return NewPrediction("x", "1"), nil
	}}
	s := MustSessionify(prog, Options{Recursive: Predictors})
	mustRun(t, ctxWith(echoLM()), s, "q", "hi")
	for p, want := range map[string]string{
		"writer":      "outputs: {\"x\": \"x:hi\"}",
		"root.writer": "outputs: {\"x\": \"x:hi\"}",
		"team.writer": "outputs: {\"y\": \"y:hi\"}",
		"am.writer":   "outputs: {\"y\": \"y:hi\"}", // a unique suffix
		"nobody":      "",
		"root":        "", // the root has no turn yet during its first call
		"":            "",
	} {
		if got := ledgers[p]; (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("ChildLedger(%q) = %q, want %q", p, got, want)
		}
	}
}

// Reference behaviour 23: independent states over one blueprint; concurrent runs on
// different states do not mix.
func TestBoundStates(t *testing.T) {
	blueprint := MustSessionify(twoCalls(nil), Options{Recursive: Predictors})
	ctx := ctxWith(echoLM())
	states := map[string]int{"A": 2, "B": 1, "C": 5, "D": 3}
	bound := map[string]*Session{}
	for name := range states {
		st, err := blueprint.NewState()
		if err != nil {
			t.Fatal(err)
		}
		if bound[name], err = blueprint.UseState(st); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for name, n := range states {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				if _, err := bound[name].Forward(ctx, in("question", name)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	for name, n := range states {
		b := bound[name]
		if b.Len() != n || b.Children()["worker"].Len() != 2*n {
			t.Errorf("state %s: %d turns, worker %d; want %d, %d", name, b.Len(), b.Children()["worker"].Len(), n, 2*n)
		}
		for _, tr := range b.Turns() {
			if tr.Inputs.String("question") != name {
				t.Errorf("state %s holds a turn of %s", name, tr.Inputs.String("question"))
			}
		}
		if got := workerLens(b.Turns()); n > 1 && got[1][0] != 2 {
			t.Errorf("state %s: worker history %v mixes states", name, got)
		}
	}
	if blueprint.Len() != 0 || blueprint.Children()["worker"].Len() != 0 {
		t.Errorf("the default state changed: %d turns", blueprint.Len())
	}
	other := MustSessionify(twoCalls(nil), Options{})
	st, _ := other.NewState()
	if _, err := blueprint.UseState(st); !errors.Is(err, ErrForeignState) {
		t.Errorf("a foreign state was bound: %v", err)
	}
}

// A nested session inside the module gets its own state in each bound state.
func TestBoundStateNestedSession(t *testing.T) {
	innerS := MustSessionify(MustPredict("question -> answer"), Options{})
	prog := &Program{Name: "Outer", Subs: []Sub{{"inner", innerS}}, Fn: func(ctx context.Context, in *sig.Map) (*Prediction, error) {
		return innerS.Forward(ctx, in)
	}}
	blueprint := MustSessionify(prog, Options{})
	st, err := blueprint.NewState()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := blueprint.UseState(st)
	mustRun(t, ctxWith(echoLM()), b, "question", "Q")
	if innerS.Len() != 0 || b.Children()["inner"].Len() != 1 {
		t.Errorf("nested session: blueprint's %d turns, state's %d", innerS.Len(), b.Children()["inner"].Len())
	}
}

// The reference's repr, for flat, program, nested and container sessions.
func TestSessionString(t *testing.T) {
	flat := threeTurns(t, "Q1", "Q2", "Q3")
	c, _ := NewContainer([]string{"a"}, []*Session{MustSessionify(MustPredict("q -> a"), Options{})})
	cases := []struct {
		s    *Session
		want string
	}{
		{flat, "Session(Predict, turns=3, history_field='history')"},
		{MustSessionify(MustChainOfThought("q -> a"), Options{HistoryField: "chat"}), "Session(ChainOfThought, turns=0, history_field='chat')"},
		{MustSessionify(twoCalls(nil), Options{}), "Session(Agent, turns=0, history_field='history')"},
		{MustSessionify(flat, Options{}), "Session(Session, turns=0, history_field='history')"},
		{MustSessionify(c, Options{}), "Session(SessionContainer, turns=0, history_field='history')"},
	}
	for _, tc := range cases {
		if got := tc.s.String(); got != tc.want {
			t.Errorf("String() = %s, want %s", got, tc.want)
		}
		if got := fmt.Sprint(tc.s); got != tc.want {
			t.Errorf("fmt.Sprint = %s", got)
		}
	}
}

// L2 memory made by a consolidator is saved with its node and loaded back.
func TestConsolidatedMemorySaved(t *testing.T) {
	opts := Options{Recursive: Predictors, ChildConfigs: map[string]ChildConfig{"worker": {Lifespan: LifespanEpisodic, Consolidator: &consolidator{}}}}
	s := MustSessionify(twoCalls(nil), opts)
	mustRun(t, ctxWith(echoLM()), s, "question", "Q1")
	data := saved(t, s)
	f, err := savefile.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if w := f.Node("worker"); w == nil || w.L2Memory != "summary 1 of 155 chars" || len(w.Turns) != 0 {
		t.Fatalf("worker node state: %+v", w)
	}
	l, err := Load(data, twoCalls(nil), opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Children()["worker"].L2Memory(); got != "summary 1 of 155 chars" {
		t.Errorf("loaded L2 memory %q", got)
	}
}

// Restoring an episodic session from its turns clears the episodes as the live one did,
// so its next turn sends the same histories.
func TestRestoreEndsEpisodes(t *testing.T) {
	opts := Options{Recursive: Predictors, Record: RecordAll, ChildConfigs: map[string]ChildConfig{"worker": {Lifespan: LifespanEpisodic}}}
	live := MustSessionify(twoCalls(nil), opts)
	ctx := ctxWith(echoLM())
	mustRun(t, ctx, live, "question", "Q1")
	r, err := Restore(twoCalls(nil), opts, live.Turns())
	if err != nil {
		t.Fatal(err)
	}
	if r.Children()["worker"].Len() != 0 {
		t.Fatalf("restored worker keeps %d turns", r.Children()["worker"].Len())
	}
	mustRun(t, ctx, live, "question", "Q2")
	mustRun(t, ctx, r, "question", "Q2")
	if a, b := workerLens(live.Turns()), workerLens(r.Turns()); !reflect.DeepEqual(a, b) {
		t.Errorf("restored session's histories %v, live %v", b, a)
	}
}
