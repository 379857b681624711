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
