package core

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// supportAgent is seed 000 §5.2: classify -> respond. fullOutputs decides whether the
// outer prediction carries intent too (the inherit "worst case" is reply only).
func supportAgent(fullOutputs bool) *Program {
	classify := &Predict{Signature: sig.New("ClassifyIntent", "Classify the customer's intent.",
		[]sig.Field{{Name: "question"}}, []sig.Field{{Name: "intent", Desc: "One of: billing, technical, general"}})}
	respond := &Predict{Signature: sig.New("GenerateReply", "Generate a helpful support reply.",
		[]sig.Field{{Name: "question"}, {Name: "intent"}}, []sig.Field{{Name: "reply"}})}
	return &Program{Name: "SupportAgent", Subs: []Sub{{"classify", classify}, {"respond", respond}},
		Fn: func(ctx context.Context, in *sig.Map) (*Prediction, error) {
			c, err := classify.Forward(ctx, sig.NewMap("question", in.String("question")))
			if err != nil {
				return nil, err
			}
			r, err := respond.Forward(ctx, sig.NewMap("question", in.String("question"), "intent", c.String("intent")))
			if err != nil {
				return nil, err
			}
			if fullOutputs {
				return NewPrediction("reply", r.String("reply"), "intent", c.String("intent")), nil
			}
			return NewPrediction("reply", r.String("reply")), nil
		}}
}

func supportLM() *lm.Scripted {
	return &lm.Scripted{ByPath: map[string][]string{
		"classify": {chatAnswer("intent", "technical")},
		"respond":  {chatAnswer("reply", "Try resetting your password."), chatAnswer("reply", "Let's check your spam folder.")},
	}}
}

// correctThenTranslate is seed 000 Scenario B: zero field overlap between predictors.
func correctThenTranslate() *Program {
	corrector := &Predict{Signature: sig.New("CorrectText", "", []sig.Field{{Name: "text"}}, []sig.Field{{Name: "corrected"}})}
	translator := &Predict{Signature: sig.New("TranslateText", "", []sig.Field{{Name: "corrected"}, {Name: "target_language"}}, []sig.Field{{Name: "translated"}})}
	return &Program{Name: "CorrectThenTranslate", Subs: []Sub{{"corrector", corrector}, {"translator", translator}},
		Fn: func(ctx context.Context, in *sig.Map) (*Prediction, error) {
			c, err := corrector.Forward(ctx, sig.NewMap("text", in.String("text")))
			if err != nil {
				return nil, err
			}
			tr, err := translator.Forward(ctx, sig.NewMap("corrected", c.String("corrected"), "target_language", "French"))
			if err != nil {
				return nil, err
			}
			return NewPrediction("translated", tr.String("translated")), nil
		}}
}

func translateLM() *lm.Scripted {
	return &lm.Scripted{ByPath: map[string][]string{
		"corrector": {chatAnswer("corrected", "This plant is red."), chatAnswer("corrected", "Can I have it?"),
			chatAnswer("corrected", "No, it's too precious. I want to keep it.")},
		"translator": {chatAnswer("translated", "Cette plante est rouge."), chatAnswer("translated", "Puis-je l'avoir ?"),
			chatAnswer("translated", "Non, elle est trop précieuse. Je veux la garder.")},
	}}
}

