package core

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

func threeTurns(t *testing.T, qs ...string) *Session {
	t.Helper()
	s, ctx := qa(t, Options{})
	for _, q := range qs {
		mustRun(t, ctx, s, "question", q)
	}
	return s
}

// good/bad metric by question text.
func byQuestion(bad ...string) Metric {
	return func(ex Example, _ *Prediction) (float64, error) {
		q := ex.Fields.String("question")
		for _, b := range bad {
			if q == b {
				return 0, nil
			}
		}
		return 1, nil
	}
}

func questions(ex []Example) []string {
	var out []string
	for _, e := range ex {
		out = append(out, e.Fields.String("question"))
	}
	return out
}

// Behaviours 15-19.
func TestToExamples(t *testing.T) {
	s := threeTurns(t, "Q1", "Q2", "Q3")
	ex, err := s.ToExamples(ExampleOptions{})
	if err != nil || len(ex) != 3 {
		t.Fatalf("%d examples, %v", len(ex), err)
	}
	if !reflect.DeepEqual(ex[1].InputKeys, []string{"question", "history"}) || ex[1].Labels().String("answer") != "answer:Q2" {
		t.Fatalf("example 1 = %v / %s", ex[1].InputKeys, py.CompactJSON(ex[1].Labels()))
	}
	if h, _ := ex[1].Fields.Get("history"); len(h.(sig.History).Messages) != 1 {
		t.Fatal("example history is not the snapshot")
	}
	noH, _ := s.ToExamples(ExampleOptions{ExcludeHistory: true})
	if noH[0].Fields.Has("history") {
		t.Fatal("include_history=false kept history")
	}

	half := 0.5
	cases := []struct {
		name   string
		qs     []string
		bad    []string
		strict bool
		want   []string
	}{
		{"min score", []string{"Q1", "Q2", "Q3"}, []string{"Q2"}, false, []string{"Q1", "Q3"}},
		{"strict stops at first failure", []string{"Q1", "Q2", "Q3"}, []string{"Q2"}, true, []string{"Q1"}},
		{"strict keeps the good prefix", []string{"Q1", "Q2", "Q3", "Q4"}, []string{"Q3"}, true, []string{"Q1", "Q2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := threeTurns(t, c.qs...)
			ex, err := s.ToExamples(ExampleOptions{Metric: byQuestion(c.bad...), MinScore: &half, StrictTrajectory: c.strict})
			if err != nil {
				t.Fatal(err)
			}
			if got := questions(ex); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}

	// Without a metric, min_score drops never-scored turns (dspy-session quirk kept).
	if ex, _ := threeTurns(t, "Q1").ToExamples(ExampleOptions{MinScore: &half}); len(ex) != 0 {
		t.Fatal("unscored turn passed min_score")
	}

	// Empty outputs are skipped (strict: stop).
	e := threeTurns(t, "Q1")
	e.AddTurn(in("question", "Q2"), in())
	e.AddTurn(in("question", "Q3"), in("answer", "x"))
	if got := questions(must(e.ToExamples(ExampleOptions{}))); !reflect.DeepEqual(got, []string{"Q1", "Q3"}) {
		t.Fatalf("require_outputs: %v", got)
	}
	if got := questions(must(e.ToExamples(ExampleOptions{StrictTrajectory: true}))); !reflect.DeepEqual(got, []string{"Q1"}) {
		t.Fatalf("strict require_outputs: %v", got)
	}

	m, err := MergeExamples(ExampleOptions{}, threeTurns(t, "a"), threeTurns(t, "b", "c"))
	if err != nil || len(m) != 3 {
		t.Fatalf("merge = %d, %v", len(m), err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Behaviour 17: metric errors score 0, or propagate with on_metric_error=raise.
func TestMetricErrors(t *testing.T) {
	failing := func(Example, *Prediction) (float64, error) { return 0, errors.New("metric broke") }
	s := threeTurns(t, "Q1")
	sc, err := s.Score(failing, nil)
	if err != nil || sc[0] != 0 || *s.Turns()[0].Score != 0 {
		t.Fatalf("zero mode: %v %v", sc, err)
	}
	r, ctx := qa(t, Options{OnMetricError: "raise"})
	mustRun(t, ctx, r, "question", "Q")
	if _, err := r.Score(failing, nil); err == nil || !strings.Contains(err.Error(), "metric broke") {
		t.Fatalf("raise mode: %v", err)
	}
	// Scores do not leak into forks.
	f := s.Fork(false)
	s.Score(func(Example, *Prediction) (float64, error) { return 0.9, nil }, nil)
	if *f.Turns()[0].Score != 0 || *s.Turns()[0].Score != 0.9 {
		t.Fatal("scoring the original changed the fork")
	}
}

// Behaviour 20: save/load round trip, snapshots recomputed, versions.
func TestSaveLoad(t *testing.T) {
	s := MustSessionify(MustPredict("question, context -> answer"), Options{ExcludeFields: []string{"context"}, HistoryPolicy: UseIfProvided})
	ctx := ctxWith(echoLM())
	mustRun(t, ctx, s, "question", "Q1", "context", "C1")
	explicit := sig.History{Messages: []*sig.Map{in("question", "X", "answer", "Y")}}
	mustRun(t, ctx, s, "question", "Q2", "history", explicit)
	mustRun(t, ctx, s, "question", "Q3")
	raw := saved(t, s)
	doc := must(sig.DecodeJSON(raw)).(*sig.Map)
	if v, _ := doc.Get("version"); v != int64(2) {
		t.Fatalf("version = %v", v)
	}
	if py.CompactJSON(must2(doc.Get("exclude_fields"))) != `["context","history"]` {
		t.Fatalf("exclude_fields = %s", py.CompactJSON(must2(doc.Get("exclude_fields"))))
	}
	turn0 := must2(doc.Get("turns")).([]any)[0].(*sig.Map)
	if !reflect.DeepEqual(turn0.Keys(), []string{"index", "inputs", "outputs", "score"}) {
		t.Fatalf("turn keys = %v", turn0.Keys())
	}

	l, err := Load(raw, MustPredict("question, context -> answer"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Len() != 3 {
		t.Fatalf("loaded %d turns", l.Len())
	}
	for i, tr := range l.Turns() {
		if !py.Same(tr.History, s.Turns()[i].History) || !tr.Inputs.Equal(s.Turns()[i].Inputs) {
			t.Fatalf("turn %d differs after load: %s vs %s", i, py.CompactJSON(tr.History), py.CompactJSON(s.Turns()[i].History))
		}
	}
	if !l.Turns()[1].Explicit {
		t.Fatal("explicit snapshot lost")
	}

	// Loading with other settings recomputes snapshots with them.
	l2, err := Load(raw, MustPredict("question, context -> answer"), Options{ExcludeFields: []string{"answer"}})
	if err != nil {
		t.Fatal(err)
	}
	if keys := l2.Turns()[2].History.Messages[0].Keys(); !reflect.DeepEqual(keys, []string{"question", "context"}) {
		t.Fatalf("recomputed snapshot keys = %v", keys)
	}

	v1 := `{"version":1,"history_field":"history","input_field_override":["question"],
	  "turns":[{"index":0,"inputs":{"question":"a","context":"c"},"outputs":{"answer":"b"},"history_snapshot":{"messages":[]},"score":0.5}]}`
	l3, err := Load([]byte(v1), MustPredict("question, context -> answer"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if keys := l3.History().Messages[0].Keys(); !reflect.DeepEqual(keys, []string{"question", "answer"}) || *l3.Turns()[0].Score != 0.5 {
		t.Fatalf("v1 allow-list not applied: %v", keys)
	}
	for _, bad := range []struct{ doc, want string }{
		{`{"version":999,"turns":[]}`, "unsupported session state version: 999"},
		{`[1,2]`, "want an object"},
		{`{"version":2,"turns":[{"index":"x"}]}`, "$.turns[0].index: is a string"},
		{`{"version":2,"turns":`, "not valid JSON"},
	} {
		if _, err := Load([]byte(bad.doc), MustPredict("a -> b"), Options{}); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: err = %v, want %q", bad.doc, err, bad.want)
		}
	}
}

func must2(v any, _ bool) any { return v }
