package core

import "testing"

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
		ChildConfigs: map[string]ChildConfig{"inh": {Nested: Inherit}, "none": {Scope: Stateless}}})
	for path, want := range map[string]string{"keep": HistoryOwn, "inh": HistoryOuter, "gone": HistoryNone,
		"none": HistoryNone, "inner.a": HistoryOwn, "nope": HistoryNone} {
		if got := s.HistorySource(path); got != want {
			t.Errorf("HistorySource(%q) = %q, want %q", path, got, want)
		}
	}
}
