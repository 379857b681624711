package core

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

func qa(t *testing.T, o Options) (*Session, context.Context) {
	t.Helper()
	s, err := Sessionify(MustPredict("question -> answer"), o)
	if err != nil {
		t.Fatal(err)
	}
	return s, ctxWith(echoLM())
}

// Behaviour 1: turns, inputs, outputs and snapshots.
func TestSessionRecordsTurnsWithSnapshots(t *testing.T) {
	s, ctx := qa(t, Options{})
	mustRun(t, ctx, s, "question", "Q1")
	mustRun(t, ctx, s, "question", "Q2")
	turns := s.Turns()
	if len(turns) != 2 {
		t.Fatalf("turns = %d, want 2", len(turns))
	}
	if got := py.CompactJSON(turns[0].Inputs); got != `{"question":"Q1"}` {
		t.Errorf("inputs = %s", got)
	}
	if got := py.CompactJSON(turns[0].Outputs); got != `{"answer":"answer:Q1"}` {
		t.Errorf("outputs = %s", got)
	}
	if len(turns[0].History.Messages) != 0 {
		t.Errorf("turn 0 snapshot not empty")
	}
	if got := py.CompactJSON(turns[1].History); got != `{"messages":[{"question":"Q1","answer":"answer:Q1"}]}` {
		t.Errorf("turn 1 snapshot = %s", got)
	}
}

// Behaviour 2: a failing module records nothing and on_turn does not fire.
func TestFailingModuleRecordsNoTurn(t *testing.T) {
	fired := 0
	s, _ := qa(t, Options{OnTurn: func(*Session, *trace.Turn) { fired++ }})
	bad := &lm.Scripted{Func: func(lm.Request) (string, bool, error) { return "", true, errors.New("boom") }}
	if _, err := s.Forward(ctxWith(bad), in("question", "Q")); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v, want boom", err)
	}
	if s.Len() != 0 || fired != 0 {
		t.Fatalf("len=%d fired=%d, want 0 0", s.Len(), fired)
	}
	// A malformed answer is a parse error, also recording nothing.
	junk := &lm.Scripted{Seq: []string{"no headers at all"}}
	_, err := s.Forward(ctxWith(junk), in("question", "Q"))
	if err == nil || !strings.Contains(err.Error(), "failed to parse") {
		t.Fatalf("err = %v", err)
	}
	if s.Len() != 0 {
		t.Fatal("parse failure recorded a turn")
	}
}

// Behaviours 3 and 4: exclude_fields and the history_input_fields allow-list.
func TestHistoryFieldFilters(t *testing.T) {
	cases := []struct {
		name     string
		opts     Options
		wantKeys []string
	}{
		{"exclude context", Options{ExcludeFields: []string{"context"}}, []string{"question", "answer"}},
		{"allow question", Options{HistoryInputFields: []string{"question"}}, []string{"question", "answer"}},
		{"allow context", Options{HistoryInputFields: []string{"context"}}, []string{"context", "answer"}},
		{"exclude wins", Options{HistoryInputFields: []string{"question"}, ExcludeFields: []string{"question"}}, []string{"answer"}},
		{"none", Options{}, []string{"question", "context", "answer"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := MustSessionify(MustPredict("question, context -> answer"), c.opts)
			ctx := ctxWith(echoLM())
			mustRun(t, ctx, s, "question", "Q", "context", "C")
			h := s.History()
			if got := h.Messages[0].Keys(); !reflect.DeepEqual(got, c.wantKeys) {
				t.Fatalf("history keys = %v, want %v", got, c.wantKeys)
			}
			if !s.Turns()[0].Inputs.Has("context") {
				t.Fatal("excluded value must stay in turn inputs")
			}
		})
	}
}

// Behaviour 5: max_turns windows messages; 0 means no history (ARCHITECTURE.md).
func TestMaxTurnsWindow(t *testing.T) {
	s, ctx := qa(t, Options{MaxTurns: Int(2)})
	for i := 0; i < 5; i++ {
		mustRun(t, ctx, s, "question", fmt.Sprintf("Q%d", i))
	}
	if s.Len() != 5 {
		t.Fatalf("len = %d", s.Len())
	}
	var qs []string
	for _, m := range s.History().Messages {
		qs = append(qs, m.String("question"))
	}
	if !reflect.DeepEqual(qs, []string{"Q3", "Q4"}) {
		t.Fatalf("window = %v", qs)
	}
	if got := histLens(s); !reflect.DeepEqual(got, []int{0, 1, 2, 2, 2}) {
		t.Fatalf("snapshot lengths = %v", got)
	}
	z, ctx := qa(t, Options{MaxTurns: Int(0)})
	mustRun(t, ctx, z, "question", "A")
	mustRun(t, ctx, z, "question", "B")
	if got := histLens(z); !reflect.DeepEqual(got, []int{0, 0}) {
		t.Fatalf("max_turns=0 snapshot lengths = %v, want no history", got)
	}
}