// referenceMessages loads one case's messages from the DSPy reference cases kept in
// core/adapter/testdata (one copy for every package that checks against them).
func referenceMessages(t *testing.T, name string) []lm.Message {
	t.Helper()
	const p = "adapter/testdata/chat-adapter-examples.json"
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		FormatCases []struct {
			Name     string       `json:"name"`
			Messages []lm.Message `json:"messages"`
		} `json:"format_cases"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	for _, c := range doc.FormatCases {
		if c.Name == name {
			return c.Messages
		}
	}
	t.Fatalf("case %s not in %s", name, p)
	return nil
}

func requestFor(m *lm.Scripted, path string, n int) []lm.Message {
	for _, r := range m.Requests() {
		if r.Meta.Path == path {
			if n == 0 {
				return r.Messages.Slice()
			}
			n--
		}
	}
	return nil
}

func sameMessages(t *testing.T, got, want []lm.Message) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d messages, want %d:\n%+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("message %d differs:\ngot  %q\nwant %q", i, got[i].Content, want[i].Content)
		}
	}
}

// Scenario A under keep (strategy 1) and inherit (strategy 2), byte for byte.
func TestScenarioAWire(t *testing.T) {
	m := supportLM()
	s := MustSessionify(supportAgent(true), Options{Recursive: Predictors})
	ctx := ctxWith(m)
	mustRun(t, ctx, s, "question", "I can't log in")
	mustRun(t, ctx, s, "question", "The reset email never arrives")
	sameMessages(t, requestFor(m, "respond", 0), referenceMessages(t, "A.first_turn_history_absent.respond"))
	sameMessages(t, requestFor(m, "classify", 1), referenceMessages(t, "A.keep.classify"))

	m2 := supportLM()
	in2 := MustSessionify(supportAgent(false), Options{Recursive: Predictors, NestedSessions: NestedInherit})
	ctx2 := ctxWith(m2)
	mustRun(t, ctx2, in2, "question", "I can't log in")
	mustRun(t, ctx2, in2, "question", "The reset email never arrives")
	sameMessages(t, requestFor(m2, "classify", 1), referenceMessages(t, "A.inherit_worst.classify"))
	for path, cs := range in2.Children() {
		if cs.Len() != 0 {
			t.Errorf("inherit child %s recorded %d turns", path, cs.Len())
		}
	}
}

// Scenario B under inherit: the translator sees no user turns, only assistant messages.
func TestScenarioBWire(t *testing.T) {
	m := translateLM()
	s := MustSessionify(correctThenTranslate(), Options{Recursive: Predictors, NestedSessions: NestedInherit})
	ctx := ctxWith(m)
	for _, txt := range []string{"This plant is red", "Can I have it?", "No it to precious, I want to keep it."} {
		mustRun(t, ctx, s, "text", txt)
	}
	sameMessages(t, requestFor(m, "translator", 2), referenceMessages(t, "B.default_instructions.inherit_worst.translator"))

	// Under keep each predictor sees its own thread (seed §6.4 Scenario B, scope A).
	k := translateLM()
	ks := MustSessionify(correctThenTranslate(), Options{Recursive: Predictors})
	kctx := ctxWith(k)
	for _, txt := range []string{"This plant is red", "Can I have it?", "No it to precious, I want to keep it."} {
		mustRun(t, kctx, ks, "text", txt)
	}
	msgs := requestFor(k, "translator", 2)
	if len(msgs) != 6 || msgs[1].Content != "[[ ## corrected ## ]]\nThis plant is red.\n\n[[ ## target_language ## ]]\nFrench" ||
		msgs[4].Content != "[[ ## translated ## ]]\nPuis-je l'avoir ?\n\n[[ ## completed ## ]]\n" {
		t.Fatalf("keep translator messages: %+v", msgs)
	}
	tr := ks.Children()["translator"]
	if tr.Len() != 3 || len(tr.Turns()[2].History.Messages) != 2 {
		t.Fatalf("translator child: %d turns", tr.Len())
	}
}

// §5.2: outer turns, call records, per-path examples, the trace tree.
func TestScenarioACallsAndExamples(t *testing.T) {
	s := MustSessionify(supportAgent(true), Options{Recursive: Predictors})
	ctx := ctxWith(supportLM())
	mustRun(t, ctx, s, "question", "I can't log in")
	mustRun(t, ctx, s, "question", "The reset email never arrives")
	if s.Len() != 2 {
		t.Fatalf("outer turns = %d", s.Len())
	}
	calls := s.Turns()[1].Calls
	if len(calls) != 2 || calls[0].Path != "classify" || calls[1].Path != "respond" || calls[0].PredictorType != "Predict" {
		t.Fatalf("calls = %+v", calls)
	}
	if calls[0].Messages.Len() != 4 || calls[0].Completion == "" || len(calls[0].History.Messages) != 1 {
		t.Fatalf("call record incomplete: %d messages, history %d", calls[0].Messages.Len(), len(calls[0].History.Messages))
	}
	for path, n := range map[string]int{"classify": 2, "respond": 2} {
		if got := s.Children()[path].Len(); got != n {
			t.Errorf("%s has %d turns, want %d", path, got, n)
		}
	}
	by := s.CallExamplesByPath()
	if len(by) != 2 || len(by["classify"]) != 2 || len(by["respond"]) != 2 {
		t.Fatalf("by path = %v", len(by))
	}
	if h, _ := by["respond"][1].Fields.Get("history"); len(h.(sig.History).Messages) != 1 {
		t.Fatal("call example lacks the history that call saw")
	}
	if n := len(s.CallExamples()); n != 4 {
		t.Fatalf("flat call examples = %d", n)
	}
	var b strings.Builder
	PrintTraceTree(&b, s.Turns()[1], "SupportAgent")
	want := "▼ [Turn 1] SupportAgent\n" +
		"  Inputs: question=\"The reset email never arrives\"\n" +
		"  ├─ classify (Predict)  → intent=\"technical\"\n" +
		"  └─ respond (Predict)   → reply=\"Let's check your spam folder.\"\n" +
		"  Outputs: reply=\"Let's check your spam folder.\", intent=\"technical\"\n"
	if b.String() != want {
		t.Fatalf("trace tree:\n%s\nwant:\n%s", b.String(), want)
	}
}

// retryAgent is Scenario C: the planner is called until the validator accepts (max 3).
func retryAgent(accept int) *Program {
	planner := MustChainOfThought("task -> plan")
	validator := MustPredict("plan -> is_valid: bool, feedback")
	n := 0
	var mu sync.Mutex
	return &Program{Name: "RetryAgent", Subs: []Sub{{"planner", planner}, {"validator", validator}},
		Fn: func(ctx context.Context, in *sig.Map) (*Prediction, error) {
			task := in.String("task")
			var plan *Prediction
			for attempt := 0; attempt < 3; attempt++ {
				var err error
				if plan, err = planner.Forward(ctx, sig.NewMap("task", task)); err != nil {
					return nil, err
				}
				mu.Lock()
				n++
				ok := n%accept == 0
				mu.Unlock()
				if _, err := validator.Forward(ctx, sig.NewMap("plan", plan.String("plan"))); err != nil {
					return nil, err
				}
				if ok {
					break
				}
				task += "\n\nPrevious attempt was invalid."
			}
			return NewPrediction("plan", plan.String("plan")), nil
		}}
}

// Scenarios C and D: per_turn vs cross_turn history lengths, exact cascades.
func TestScopesAndCascadingUndo(t *testing.T) {
	lens := func(s *Session, path string) []int { return histLens(s.Children()[path]) }
	cross := MustSessionify(retryAgent(2), Options{Recursive: Predictors})
	ctx := ctxWith(echoLM())
	mustRun(t, ctx, cross, "task", "t1")
	mustRun(t, ctx, cross, "task", "t2")
	if got := lens(cross, "planner"); !reflect.DeepEqual(got, []int{0, 1, 2, 3}) {
		t.Fatalf("cross_turn planner history lengths = %v, want [0 1 2 3]", got)
	}
	per := MustSessionify(retryAgent(2), Options{Recursive: Predictors, ChildConfigs: map[string]ChildConfig{"planner": {Scope: PerTurn}}})
	mustRun(t, ctx, per, "task", "t1")
	mustRun(t, ctx, per, "task", "t2")
	if got := lens(per, "planner"); !reflect.DeepEqual(got, []int{0, 1, 0, 1}) {
		t.Fatalf("per_turn planner history lengths = %v, want [0 1 0 1]", got)
	}
	if got := lens(per, "validator"); !reflect.DeepEqual(got, []int{0, 1, 2, 3}) {
		t.Fatalf("validator (cross_turn) lengths = %v", got)
	}
	groups := cross.TurnGroups("planner")
	if !reflect.DeepEqual(groups, []TurnGroup{{0, 0, 2}, {1, 2, 4}}) {
		t.Fatalf("turn groups = %+v", groups)
	}

	// Behaviour 28: undo(1, cascade) removes exactly the inner turns of that outer turn.
	cross.Undo(1, true)
	if cross.Len() != 1 || cross.Children()["planner"].Len() != 2 || cross.Children()["validator"].Len() != 2 {
		t.Fatalf("after cascade undo: outer %d planner %d", cross.Len(), cross.Children()["planner"].Len())
	}
	cross.Redo(1, true)
	if cross.Children()["planner"].Len() != 4 {
		t.Fatal("cascading redo did not restore the children")
	}
	// Without cascade children keep their turns.
	cross.Undo(1, false)
	if cross.Children()["planner"].Len() != 4 {
		t.Fatal("non-cascading undo touched a child")
	}
	// Behaviour 29: fork(cascade) is independent; reset(cascade) clears everything.
	base := MustSessionify(retryAgent(2), Options{Recursive: Predictors})
	mustRun(t, ctx, base, "task", "t1")
	f := base.Fork(true)
	mustRun(t, ctx, f, "task", "t2")
	if base.Children()["planner"].Len() != 2 || f.Children()["planner"].Len() != 4 {
		t.Fatalf("fork children: base %d fork %d", base.Children()["planner"].Len(), f.Children()["planner"].Len())
	}
	f.Undo(1, true)
	if f.Children()["planner"].Len() != 2 {
		t.Fatal("fork cascade undo")
	}
	base.Reset(true)
	if base.Len() != 0 || base.Children()["planner"].Len() != 0 || f.Children()["planner"].Len() != 2 {
		t.Fatal("reset(cascade) wrong or leaked into the fork")
	}
}

// Scenario D: the thinker is called several times per turn with per_turn scope.
func TestStepAgentPerTurn(t *testing.T) {
	thinker := MustPredict("task, observation -> thought, action")
	agent := &Program{Name: "StepAgent", Subs: []Sub{{"thinker", thinker}}, Fn: func(ctx context.Context, in *sig.Map) (*Prediction, error) {
		obs := "No observation yet."
		var r *Prediction
		for step := 0; step < 3; step++ {
			var err error
			if r, err = thinker.Forward(ctx, sig.NewMap("task", in.String("task"), "observation", obs)); err != nil {
				return nil, err
			}
			obs = fmt.Sprintf("observed %d", step)
		}
		return r, nil
	}}
	s := MustSessionify(agent, Options{Recursive: Predictors, InnerScope: PerTurn})
	ctx := ctxWith(echoLM())
	mustRun(t, ctx, s, "task", "a")
	mustRun(t, ctx, s, "task", "b")
	if got := histLens(s.Children()["thinker"]); !reflect.DeepEqual(got, []int{0, 1, 2, 0, 1, 2}) {
		t.Fatalf("thinker lengths = %v", got)
	}
}

// §5.4: retriever excluded from recursion gets no history; the answerer's history drops
// documents.
func TestRAGExcludeAndChildConfigs(t *testing.T) {
	retriever := MustPredict("question -> documents")
	answerer := MustPredict("question, documents -> answer")
	agent := &Program{Name: "RAGAgent", Subs: []Sub{{"retriever", retriever}, {"answerer", answerer}},
		Fn: func(ctx context.Context, in *sig.Map) (*Prediction, error) {
			d, err := retriever.Forward(ctx, sig.NewMap("question", in.String("question")))
			if err != nil {
				return nil, err
			}
			return answerer.Forward(ctx, sig.NewMap("question", in.String("question"), "documents", d.String("documents")))
		}}
	m := echoLM()
	s := MustSessionify(agent, Options{Recursive: Predictors, Exclude: []string{"retriever"},
		ChildConfigs: map[string]ChildConfig{"answerer": {ExcludeFields: []string{"documents"}}}})
	ctx := ctxWith(m)
	mustRun(t, ctx, s, "question", "q1")
	mustRun(t, ctx, s, "question", "q2")
	if _, ok := s.Children()["retriever"]; ok {
		t.Fatal("excluded retriever got a session")
	}
	ret := requestFor(m, "retriever", 1)
	if len(ret) != 2 || strings.Contains(ret[0].Content, "history") {
		t.Fatalf("retriever request carries history: %+v", ret)
	}
	h := s.Children()["answerer"].History()
	if keys := h.Messages[0].Keys(); !reflect.DeepEqual(keys, []string{"question", "answer"}) {
		t.Fatalf("answerer history keys = %v", keys)
	}
	if calls := s.Turns()[1].Calls; len(calls) != 2 || len(calls[0].History.Messages) != 0 {
		t.Fatal("retriever call must be recorded with no history")
	}
}

// §5.3: pre-sessionified pieces composed in an orchestrator over a container.
func TestOrchestratorOverContainer(t *testing.T) {
	planner := MustSessionify(MustChainOfThought("task -> plan"), Options{})
	writer := MustSessionify(MustPredict("plan -> draft"), Options{})
	ctx := ctxWith(echoLM())
	mustRun(t, ctx, planner, "task", "Build a REST API")
	c, err := NewContainer([]string{"planner", "writer"}, []*Session{planner, writer})
	if err != nil {
		t.Fatal(err)
	}
	orch := &Program{Name: "Orchestrator", Subs: []Sub{{"sessions", c}}, Fn: func(ctx context.Context, in *sig.Map) (*Prediction, error) {
		p, err := Call(ctx, c.Get("planner"), sig.NewMap("task", in.String("task")))
		if err != nil {
			return nil, err
		}
		return Call(ctx, c.Get("writer"), sig.NewMap("plan", p.String("plan")))
	}}
	app := MustSessionify(orch, Options{NestedSessions: NestedInherit, Record: RecordAll})
	mustRun(t, ctx, app, "task", "Build a REST API")
	mustRun(t, ctx, app, "task", "Add auth")
	if app.Len() != 2 || planner.Len() != 1 || writer.Len() != 0 {
		t.Fatalf("app %d planner %d writer %d", app.Len(), planner.Len(), writer.Len())
	}
	calls := app.Turns()[1].Calls
	if len(calls) != 2 || calls[0].Path != "sessions.planner" || len(calls[0].History.Messages) != 1 {
		t.Fatalf("orchestrator calls = %+v", calls)
	}
	// keep: each piece records its own turns; error: refused naming both.
	keep := MustSessionify(orch, Options{NestedSessions: NestedKeep})
	mustRun(t, ctx, keep, "task", "x")
	if planner.Len() != 2 || writer.Len() != 1 {
		t.Fatalf("keep: planner %d writer %d", planner.Len(), writer.Len())
	}
	keep.Undo(1, true)
	if planner.Len() != 1 || writer.Len() != 0 {
		t.Fatal("cascade undo must roll back nested sessions")
	}
	strict := MustSessionify(orch, Options{NestedSessions: NestedError})
	_, err = strict.Forward(ctx, in("task", "x"))
	if err == nil || !strings.Contains(err.Error(), `"sessions.planner"`) || !strings.Contains(err.Error(), `"Orchestrator"`) {
		t.Fatalf("error policy: %v", err)
	}
	unwrap := MustSessionify(orch, Options{NestedSessions: NestedUnwrap})
	mustRun(t, ctx, unwrap, "task", "x")
	mustRun(t, ctx, unwrap, "task", "y")
	if planner.Len() != 1 || len(unwrap.Turns()[1].History.Messages) != 1 {
		t.Fatal("unwrap must run the bare modules under the outer session")
	}
	// The container composes: its Flow runs when sessionified.
	c.Flow = func(ctx context.Context, c *Container, in *sig.Map) (*Prediction, error) {
		return Call(ctx, c.Get("writer"), in)
	}
	cs := MustSessionify(c, Options{NestedSessions: NestedInherit})
	mustRun(t, ctx, cs, "plan", "p")
	if cs.Len() != 1 || writer.Len() != 0 {
		t.Fatal("container as a module")
	}
}

// §7: override replay re-creates each keep-child's history as it was, mutating nothing.
func TestTimeTravelReplay(t *testing.T) {
	m := supportLM()
	s := MustSessionify(supportAgent(true), Options{Recursive: Predictors})
	ctx := ctxWith(m)
	for _, q := range []string{"q1", "q2", "q3"} {
		mustRun(t, ctx, s, "question", q)
	}
	before := saved(t, s)
	t2 := s.Turns()[1]
	mustRun(t, ctx, s, "question", "q2", "history", t2.History)
	if string(before) != string(saved(t, s)) {
		t.Fatal("replay mutated state")
	}
	replayed := m.Requests()[len(m.Requests())-2] // the replayed classify call
	orig := requestFor(m, "classify", 1)
	sameMessages(t, replayed.Messages.Slice(), orig)
	snaps := s.ChildSnapshots(1)
	if len(snaps["classify"].Messages) != 1 || len(snaps["respond"].Messages) != 1 {
		t.Fatalf("child snapshots = %v", snaps)
	}
}

// Concurrent inner calls are recorded in start order with correct per-path histories.
func TestConcurrentInnerCalls(t *testing.T) {
	a, b := MustPredict("x -> y"), MustPredict("x -> z")
	agent := &Program{Name: "Par", Subs: []Sub{{"a", a}, {"b", b}}, Fn: func(ctx context.Context, in *sig.Map) (*Prediction, error) {
		var wg sync.WaitGroup
		var errA, errB error
		wg.Add(2)
		go func() { defer wg.Done(); _, errA = a.Forward(ctx, in) }()
		go func() { defer wg.Done(); _, errB = b.Forward(ctx, in) }()
		wg.Wait()
		if errA != nil || errB != nil {
			return nil, fmt.Errorf("%v %v", errA, errB)
		}
		return NewPrediction("done", true), nil
	}}
	s := MustSessionify(agent, Options{Recursive: Predictors})
	ctx := ctxWith(echoLM())
	for i := 0; i < 20; i++ {
		mustRun(t, ctx, s, "x", fmt.Sprint(i))
	}
	for i, tr := range s.Turns() {
		if len(tr.Calls) != 2 {
			t.Fatalf("turn %d has %d calls", i, len(tr.Calls))
		}
		if tr.Calls[0].ID >= tr.Calls[1].ID && len(tr.Calls[0].ID) == len(tr.Calls[1].ID) {
			t.Fatalf("turn %d calls not in start order: %s %s", i, tr.Calls[0].ID, tr.Calls[1].ID)
		}
	}
	if got := histLens(s.Children()["a"]); got[19] != 19 {
		t.Fatalf("a's history lengths = %v", got)
	}
}

// Hierarchical save/load keeps child turns, groups and call records.
func TestHierarchicalSaveLoad(t *testing.T) {
	s := MustSessionify(retryAgent(2), Options{Recursive: Predictors})
	ctx := ctxWith(echoLM())
	mustRun(t, ctx, s, "task", "t1")
	mustRun(t, ctx, s, "task", "t2")
	l, err := Load(saved(t, s), retryAgent(2), Options{Recursive: Predictors})
	if err != nil {
		t.Fatal(err)
	}
	if l.Children()["planner"].Len() != 4 || !reflect.DeepEqual(l.TurnGroups("planner"), s.TurnGroups("planner")) {
		t.Fatalf("children after load: %d, groups %+v", l.Children()["planner"].Len(), l.TurnGroups("planner"))
	}
	if n := len(l.Turns()[1].Calls); n != 4 {
		t.Fatalf("calls after load = %d", n)
	}
	l.Undo(1, true)
	if l.Children()["planner"].Len() != 2 {
		t.Fatal("cascade undo after load")
	}
	var c0 *trace.Call = l.Turns()[0].Calls[0]
	if c0.Path != "planner" || c0.PredictorType != "ChainOfThought" || c0.Messages.Len() == 0 {
		t.Fatalf("call record after load: %+v", c0)
	}
}
