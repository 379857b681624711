package sessions

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/demo"
	"github.com/sessionbench/sessionbench/storage"
)

// crashSink is the store's sink as a process stopped mid-turn by a signal leaves it:
// the failing turn is recorded as interrupted (ownerless, resumable), whatever the
// engine says, with the calls that finished before the "signal".
type crashSink struct{ *storage.BranchSink }

func (c crashSink) AbortTurn(ctx context.Context, key string, t *trace.Turn) error {
	t.Status = trace.StatusInterrupted
	return c.BranchSink.AbortTurn(ctx, key, t)
}

// dieAfter answers n requests, then fails every later one, like a process that dies.
type dieAfter struct {
	inner lm.LM
	n     int
}

func (d *dieAfter) Name() string { return d.inner.Name() }
func (d *dieAfter) Call(ctx context.Context, req lm.Request) (lm.Response, error) {
	if d.n == 0 {
		return lm.Response{}, errors.New("killed")
	}
	d.n--
	return d.inner.Call(ctx, req)
}

// interrupt runs a SupportAgent turn on branch through the engine and the real sink,
// dying after the first inner call (classify) was committed.
func interrupt(t *testing.T, st *storage.Store, conv, branch string, inputs *sig.Map) {
	t.Helper()
	ctx := context.Background()
	ag, _ := demo.Lookup("SupportAgent")
	mod, opts, err := ag.Build()
	if err != nil {
		t.Fatal(err)
	}
	turns, err := st.LoadBranch(ctx, conv, branch)
	if err != nil {
		t.Fatal(err)
	}
	opts.Record = core.RecordAll
	opts.Sink = crashSink{st.Sink(conv, branch)}
	s, err := core.Restore(mod, opts, turns)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Run(core.WithLM(ctx, &dieAfter{inner: demoModel(0), n: 1}), inputs); err == nil {
		t.Fatal("the interrupted turn succeeded")
	}
}

func onlyPending(t *testing.T, a *Service, conv string) PendingInfo {
	t.Helper()
	ps, err := a.Pending(context.Background(), conv)
	if err != nil || len(ps) != 1 {
		t.Fatalf("pending %+v, %v; want one", ps, err)
	}
	return ps[0]
}

func TestResumeReplaysAnsweredCalls(t *testing.T) {
	ctx := context.Background()
	a, st, model, _ := newWorkbench(t)
	conv := mustConversation(t, a, "SupportAgent")
	mustSend(t, a, conv, "main", question(questions[0]))
	interrupt(t, st, conv, "main", question(questions[1]))

	p := onlyPending(t, a, conv)
	if p.Branch != "main" || p.Index != 1 || p.CallsDone != 1 || p.CallsExpected != 2 || p.Stale ||
		p.Inputs.String("question") != questions[1] || !strings.HasPrefix(p.ConvTitle, "SupportAgent") {
		t.Fatalf("pending %+v", p)
	}
	if other, _ := a.Pending(ctx, "another-conversation"); len(other) != 0 {
		t.Errorf("pending filtered by another conversation: %+v", other)
	}
	stored, err := st.PendingTurn(ctx, p.TurnKey)
	// classify answered; respond failed when the process "died" (recorded with its error)
	if err != nil || len(stored.Calls) == 0 || stored.Calls[0].Path != "classify" || stored.Calls[0].Error != "" {
		t.Fatalf("stored pending turn: %+v, %v", stored, err)
	}

	before := model.n.Load()
	ev := collect()
	tr, err := a.Resume(ctx, p.TurnKey, ev.ch)
	all := ev.stop()
	if err != nil {
		t.Fatal(err)
	}
	if paid := model.n.Load() - before; paid != 1 {
		t.Errorf("the model was asked %d times on resume, want 1 (classify is replayed from storage)", paid)
	}
	if tr.Index != 1 || tr.Inputs.String("question") != questions[1] || tr.Outputs.String("reply") == "" {
		t.Errorf("resumed turn %d: %v -> %v", tr.Index, tr.Inputs, tr.Outputs)
	}
	if last := all[len(all)-1]; last.Kind != EventTurn {
		t.Errorf("last event %+v, want the turn", last)
	}
	pg := pageOf(t, a, conv, "main")
	if pg.Total != 2 || pg.IDs[1] != p.TurnKey {
		t.Fatalf("branch %v after resume, want the pending turn %s committed as turn 2", pg.IDs, p.TurnKey)
	}
	calls := leafCalls(pg.Turns[1])
	if len(calls) != 2 || calls[0].Completion != stored.Calls[0].Completion || calls[1].Path != "respond" {
		t.Errorf("committed calls %+v", calls)
	}
	if ps, _ := a.Pending(ctx, ""); len(ps) != 0 {
		t.Errorf("still pending after resume: %+v", ps)
	}
	// The resumed turn is a normal turn: the next one sees it in its history.
	if next := mustSend(t, a, conv, "main", question(questions[2])); len(next.History.Messages) != 2 {
		t.Errorf("next turn sees %d history entries, want 2", len(next.History.Messages))
	}
}

func TestDiscardAndStale(t *testing.T) {
	ctx := context.Background()
	a, st, _, _ := newWorkbench(t)
	conv := mustConversation(t, a, "SupportAgent")
	mustSend(t, a, conv, "main", question(questions[0]))

	interrupt(t, st, conv, "main", question(questions[1]))
	p := onlyPending(t, a, conv)
	if err := a.Discard(ctx, p.TurnKey); err != nil {
		t.Fatal(err)
	}
	if ps, _ := a.Pending(ctx, conv); len(ps) != 0 {
		t.Errorf("pending after discard: %+v", ps)
	}
	if pg := pageOf(t, a, conv, "main"); pg.Total != 1 {
		t.Errorf("discard changed the branch: %d turns", pg.Total)
	}
	if err := a.Discard(ctx, p.TurnKey); err == nil {
		t.Error("discarding twice succeeded")
	}
	if _, err := a.Resume(ctx, p.TurnKey, nil); err == nil {
		t.Error("resuming a discarded turn succeeded")
	}

	// The branch moves under a pending turn: it is stale, can only be discarded.
	interrupt(t, st, conv, "main", question(questions[1]))
	if _, err := a.Undo(ctx, conv, "main", 1); err != nil {
		t.Fatal(err)
	}
	p = onlyPending(t, a, conv)
	if !p.Stale || p.CallsExpected != 0 {
		t.Errorf("pending after the tip moved: %+v, want stale", p)
	}
	if _, err := a.Resume(ctx, p.TurnKey, nil); err == nil || !strings.Contains(err.Error(), `branch "main" moved on since turn`) {
		t.Errorf("resume of a stale turn: %v", err)
	}
	if err := a.Discard(ctx, p.TurnKey); err != nil {
		t.Fatal(err)
	}

	// A new turn on the branch supersedes an interrupted one.
	interrupt(t, st, conv, "main", question(questions[1]))
	mustSend(t, a, conv, "main", question(questions[2]))
	if ps, _ := a.Pending(ctx, ""); len(ps) != 0 {
		t.Errorf("pending after a new turn: %+v", ps)
	}
}
