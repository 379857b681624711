package sessions

import (
	"context"
	"fmt"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
)

// renamed is a model under another name (the replay's model choice).
type renamed struct {
	lm.LM
	name string
}

func (r renamed) Name() string { return r.name }

func (r renamed) Call(ctx context.Context, req lm.Request) (lm.Response, error) {
	resp, err := r.LM.Call(ctx, req)
	resp.Model = r.name
	return resp, err
}

// A replay honours the form's strategy and model: under strategy 2 respond receives the
// outer turns (no reasoning) instead of its own calls, and the calls name the model
// the resolver gave.
func TestReplayUnderAnotherStrategyAndModel(t *testing.T) {
	ctx := context.Background()
	a, _, model, _ := newWorkbench(t)
	a.SetModelResolver(func(name string) (lm.LM, error) {
		if name != "other" {
			return nil, fmt.Errorf("unknown model %q", name)
		}
		return renamed{model, "other"}, nil
	})
	conv := mustConversation(t, a, "SupportAgent")
	for _, q := range questions[:2] {
		mustSend(t, a, conv, "main", question(q))
	}
	main := pageOf(t, a, conv, "main")
	if !main.Turns[1].Calls[1].History.Messages[0].Has("reasoning") {
		t.Fatalf("under keep, respond's own history has its reasoning: %s", py.JSON(main.Turns[1].Calls[1].History))
	}
	name, err := a.Replay(ctx, ReplayRequest{Conv: conv, Branch: "main", Strategy: 2, Model: "other"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rp := pageOf(t, a, conv, name)
	respond := rp.Turns[1].Calls[1]
	h := respond.History.Messages
	if len(h) != 1 || h[0].Has("reasoning") || h[0].String("question") != questions[0] {
		t.Errorf("respond's history under strategy 2: %s, want the outer turn", py.JSON(respond.History))
	}
	if respond.Model != "other" {
		t.Errorf("respond ran on %q, want the replay's model", respond.Model)
	}
	if _, err := a.Replay(ctx, ReplayRequest{Conv: conv, Branch: "main", Model: "nope"}, nil); err == nil {
		t.Error("a replay with an unknown model ran")
	}
}