// Behaviour 6: max_stored_turns keeps the last n; indices never repeat (ARCHITECTURE.md).
func TestMaxStoredTurns(t *testing.T) {
	s, ctx := qa(t, Options{MaxStoredTurns: Int(3)})
	for i := 0; i < 8; i++ {
		mustRun(t, ctx, s, "question", fmt.Sprintf("Q%d", i))
	}
	var qs []string
	var idx []int
	for _, tr := range s.Turns() {
		qs = append(qs, tr.Inputs.String("question"))
		idx = append(idx, tr.Index)
	}
	if !reflect.DeepEqual(qs, []string{"Q5", "Q6", "Q7"}) || !reflect.DeepEqual(idx, []int{5, 6, 7}) {
		t.Fatalf("stored = %v %v", qs, idx)
	}
	if n := len(s.History().Messages); n != 3 {
		t.Fatalf("history holds %d messages, want the 3 stored turns", n)
	}
}

// Behaviour 7: initial history seeds the first snapshot and survives reset.
func TestInitialHistoryAndReset(t *testing.T) {
	seed := sig.History{Messages: []*sig.Map{in("question", "Hi", "answer", "Hello")}}
	s, ctx := qa(t, Options{InitialHistory: &seed})
	mustRun(t, ctx, s, "question", "Q1")
	if got := py.CompactJSON(s.Turns()[0].History); got != `{"messages":[{"question":"Hi","answer":"Hello"}]}` {
		t.Fatalf("snapshot = %s", got)
	}
	s.Reset(false)
	if s.Len() != 0 || len(s.History().Messages) != 1 {
		t.Fatalf("after reset len=%d history=%d", s.Len(), len(s.History().Messages))
	}
}

