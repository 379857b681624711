package core

import (
	"context"
	"testing"

	"github.com/sessionbench/sessionbench/core/sig"
)

// FindPredictor reaches predictors through programs, sessions and containers.
func TestFindPredictor(t *testing.T) {
	classify, respond, summarize := MustPredict("q -> topic"), MustPredict("q -> reply"), MustPredict("text -> summary")
	inner, err := Sessionify(&Program{Name: "Research", Subs: []Sub{{"summarize", summarize}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sessClassify, err := Sessionify(classify, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cont, err := NewContainer([]string{"planner"}, []*Session{sessClassify})
	if err != nil {
		t.Fatal(err)
	}
	root := &Program{Name: "Agent", Subs: []Sub{{"respond", respond}, {"research", inner}, {"team", cont}}}
	cases := []struct {
		m    Module
		path string
		want *Predict
	}{
		{root, "respond", respond},
		{root, "research.summarize", summarize},
		{root, "team.planner", classify},
		{root, "research", nil},
		{root, "nope", nil},
		{root, "respond.deeper", nil},
		{respond, "", respond},
		{sessClassify, "", classify},
		{inner, "summarize", summarize},
	}
	for _, c := range cases {
		if got := FindPredictor(c.m, c.path); got != c.want {
			t.Errorf("FindPredictor(%T, %q) = %p, want %p", c.m, c.path, got, c.want)
		}
	}
}

// HistorySource follows each child's policy, also inside nested sessions.
func TestHistorySource(t *testing.T) {
	inner := MustSessionify(&Program{Name: "Inner", Subs: []Sub{{"a", MustPredict("q -> x")}}}, Options{Recursive: Predictors})
	root := &Program{Name: "Root", Subs: []Sub{{"keep", MustPredict("q -> a")}, {"inh", MustPredict("q -> b")},
		{"gone", MustPredict("q -> c")}, {"none", MustPredict("q -> d")}, {"inner", inner}}}
	s := MustSessionify(root, Options{Recursive: Predictors, Exclude: []string{"gone"},
		ChildConfigs: map[string]ChildConfig{"inh": {Nested: NestedInherit}, "none": {Scope: Stateless}}})
	for path, want := range map[string]string{"keep": HistoryOwn, "inh": HistoryOuter, "gone": HistoryNone,
		"none": HistoryNone, "inner.a": HistoryOwn, "nope": HistoryNone} {
		if got := s.HistorySource(path); got != want {
			t.Errorf("HistorySource(%q) = %q, want %q", path, got, want)
		}
	}
}

// NextHistory is what each predictor would see first in the next turn.
func TestNextHistory(t *testing.T) {
	keep, win, perTurn, inh := MustPredict("q -> a"), MustPredict("q -> b"), MustPredict("q -> c"), MustPredict("q -> d")
	root := &Program{Name: "Root", Subs: []Sub{{"keep", keep}, {"win", win}, {"per", perTurn}, {"inh", inh}},
		Fn: func(ctx context.Context, in *sig.Map) (*Prediction, error) {
			for _, p := range []*Predict{keep, win, perTurn, inh} {
				if _, err := p.Forward(ctx, in); err != nil {
					return nil, err
				}
			}
			return &Prediction{Fields: sig.NewMap("out", "o")}, nil
		}}
	s := MustSessionify(root, Options{Recursive: Predictors, ChildConfigs: map[string]ChildConfig{
		"keep": {ExcludeFields: []string{"q"}}, "win": {MaxTurns: Int(1)}, "per": {Scope: PerTurn}, "inh": {Nested: NestedInherit}}})
	for _, q := range []string{"one", "two"} {
		mustRun(t, ctxWith(echoLM()), s, "q", q)
	}
	cases := []struct {
		path, src string
		n         int
	}{{"keep", HistoryOwn, 2}, {"win", HistoryOwn, 1}, {"per", HistoryOwn, 0}, {"inh", HistoryOuter, 2}, {"nope", HistoryNone, 0}}
	for _, c := range cases {
		h, src := s.NextHistory(c.path)
		if src != c.src || len(h.Messages) != c.n {
			t.Errorf("NextHistory(%q) = %d messages from %q, want %d from %q", c.path, len(h.Messages), src, c.n, c.src)
		}
	}
	if h, _ := s.NextHistory("keep"); h.Messages[0].Has("q") {
		t.Errorf("excluded field in history: %v", h.Messages[0])
	}
}
