package core

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// twoStep is a module of two predictors, a then b, each with its own signature.
func twoStep() (*Program, *Predict, *Predict) {
	a, b := MustPredict("q -> x"), MustPredict("x -> y")
	return &Program{Name: "TwoStep", Subs: []Sub{{"a", a}, {"b", b}}, Fn: func(ctx context.Context, in *sig.Map) (*Prediction, error) {
		p, err := a.Forward(ctx, in)
		if err != nil {
			return nil, err
		}
		return b.Forward(ctx, sig.NewMap("x", p.String("x")))
	}}, a, b
}

// keepSessionAroundModule is an agent whose second step is a keep-session around
// twoStep: the inner session's predictors keep their turns, recorded as the children
// of its call.
func keepSessionAroundModule() (Module, Options) {
	prog, _, _ := twoStep()
	inner := MustSessionify(prog, Options{Recursive: Predictors})
	first := MustPredict("q -> q2")
	return &Program{Name: "Outer", Subs: []Sub{{"first", first}, {"inner", inner}}, Fn: func(ctx context.Context, in *sig.Map) (*Prediction, error) {
		if _, err := first.Forward(ctx, in); err != nil {
			return nil, err
		}
		return inner.Forward(ctx, in)
	}}, Options{Recursive: Predictors, NestedSessions: NestedKeep}
}

// requests lists every call of a turn with the exact messages it sent.
func requests(t *trace.Turn) string {
	var b strings.Builder
	trace.WalkCalls(t.Calls, func(c *trace.Call, d int) {
		fmt.Fprintf(&b, "%s%s %s\n", strings.Repeat("  ", d), c.ID, c.Path)
		for _, m := range c.Messages.All() {
			fmt.Fprintf(&b, "%s  [%s] %q\n", strings.Repeat("  ", d), m.Role, m.Content)
		}
	})
	return b.String()
}

// Inner predictors of nested modules keep their own cross-turn history, recorded only as
// children of the module's call record: Restore must bring it back, or a reopened
// conversation would send them different requests than the live session.
func TestRestoreNestedModuleHistories(t *testing.T) {
	cases := []struct {
		name  string
		build func() (Module, Options)
	}{
		{"recursive modules", func() (Module, Options) {
			inner, _, _ := twoStep()
			first := MustPredict("q -> q2")
			return &Program{Name: "Outer", Subs: []Sub{{"first", first}, {"inner", inner}}, Fn: func(ctx context.Context, in *sig.Map) (*Prediction, error) {
				if _, err := first.Forward(ctx, in); err != nil {
					return nil, err
				}
				return Call(ctx, inner, in)
			}}, Options{Recursive: Modules}
		}},
		{"inheriting module, keep predictors inside", func() (Module, Options) {
			inner, _, _ := twoStep()
			first := MustPredict("q -> q2")
			return &Program{Name: "Outer", Subs: []Sub{{"first", first}, {"inner", inner}}, Fn: func(ctx context.Context, in *sig.Map) (*Prediction, error) {
				if _, err := first.Forward(ctx, in); err != nil {
					return nil, err
				}
				return Call(ctx, inner, in)
			}}, Options{Recursive: Modules, ChildConfigs: map[string]ChildConfig{"inner": {Nested: NestedInherit}}}
		}},
		{"keep session around a module", keepSessionAroundModule},
	}
	qs := []string{"one", "two", "three"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, o := c.build()
			o.Record = RecordAll
			live := MustSessionify(m, o)
			var turns []*trace.Turn
			for _, q := range qs {
				_, tr, err := live.Run(ctxWith(echoLM()), sig.NewMap("q", q))
				if err != nil {
					t.Fatal(err)
				}
				turns = append(turns, tr)
			}
			if !strings.Contains(requests(turns[2]), "inner.a") {
				t.Fatalf("the setup records no inner calls:\n%s", requests(turns[2]))
			}
			m2, o2 := c.build()
			o2.Record = RecordAll
			s, err := Restore(m2, o2, turns[:2])
			if err != nil {
				t.Fatal(err)
			}
			_, next, err := s.Run(ctxWith(echoLM()), sig.NewMap("q", qs[2]))
			if err != nil {
				t.Fatal(err)
			}
			if g, w := requests(next), requests(turns[2]); g != w {
				t.Fatalf("restored run sends other requests:\n--- restored\n%s--- live\n%s", g, w)
			}
		})
	}
}
