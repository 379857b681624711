package core

import (
	"fmt"
	"testing"

	"github.com/sessionbench/sessionbench/core/py"
)

// With record mode "calls" the sink still receives every exact request and completion;
// only what the session keeps in memory goes without them.
func TestRecordCallsSinkGetsRequests(t *testing.T) {
	for _, mode := range []RecordMode{RecordCalls, RecordAll} {
		t.Run(string(mode), func(t *testing.T) {
			sink := &logSink{}
			s := MustSessionify(supportAgent(true), Options{Recursive: Predictors, Record: mode, Sink: sink})
			ctx := ctxWith(echoLM())
			for i := range 3 {
				mustRun(t, ctx, s, "question", fmt.Sprint("q", i))
			}
			if len(sink.calls) != 6 {
				t.Fatalf("%d calls reached the sink, want 6", len(sink.calls))
			}
			for _, c := range sink.calls {
				if len(c.Messages) < 2 || c.Completion == "" {
					t.Fatalf("call %s reached the sink with %d messages and completion %q", c.ID, len(c.Messages), c.Completion)
				}
			}
			kept := s.Turn(-1).Calls
			if len(kept) != 2 {
				t.Fatalf("the last turn keeps %d calls, want 2", len(kept))
			}
			for _, c := range kept {
				if got := len(c.Messages) > 0 || c.Completion != ""; got != (mode == RecordAll) {
					t.Errorf("%s: the session keeps the request of call %s: %v", mode, c.ID, got)
				}
			}
		})
	}
}

// HistoryAt is each stored turn's history, as Turn gives it, under windows and limits.
func TestHistoryAt(t *testing.T) {
	for _, o := range []Options{{}, {MaxTurns: Int(2)}, {MaxStoredTurns: Int(3)}} {
		s := MustSessionify(MustPredict("question -> answer"), o)
		ctx := ctxWith(echoLM())
		for i := range 6 {
			mustRun(t, ctx, s, "question", fmt.Sprint("q", i))
		}
		for i := -s.Len() - 1; i <= s.Len(); i++ {
			h, ok := s.HistoryAt(i)
			want := s.Turn(i)
			if ok != (want != nil) || want != nil && (!py.Same(h, want.History) || len(h.Messages) != len(want.History.Messages)) {
				t.Errorf("%+v: HistoryAt(%d) = %v, %v; Turn(%d).History = %v", o, i, h, ok, i, want)
			}
		}
	}
}
