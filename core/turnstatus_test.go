package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// logSink records what the engine hands a sink, in order.
type logSink struct {
	mu      sync.Mutex
	calls   []*trace.Call // as recorded, each the moment it ended
	aborted *trace.Turn
	commits int
	fail    error // what CommitTurn returns, when set
}

func (s *logSink) BeginTurn(context.Context, *sig.Map) (string, error) { return "t", nil }
func (s *logSink) RecordCall(_ context.Context, _, _ string, c *trace.Call) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c.Clone())
	return nil
}
func (s *logSink) CommitTurn(context.Context, string, *trace.Turn) error {
	if s.fail != nil {
		return s.fail
	}
	s.commits++
	return nil
}
func (s *logSink) AbortTurn(_ context.Context, _ string, t *trace.Turn) error {
	s.aborted = t
	return nil
}

// failingTwoStep asks a, then b with a's answer: the shape of a SupportAgent turn.
func failingTwoStep(b Module) (*Program, *Predict) {
	a := &Predict{Signature: sig.New("A", "", []sig.Field{{Name: "q"}}, []sig.Field{{Name: "x"}})}
	return &Program{Name: "TwoStep", Subs: []Sub{{"a", a}, {"b", b}}, Fn: func(ctx context.Context, in *sig.Map) (*Prediction, error) {
		p, err := a.Forward(ctx, in)
		if err != nil {
			return nil, err
		}
		return Call(ctx, b, sig.NewMap("x", p.String("x")))
	}}, a
}

// TestTurnThatDoesNotComplete: a turn whose second call fails, is cancelled or is
// interrupted stays out of the session (history, later turns) but reaches the sink and
// the caller with its status, its error and both calls: the answered one and the failing
// one with its exact request and raw completion. A failing inner call of a nested
// session reaches the sink before the error goes up, like any other call.
func TestTurnThatDoesNotComplete(t *testing.T) {
	bPredict := &Predict{Signature: sig.New("B", "", []sig.Field{{Name: "x"}}, []sig.Field{{Name: "y"}})}
	cases := []struct {
		name   string
		b      Module // the second step
		second func(ctx context.Context, cancel context.CancelCauseFunc) (string, error)
		status trace.Status
		path   string // of the failing call
	}{
		{"parse failure", bPredict, func(context.Context, context.CancelCauseFunc) (string, error) { return "no fields at all", nil },
			trace.StatusFailed, "b"},
		{"model error", bPredict, func(context.Context, context.CancelCauseFunc) (string, error) { return "", errors.New("HTTP 502") },
			trace.StatusFailed, "b"},
		{"cancelled", bPredict, func(ctx context.Context, cancel context.CancelCauseFunc) (string, error) {
			cancel(nil)
			return "", ctx.Err()
		}, trace.StatusCancelled, "b"},
		{"interrupted", bPredict, func(ctx context.Context, cancel context.CancelCauseFunc) (string, error) {
			cancel(fmt.Errorf("SIGTERM: %w", trace.ErrInterrupted))
			return "", ctx.Err()
		}, trace.StatusInterrupted, "b"},
		{"nested session", MustSessionify(&Predict{Signature: bPredict.Signature}, Options{Name: "inner"}),
			func(context.Context, context.CancelCauseFunc) (string, error) { return "", errors.New("HTTP 500") }, trace.StatusFailed, "b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prog, _ := failingTwoStep(tc.b)
			sink := &logSink{}
			s := MustSessionify(prog, Options{Recursive: Predictors, Sink: sink})
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			n := 0
			model := &lm.Scripted{Func: func(req lm.Request) (string, bool, error) {
				n++
				if n == 1 {
					return "[[ ## x ## ]]\nfirst\n\n[[ ## completed ## ]]", true, nil
				}
				text, err := tc.second(ctx, cancel)
				return text, true, err
			}}
			_, turn, err := s.Run(WithLM(ctx, model), sig.NewMap("q", "hi"))
			if err == nil || turn == nil {
				t.Fatalf("Run = %v, %v; want the kept turn and an error", turn, err)
			}
			if turn.Status != tc.status || turn.Error != err.Error() || turn.Completed() || turn.Index != 0 || turn.Inputs.String("q") != "hi" {
				t.Errorf("turn: status %s error %q index %d", turn.Status, turn.Error, turn.Index)
			}
			failed := trace.FailedCall(turn.Calls)
			if len(turn.Calls) != 2 || turn.Calls[0].Error != "" || failed == nil || failed.Path != tc.path || failed.Messages.Len() == 0 {
				t.Fatalf("calls: %d, failed %+v", len(turn.Calls), failed)
			}
			if tc.name == "parse failure" && failed.Completion == "" {
				t.Errorf("the raw completion of the failing call is lost")
			}
			if sink.commits != 0 || sink.aborted == nil || sink.aborted.Status != tc.status || len(sink.aborted.Calls) != 2 {
				t.Fatalf("sink: %d commits, aborted %+v", sink.commits, sink.aborted)
			}
			recorded := map[string]bool{}
			for _, c := range sink.calls {
				recorded[c.Path+"|"+c.Error] = c.Error != ""
			}
			if len(sink.calls) < 2 || !recorded[failed.Path+"|"+failed.Error] {
				t.Errorf("the failing call did not reach the sink before the error: %v", recorded)
			}
			if s.Len() != 0 || len(s.History().Messages) != 0 {
				t.Errorf("a %s turn entered the session: %d turns", tc.status, s.Len())
			}
		})
	}
}

