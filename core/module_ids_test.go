package core

import (
	"context"
	"sync"
	"testing"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// idSink records each call's ID and the parent ID the engine gives the sink.
type idSink struct {
	mu      sync.Mutex
	parents map[string]string
}

func (s *idSink) BeginTurn(context.Context, *sig.Map) (string, error) { return "t", nil }
func (s *idSink) RecordCall(_ context.Context, _, parent string, c *trace.Call) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.parents[c.ID] = parent
	return nil
}
func (s *idSink) CommitTurn(context.Context, string, *trace.Turn) error { return nil }
func (s *idSink) AbortTurn(context.Context, string, *trace.Turn) error  { return nil }

// The calls inside a module-level record finish before it, yet take their IDs and the
// sink's parent ID from it: it must have its ID from the start.
func TestModuleRecordIDsReachInnerCalls(t *testing.T) {
	a := &Predict{Signature: sig.New("A", "", []sig.Field{{Name: "q"}}, []sig.Field{{Name: "x"}})}
	b := &Predict{Signature: sig.New("B", "", []sig.Field{{Name: "x"}}, []sig.Field{{Name: "y"}})}
	inner := &Program{Name: "Inner", Subs: []Sub{{"a", a}, {"b", b}}, Fn: func(ctx context.Context, in *sig.Map) (*Prediction, error) {
		p, err := a.Forward(ctx, in)
		if err != nil {
			return nil, err
		}
		return b.Forward(ctx, sig.NewMap("x", p.String("x")))
	}}
	first := &Predict{Signature: sig.New("F", "", []sig.Field{{Name: "q"}}, []sig.Field{{Name: "x"}})}
	outer := &Program{Name: "Outer", Subs: []Sub{{"first", first}, {"inner", inner}}, Fn: func(ctx context.Context, in *sig.Map) (*Prediction, error) {
		if _, err := first.Forward(ctx, in); err != nil {
			return nil, err
		}
		return Call(ctx, inner, in)
	}}
	sink := &idSink{parents: map[string]string{}}
	s := MustSessionify(outer, Options{Recursive: Modules, Sink: sink})
	_, turn, err := s.Run(ctxWith(echoLM()), sig.NewMap("q", "hi"))
	if err != nil {
		t.Fatal(err)
	}
	mod := turn.Calls[1]
	if mod.ID != "c2" || len(mod.Children) != 2 || mod.Children[0].ID != "c2.c3" || mod.Children[1].ID != "c2.c4" {
		t.Fatalf("ids: module %q, children %q %q", mod.ID, mod.Children[0].ID, mod.Children[1].ID)
	}
	for id, want := range map[string]string{"c1": "", "c2": "", "c2.c3": "c2", "c2.c4": "c2"} {
		if got, ok := sink.parents[id]; !ok || got != want {
			t.Errorf("sink got call %q with parent %q (recorded: %v), want parent %q", id, got, ok, want)
		}
	}
}