// Behaviours 8-11: explicit history under each policy.
func TestExplicitHistoryPolicies(t *testing.T) {
	h := sig.History{Messages: []*sig.Map{in("question", "old", "answer", "old answer")}}
	t.Run("override records nothing", func(t *testing.T) {
		fired := 0
		s, ctx := qa(t, Options{OnTurn: func(*Session, *trace.Turn) { fired++ }})
		p := mustRun(t, ctx, s, "question", "Q", "history", h)
		if p.String("answer") != "answer:Q" || s.Len() != 0 || fired != 0 {
			t.Fatalf("answer=%q len=%d fired=%d", p.String("answer"), s.Len(), fired)
		}
	})
	t.Run("use_if_provided records with that snapshot", func(t *testing.T) {
		s, ctx := qa(t, Options{HistoryPolicy: UseIfProvided})
		mustRun(t, ctx, s, "question", "Q", "history", h)
		if s.Len() != 1 || !py.Same(s.Turns()[0].History, h) || !s.Turns()[0].Explicit {
			t.Fatal("snapshot is not the explicit history")
		}
	})
	t.Run("replace_session resets to it", func(t *testing.T) {
		s, ctx := qa(t, Options{HistoryPolicy: ReplaceSession})
		mustRun(t, ctx, s, "question", "A")
		mustRun(t, ctx, s, "question", "B")
		mustRun(t, ctx, s, "question", "C", "history", h)
		if s.Len() != 1 || !py.Same(s.Turns()[0].History, h) {
			t.Fatalf("len=%d", s.Len())
		}
		if got := s.History().Messages[0].String("question"); got != "old" {
			t.Fatalf("history starts with %q", got)
		}
	})
	t.Run("wrong type is an error", func(t *testing.T) {
		s, ctx := qa(t, Options{})
		_, err := s.Forward(ctx, in("question", "Q", "history", "not a history"))
		if err == nil || !strings.Contains(err.Error(), "must be a History") || s.Len() != 0 {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("None means no explicit history", func(t *testing.T) {
		s, ctx := qa(t, Options{})
		mustRun(t, ctx, s, "question", "Q", "history", nil)
		if s.Len() != 1 {
			t.Fatal("history=None must record a normal turn")
		}
	})
}

// Behaviours 12-14: add_turn, pop, undo, fork.
func TestEditingOperations(t *testing.T) {
	s, ctx := qa(t, Options{})
	s.AddTurn(in("question", "Q1"), in("answer", "A"))
	mustRun(t, ctx, s, "question", "Q2")
	if got := py.CompactJSON(s.Turns()[1].History); got != `{"messages":[{"question":"Q1","answer":"A"}]}` {
		t.Fatalf("snapshot after add_turn = %s", got)
	}
	e, _ := qa(t, Options{})
	if e.PopTurn() != nil {
		t.Fatal("pop on empty must be nil")
	}
	mustRun(t, ctx, s, "question", "Q3")
	undone := s.Undo(2, false)
	if len(undone) != 2 || undone[0].Inputs.String("question") != "Q3" || undone[1].Inputs.String("question") != "Q2" || s.Len() != 1 {
		t.Fatalf("undo(2) = %d turns, len %d", len(undone), s.Len())
	}
	if len(s.Undo(0, false)) != 0 {
		t.Fatal("undo(0) must return nothing")
	}
	if got := s.Undo(5, false); len(got) != 1 || s.Len() != 0 {
		t.Fatalf("undo(5) with 1 turn = %d, len %d", len(got), s.Len())
	}
	if r := s.Redo(1, false); len(r) != 1 || s.Len() != 1 {
		t.Fatalf("redo = %d, len %d", len(r), s.Len())
	}
	mustRun(t, ctx, s, "question", "new")
	if s.CanRedo() != 0 {
		t.Fatal("a new turn must clear redo")
	}

	o, ctx := qa(t, Options{})
	mustRun(t, ctx, o, "question", "Q1")
	f := o.Fork(false)
	mustRun(t, ctx, o, "question", "Q2")
	if o.Len() != 2 || f.Len() != 1 {
		t.Fatalf("original %d fork %d", o.Len(), f.Len())
	}
	mustRun(t, ctx, f, "question", "F2")
	f.Reset(false)
	if o.Len() != 2 || o.Turns()[1].Inputs.String("question") != "Q2" {
		t.Fatal("mutating the fork changed the original")
	}
}

// Behaviour 21: inputs are deep-copied at record time.
func TestInputsDeepCopied(t *testing.T) {
	s, ctx := qa(t, Options{})
	inner := []any{"a"}
	input := in("question", "Q", "extra", inner)
	if _, err := s.Forward(ctx, input); err != nil {
		t.Fatal(err)
	}
	input.Set("question", "changed")
	if s.Turns()[0].Inputs.String("question") != "Q" {
		t.Fatal("record changed with the caller's data")
	}
}

// Behaviour 22: on_turn fires once per turn; a panicking hook does not fail the call;
// a fork shares the hook.
func TestOnTurnHook(t *testing.T) {
	var seen []int
	s, ctx := qa(t, Options{OnTurn: func(_ *Session, tr *trace.Turn) {
		seen = append(seen, tr.Index)
		if tr.Index == 1 {
			panic("hook failure")
		}
	}})
	mustRun(t, ctx, s, "question", "a")
	mustRun(t, ctx, s, "question", "b")
	f := s.Fork(false)
	mustRun(t, ctx, f, "question", "c")
	if !reflect.DeepEqual(seen, []int{0, 1, 2}) {
		t.Fatalf("hook saw %v", seen)
	}
}

// The history field is appended last with dspy-session's description, and the default
// instructions do not mention it.
func TestInjectedHistoryFieldOnTheWire(t *testing.T) {
	m := echoLM()
	s := MustSessionify(MustPredict("text -> corrected"), Options{})
	ctx := ctxWith(m)
	mustRun(t, ctx, s, "text", "helo")
	mustRun(t, ctx, s, "text", "wrld")
	req := m.Requests()[1]
	sys := req.Messages.At(0).Content
	for _, want := range []string{"2. `history` (History): Conversation history", "Given the fields `text`, produce the fields `corrected`."} {
		if !strings.Contains(sys, want) {
			t.Errorf("system message lacks %q:\n%s", want, sys)
		}
	}
	if req.Messages.Len() != 4 || req.Messages.At(1).Content != "[[ ## text ## ]]\nhelo" {
		t.Fatalf("messages = %+v", req.Messages)
	}
}

// Concurrent turns on one session are serialised and all recorded.
func TestConcurrentTurns(t *testing.T) {
	s, ctx := qa(t, Options{})
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		go func(i int) {
			_, err := s.Forward(ctx, in("question", fmt.Sprint(i)))
			errs <- err
		}(i)
	}
	for i := 0; i < 20; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i, tr := range s.Turns() {
		if tr.Index != i || len(tr.History.Messages) != i {
			t.Fatalf("turn %d: index %d, history %d", i, tr.Index, len(tr.History.Messages))
		}
	}
}

func TestOptionErrors(t *testing.T) {
	cases := []struct {
		opts Options
		want string
	}{
		{Options{HistoryPolicy: "sometimes"}, "history_policy"},
		{Options{NestedSessions: "share"}, "nested_sessions"},
		{Options{MaxTurns: Int(-1)}, "max_turns"},
		{Options{Record: "everything"}, "record"},
		{Options{ChildConfigs: map[string]ChildConfig{"x": {Scope: "forever"}}}, `child_configs["x"]`},
	}
	for _, c := range cases {
		_, err := Sessionify(MustPredict("a -> b"), c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want mention of %s", c.opts, err, c.want)
		}
	}
}
