package sessions

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/trace"
)

// failOn answers like inner except for predictor path, whose requests fail.
type failOn struct {
	inner lm.LM
	path  string
}

func (f *failOn) Name() string { return f.inner.Name() }
func (f *failOn) Call(ctx context.Context, req lm.Request) (lm.Response, error) {
	if req.Meta.Path == f.path {
		return lm.Response{}, errors.New("HTTP 502: bad gateway\nupstream said more")
	}
	return f.inner.Call(ctx, req)
}

// TestKeptTurnBesideTheBranch: a failed Send keeps its turn beside the branch, where it
// happened, with its failing call; the wire pane can render that call as sent and under
// every strategy; a retry pays only for the failed call; delete removes the kept turn.
func TestKeptTurnBesideTheBranch(t *testing.T) {
	ctx := context.Background()
	a, _, model, _ := newWorkbench(t)
	conv := mustConversation(t, a, "SupportAgent")
	mustSend(t, a, conv, "main", question(questions[0]))
	good := a.model
	a.model = &failOn{inner: good, path: "respond"}
	_, err := a.Send(ctx, SendRequest{Conv: conv, Branch: "main", Inputs: question(questions[1])}, nil)
	var kt *KeptTurnError
	if !errors.As(err, &kt) || kt.Turn.Status != trace.StatusFailed || len(kt.Turn.Calls) != 2 {
		t.Fatalf("failed send: %v", err)
	}
	kept, err := a.KeptTurns(ctx, conv, "main")
	if err != nil || len(kept) != 1 {
		t.Fatalf("kept: %v %+v", err, kept)
	}
	k := kept[0]
	if k.Key != kt.Key || k.Index != 1 || k.Status != trace.StatusFailed || !k.Retryable() || k.FailedCall == nil ||
		k.FailedCall.Path != "respond" || strings.Contains(k.Reason, "\n") || !strings.Contains(k.Reason, "HTTP 502: bad gateway") {
		t.Fatalf("kept turn: %+v", k)
	}
	for s := 0; s <= 5; s++ {
		r, err := a.Preview(ctx, PreviewRequest{Conv: conv, Branch: "main", Turn: k.Key, Call: k.FailedCall.ID, Strategy: s})
		if err != nil || r.Err != "" || len(r.Messages) < 2 || r.Path != "respond" {
			t.Fatalf("strategy %d of the failing call: %v %+v", s, err, r)
		}
		if last := r.Messages[len(r.Messages)-1].Content; !strings.Contains(last, questions[1]) {
			t.Errorf("strategy %d: the failing request lacks its input:\n%s", s, last)
		}
		if s == 0 && r.Messages[len(r.Messages)-1].Message != k.FailedCall.Messages.At(k.FailedCall.Messages.Len()-1) {
			t.Errorf("actual rendering is not what was sent")
		}
	}

	a.model = good
	before := model.n.Load()
	_, tr, err := a.Retry(ctx, RetryRequest{Key: k.Key}, nil)
	if err != nil || tr.Status != trace.StatusCompleted {
		t.Fatalf("retry: %v", err)
	}
	if paid := model.n.Load() - before; paid != 1 {
		t.Errorf("the retry paid %d requests, want 1 (classify is replayed)", paid)
	}
	if pg := pageOf(t, a, conv, "main"); pg.Total != 2 {
		t.Errorf("branch after the retry: %d turns", pg.Total)
	}
	if kept, _ = a.KeptTurns(ctx, conv, "main"); len(kept) != 1 || kept[0].Key != k.Key {
		t.Errorf("the failed turn is no longer beside the branch: %+v", kept)
	}
	// Undone past its parent, the branch no longer shows it; deleted, it is gone.
	if _, err := a.Undo(ctx, conv, "main", 2); err != nil {
		t.Fatal(err)
	}
	if kept, _ = a.KeptTurns(ctx, conv, "main"); len(kept) != 0 {
		t.Errorf("kept turns after undoing their parent: %+v", kept)
	}
	if _, err := a.Redo(ctx, conv, "main", 2); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteTurn(ctx, k.Key); err != nil {
		t.Fatal(err)
	}
	if kept, _ = a.KeptTurns(ctx, conv, "main"); len(kept) != 0 {
		t.Errorf("kept turns after delete: %+v", kept)
	}
}
