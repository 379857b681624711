package sessions

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/recognize"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/storage/capture"
)

// recordedCall is a call as the proxy records a request written by DSPy's ChatAdapter
// for a dspy-session predictor (history field appended).
func recordedCall(t *testing.T, question, intent string, history sig.History, at time.Time) *trace.Call {
	t.Helper()
	s := sig.New("ClassifyIntent", "Classify the customer's intent.", []sig.Field{{Name: "question", Type: sig.TStr}},
		[]sig.Field{{Name: "intent", Type: sig.TStr, Desc: "One of: billing, technical, general"}}).
		AppendInput(sig.Field{Name: "history", Type: sig.THistory, Desc: "Conversation history"})
	msgs, err := adapter.Chat{}.Format(adapter.Request{Signature: s, Inputs: sig.NewMap("question", question, "history", history)})
	if err != nil {
		t.Fatal(err)
	}
	r := recognize.Parse(msgs)
	completion := adapter.AssistantContent(s, sig.NewMap("intent", intent), nil)
	out, err := r.Outputs(completion)
	if err != nil || !r.Exact {
		t.Fatalf("recognising the fixture: %v %s", err, r.Mismatch)
	}
	return &trace.Call{Path: "question -> intent", PredictorType: "Predict", Adapter: "chat", Messages: lm.MessagesOf(msgs),
		Inputs: r.Inputs, History: r.History, Outputs: out, Completion: completion, Started: at, Latency: time.Millisecond,
		Recovered: trace.RecoveredExact}
}

func TestPreviewRecordedCalls(t *testing.T) {
	ctx := context.Background()
	a, st, _, _ := newWorkbench(t)
	rec, err := capture.New(ctx, capture.Options{Store: st, IdleGap: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	first := recordedCall(t, "I can't log in", "technical", sig.History{}, t0)
	second := recordedCall(t, "The reset email never arrives", "technical",
		sig.History{Messages: []*sig.Map{sig.NewMap("question", "I can't log in", "intent", "technical")}}, t0.Add(time.Minute))
	inexact := recordedCall(t, "refund?", "billing", sig.History{}, t0.Add(2*time.Minute))
	// A type sessionbench cannot express (an Enum): recognised, not byte for byte.
	msgs := inexact.Messages.Slice()
	msgs[0].Content = strings.Replace(msgs[0].Content, "`intent` (str)", "`intent` (Intent)", 1)
	inexact.Messages = lm.MessagesOf(msgs)
	inexact.Recovered = trace.RecoveredInexact
	plain := &trace.Call{Path: "chat", PredictorType: "LM", Messages: lm.MessagesOf([]lm.Message{{Role: "user", Content: "hi"}}), Inputs: sig.NewMap("user", "hi"),
		Outputs: sig.NewMap("assistant", "hello"), Completion: "hello", Started: t0.Add(3 * time.Minute), Recovered: trace.RecoveredNone}
	for _, c := range []*trace.Call{first, second, inexact, plain} { // one turn each: the calls are minutes apart
		if err := rec.Begin("", "", c.Started)(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	convs, _ := st.ListConversations(ctx)
	conv := convs[0].ID
	page, err := st.LoadBranchRange(ctx, conv, storage.MainBranch, 0, 10)
	if err != nil || len(page.Keys) != 4 {
		t.Fatalf("turns %v %v", page, err)
	}
	preview := func(turn, strategy int) Rendering {
		t.Helper()
		r, err := a.Preview(ctx, PreviewRequest{Conv: conv, Branch: storage.MainBranch, Turn: page.Keys[turn], Strategy: strategy})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	messages := func(r Rendering) []lm.Message {
		out := make([]lm.Message, len(r.Messages))
		for i, m := range r.Messages {
			out[i] = m.Message
		}
		return out
	}
	// Actual: the request as sent; keep (1) re-renders it from the history the call saw.
	for _, s := range []int{0, 1} {
		if r := preview(1, s); r.Err != "" || recognize.Compare(second.Messages.Slice(), messages(r)) != "" || r.Tokens == 0 {
			t.Errorf("strategy %d: %s %s", s, r.Err, recognize.Compare(second.Messages.Slice(), messages(r)))
		}
	}
	// Inherit strategies use the earlier turns; every strategy renders.
	for s := 2; s <= 5; s++ {
		r := preview(1, s)
		if r.Err != "" || len(r.Messages) == 0 {
			t.Fatalf("strategy %d: %q", s, r.Err)
		}
		all := ""
		for _, m := range r.Messages {
			all += m.Content
		}
		if !strings.Contains(all, "I can't log in") || !strings.Contains(all, "The reset email never arrives") {
			t.Errorf("strategy %d does not show the outer history and the question:\n%s", s, all)
		}
	}
	// Not byte for byte: said so on the actual request.
	if r := preview(2, 0); len(r.Warnings) == 0 || !strings.Contains(r.Warnings[len(r.Warnings)-1].Text, "do not format back to this request byte for byte") {
		t.Errorf("inexact call warnings %v", r.Warnings)
	}
	if r := preview(1, 0); len(r.Warnings) != 0 {
		t.Errorf("exact call warnings %v", r.Warnings)
	}
	// No known format: shown as sent, no strategies.
	if r := preview(3, 0); r.Err != "" || len(r.Messages) != 1 {
		t.Errorf("plain call actual: %+v", r)
	}
	if r := preview(3, 2); !strings.Contains(r.Err, "no known format") {
		t.Errorf("plain call under a strategy: %q", r.Err)
	}
	// A recorded conversation takes no turns here.
	_, err = a.Send(ctx, SendRequest{Conv: conv, Branch: storage.MainBranch, Inputs: sig.NewMap("question", "x")}, make(chan Event, 64))
	if err == nil || !strings.Contains(err.Error(), "recorded by `sessionbench proxy`") {
		t.Errorf("send on a recorded conversation: %v", err)
	}
}

// A turn a proxy left open when it died is not offered for resuming: no agent here can
// run it (capture.Recover ends it at the next proxy or workbench start).
func TestPendingLeavesRecordedTurnsOut(t *testing.T) {
	ctx := context.Background()
	a, _, _, db := newWorkbench(t)
	dying, err := storage.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := capture.New(ctx, capture.Options{Store: dying, IdleGap: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	c := recordedCall(t, "I can't log in", "technical", sig.History{}, time.Now())
	if err := rec.Begin("", "", c.Started)(ctx, c); err != nil {
		t.Fatal(err)
	}
	dying.Close() // the proxy is gone: its turn is left in its journal, as a killed one
	ps, err := a.store.PendingTurns(ctx)
	for deadline := time.Now().Add(time.Minute); len(ps) == 0 || ps[0].Status != trace.StatusInterrupted; {
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("the dead proxy's turn: %+v %v", ps, err)
		}
		time.Sleep(time.Millisecond)
		ps, err = a.store.PendingTurns(ctx)
	}
	got, err := a.Pending(ctx, "")
	if err != nil || len(got) != 0 {
		t.Fatalf("offered for resuming: %+v (%v)", got, err)
	}
}