// TestCommitThatFails: a turn whose commit fails (the branch moved, the disk is full)
// was ended by the sink (trace.Sink), so the engine aborts nothing; it stays out of the
// session like any turn that did not complete, and reaches the caller as failed, or
// interrupted when the sink could only leave it resumable. The next turn follows the
// last one committed.
func TestCommitThatFails(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		status trace.Status
	}{
		{"conflict", errors.New("branch moved while the turn was in flight"), trace.StatusFailed},
		{"not writable", fmt.Errorf("disk full; kept as %w by the next reader", trace.ErrInterrupted), trace.StatusInterrupted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prog, _ := failingTwoStep(&Predict{Signature: sig.New("B", "", []sig.Field{{Name: "x"}}, []sig.Field{{Name: "y"}})})
			sink := &logSink{}
			s := MustSessionify(prog, Options{Recursive: Predictors, Sink: sink})
			model := &lm.Scripted{Func: func(req lm.Request) (string, bool, error) {
				if req.Meta.Path == "a" {
					return "[[ ## x ## ]]\nfirst\n\n[[ ## completed ## ]]", true, nil
				}
				return "[[ ## y ## ]]\nsecond\n\n[[ ## completed ## ]]", true, nil
			}}
			ctx := WithLM(context.Background(), model)
			if _, _, err := s.Run(ctx, sig.NewMap("q", "one")); err != nil {
				t.Fatal(err)
			}
			sink.fail = tc.err
			p, turn, err := s.Run(ctx, sig.NewMap("q", "two"))
			if !errors.Is(err, tc.err) || p != nil || turn == nil {
				t.Fatalf("Run = %v, %v, %v; want no prediction, the turn and the commit's error", p, turn, err)
			}
			if turn.Status != tc.status || turn.Error != err.Error() || turn.Index != 1 || len(turn.Calls) != 2 {
				t.Errorf("turn: status %s error %q index %d, %d calls", turn.Status, turn.Error, turn.Index, len(turn.Calls))
			}
			if sink.aborted != nil {
				t.Errorf("the engine aborted a turn its sink had ended: %+v", sink.aborted)
			}
			if s.Len() != 1 || len(s.History().Messages) != 1 {
				t.Fatalf("the turn whose commit failed is in the session: %d turns, %d history entries", s.Len(), len(s.History().Messages))
			}
			sink.fail = nil
			_, turn, err = s.Run(ctx, sig.NewMap("q", "three"))
			if err != nil || turn.Index != 1 || sink.commits != 2 || s.Len() != 2 {
				t.Fatalf("next turn: %v, index %d, %d commits, %d turns", err, turn.Index, sink.commits, s.Len())
			}
		})
	}
}

func TestStatuses(t *testing.T) {
	cases := []struct {
		parse func(string) (trace.Status, error)
		in    string
		ok    bool
	}{
		{trace.ParseConversationStatus, "in_progress", true},
		{trace.ParseConversationStatus, "needs_human", true},
		{trace.ParseConversationStatus, "running", false},
		{trace.ParseConversationStatus, "interrupted", false},
		{trace.ParseTurnStatus, "running", true},
		{trace.ParseTurnStatus, "interrupted", true},
		{trace.ParseTurnStatus, "failed", true},
		{trace.ParseTurnStatus, "needs_human", false},
		{trace.ParseTurnStatus, "", false},
	}
	for _, tc := range cases {
		st, err := tc.parse(tc.in)
		if (err == nil) != tc.ok || (tc.ok && string(st) != tc.in) {
			t.Errorf("parse %q: %q %v, want ok=%v", tc.in, st, err, tc.ok)
		}
	}
	moves := []struct {
		from, to trace.Status
		ok       bool
	}{
		{trace.StatusInProgress, trace.StatusNeedsHuman, true},
		{trace.StatusInProgress, trace.StatusCancelled, true},
		{trace.StatusCompleted, trace.StatusInProgress, false},
		{trace.StatusFailed, trace.StatusFailed, true},
	}
	for _, m := range moves {
		if trace.CanTransition(m.from, m.to) != m.ok {
			t.Errorf("%s -> %s: want %v", m.from, m.to, m.ok)
		}
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	if st := trace.EndStatus(ctx, nil); st != trace.StatusCompleted {
		t.Errorf("no error: %s", st)
	}
	if st := trace.EndStatus(ctx, errors.New("x")); st != trace.StatusFailed {
		t.Errorf("error: %s", st)
	}
	cancel(fmt.Errorf("signal: %w", trace.ErrInterrupted))
	if st := trace.EndStatus(ctx, ctx.Err()); st != trace.StatusInterrupted {
		t.Errorf("interrupted: %s", st)
	}
}

func TestFailedCall(t *testing.T) {
	ok := &trace.Call{ID: "c1"}
	early := &trace.Call{ID: "c2", Error: "survived"}
	leaf := &trace.Call{ID: "c3.c4", Error: "boom"}
	mod := &trace.Call{ID: "c3", Error: "boom", Children: []*trace.Call{{ID: "c3.c5"}, leaf}}
	cases := []struct {
		calls []*trace.Call
		want  *trace.Call
	}{
		{nil, nil},
		{[]*trace.Call{ok}, nil},
		{[]*trace.Call{ok, early}, early},
		{[]*trace.Call{ok, early, mod}, leaf},
		{[]*trace.Call{{ID: "m", Children: []*trace.Call{leaf}}}, leaf},
	}
	for i, tc := range cases {
		if got := trace.FailedCall(tc.calls); got != tc.want {
			t.Errorf("case %d: %v, want %v", i, got, tc.want)
		}
	}
}
