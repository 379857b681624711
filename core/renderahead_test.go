package core

import (
	"context"
	"testing"

	"github.com/sessionbench/sessionbench/core/sig"
)

// RenderAhead renders the very entries the next turn's calls send, under the keys those
// calls use: on a session restored from recorded turns (whose history entries are new
// and unrendered), every entry a predictor will see has a rendering afterwards, and the
// next turn finds it and renders none of them again (a rendering made under another
// signature or adapter would be replaced by the turn's own).
func TestRenderAhead(t *testing.T) {
	type setup struct {
		mod   Module
		opts  Options
		paths []string // the predictors' call paths ("" for a flat session's own history)
	}
	cases := []struct {
		name string
		mk   func() setup
	}{
		{"keep, window, per turn, inherit, chain of thought", func() setup {
			keep, win, per, inh := MustPredict("q -> a"), MustPredict("q -> b"), MustPredict("q -> c"), MustPredict("q -> d")
			cot := MustChainOfThought("q -> e")
			root := &Program{Name: "Root", Subs: []Sub{{"keep", keep}, {"win", win}, {"per", per}, {"inh", inh}, {"cot", cot}},
				Fn: func(ctx context.Context, in *sig.Map) (*Prediction, error) {
					for _, p := range []*Predict{keep, win, per, inh, cot} {
						if _, err := p.Forward(ctx, in); err != nil {
							return nil, err
						}
					}
					return &Prediction{Fields: sig.NewMap("out", "o")}, nil
				}}
			return setup{root, Options{Recursive: Predictors, ChildConfigs: map[string]ChildConfig{
				"keep": {ExcludeFields: []string{"q"}}, "win": {MaxTurns: Int(1)}, "per": {Scope: PerTurn}, "inh": {Nested: NestedInherit}}},
				[]string{"keep", "win", "inh", "cot"}}
		}},
		{"nested session", func() setup {
			a := MustPredict("q -> x")
			inner := MustSessionify(&Program{Name: "Inner", Subs: []Sub{{"a", a}},
				Fn: func(ctx context.Context, in *sig.Map) (*Prediction, error) { return a.Forward(ctx, in) }}, Options{Recursive: Predictors})
			root := &Program{Name: "Root", Subs: []Sub{{"inner", inner}},
				Fn: func(ctx context.Context, in *sig.Map) (*Prediction, error) { return inner.Forward(ctx, in) }}
			return setup{root, Options{Recursive: Predictors}, []string{"inner.a"}}
		}},
		{"flat", func() setup {
			return setup{MustPredict("q -> a"), Options{}, []string{""}}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			live := c.mk()
			s := MustSessionify(live.mod, live.opts)
			for _, q := range []string{"one", "two", "three"} {
				mustRun(t, ctxWith(echoLM()), s, "q", q)
			}
			fresh := c.mk()
			r, err := Restore(fresh.mod, fresh.opts, s.Turns())
			if err != nil {
				t.Fatal(err)
			}
			entries := func() []*sig.Map {
				var out []*sig.Map
				for _, p := range fresh.paths {
					var h sig.History
					if p == "" {
						h = r.History()
					} else {
						h, _ = r.NextHistory(p)
					}
					if len(h.Messages) == 0 {
						t.Fatalf("%s: no history to render", p)
					}
					out = append(out, h.Messages...)
				}
				return out
			}
			for i, m := range entries() {
				if m.Rendering() != nil {
					t.Fatalf("entry %d rendered before RenderAhead", i)
				}
			}
			r.RenderAhead()
			ahead := entries()
			before := make([]*sig.Rendering, len(ahead))
			for i, m := range ahead {
				if before[i] = m.Rendering(); before[i] == nil {
					t.Fatalf("entry %d (%v) not rendered by RenderAhead", i, m.Keys())
				}
			}
			mustRun(t, ctxWith(echoLM()), r, "q", "four")
			for i, m := range ahead {
				if m.Rendering() != before[i] {
					t.Errorf("the turn rendered entry %d (%v) again: RenderAhead used another key", i, m.Keys())
				}
			}
		})
	}
}
