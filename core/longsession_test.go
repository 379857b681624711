package core

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
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
				if c.Messages.Len() < 2 || c.Completion == "" {
					t.Fatalf("call %s reached the sink with %d messages and completion %q", c.ID, c.Messages.Len(), c.Completion)
				}
			}
			kept := s.Turn(-1).Calls
			if len(kept) != 2 {
				t.Fatalf("the last turn keeps %d calls, want 2", len(kept))
			}
			for _, c := range kept {
				if got := c.Messages.Len() > 0 || c.Completion != ""; got != (mode == RecordAll) {
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

// Sessions that share turns (a fork, the line after an undo) each keep their own
// history: the shared line of messages is copied when a turn is added anywhere but at its
// end, and what callers get shares the messages without letting them write into it.
func TestSharedHistoryLines(t *testing.T) {
	ctx := ctxWith(echoLM())
	questions := func(h sig.History) []string {
		var out []string
		for _, m := range h.Messages {
			out = append(out, m.String("question"))
		}
		return out
	}
	for _, o := range []Options{{}, {MaxTurns: Int(2)}, {InitialHistory: &sig.History{Messages: []*sig.Map{sig.NewMap("question", "seed")}}}} {
		s := MustSessionify(MustPredict("question -> answer"), o)
		for i := range 3 {
			mustRun(t, ctx, s, "question", fmt.Sprint("q", i))
		}
		f := s.Fork(true)
		mustRun(t, ctx, s, "question", "s3")
		mustRun(t, ctx, f, "question", "f3")
		s.Undo(1, true)
		mustRun(t, ctx, s, "question", "s3b")
		want := map[*Session][]string{s: {"q0", "q1", "q2", "s3b"}, f: {"q0", "q1", "q2", "f3"}}
		for sess, w := range want {
			if o.MaxTurns != nil {
				w = w[len(w)-*o.MaxTurns:]
			}
			if o.InitialHistory != nil {
				w = append([]string{"seed"}, w...)
			}
			if got := questions(sess.History()); fmt.Sprint(got) != fmt.Sprint(w) {
				t.Errorf("%+v: history %v, want %v", o, got, w)
			}
		}
		// A caller appending to a returned history or turn writes into its own copy.
		h := s.History()
		_ = append(h.Messages, sig.NewMap("question", "intruder"))
		tr := s.Turn(-1)
		tr.History.Messages = append(tr.History.Messages, sig.NewMap("question", "intruder"))
		tr.Inputs.Set("question", "changed")
		if got := questions(s.History()); got[len(got)-1] != "s3b" {
			t.Errorf("%+v: a caller's append reached the session: %v", o, got)
		}
		if s.Turn(-1).Inputs.String("question") != "s3b" {
			t.Errorf("%+v: a caller's change to a returned turn reached the session", o)
		}
	}
}

// lastTurnsChat is the ChatAdapter shown only the last two history messages: a request
// of the same size at any session length, so a turn's allocations are the engine's own
// plus a constant.
type lastTurnsChat struct{ adapter.Chat }

func (a lastTurnsChat) Format(req adapter.Request) ([]lm.Message, error) {
	in := req.Inputs.Filter(func(string) bool { return true }) // shallow: the history is not copied
	for i := range in.Len() {
		if k, v := in.Entry(i); v != nil {
			if h, ok := v.(sig.History); ok && len(h.Messages) > 2 {
				in.Set(k, sig.History{Messages: h.Messages[len(h.Messages)-2:]})
			}
		}
	}
	req.Inputs = in
	return a.Chat.Format(req)
}

// A turn of a session without a window allocates as much at 3,000 turns as at 100: the
// engine shares the history instead of copying it (a copy of the messages would be
// thousands of allocations more per turn, a copy of the list 24 KB per call).
func TestTurnAllocationsDoNotGrowWithTheSession(t *testing.T) {
	for _, rec := range []RecordMode{RecordCalls, RecordAll} {
		t.Run(string(rec), func(t *testing.T) {
			type cost struct{ allocs, bytes float64 }
			measure := func(n int) cost {
				ag := supportAgent(true)
				for _, sub := range ag.Subs {
					sub.Module.(*Predict).Adapter = lastTurnsChat{}
				}
				s, err := Restore(ag, Options{Recursive: Predictors, Record: rec}, supportTurns(n))
				if err != nil {
					t.Fatal(err)
				}
				ctx := WithLM(context.Background(), instantModel{})
				in := sig.NewMap("question", "and the refund?")
				var m0, m1 runtime.MemStats
				const turns = 100
				runtime.ReadMemStats(&m0)
				for range turns {
					if _, _, err := s.Run(ctx, in); err != nil {
						t.Fatal(err)
					}
				}
				runtime.ReadMemStats(&m1)
				return cost{float64(m1.Mallocs-m0.Mallocs) / turns, float64(m1.TotalAlloc-m0.TotalAlloc) / turns}
			}
			short, long := measure(100), measure(3000)
			// Appending to the lines of messages (the session's and each child's)
			// reallocates them now and then: amortised O(1), ~900 bytes a turn over
			// these 100.
			if long.allocs > short.allocs+1 || long.bytes > short.bytes+4096 {
				t.Errorf("a turn at 3,000 turns costs %.0f allocations, %.0f bytes; at 100 turns %.0f, %.0f",
					long.allocs, long.bytes, short.allocs, short.bytes)
			}
		})
	}
}

// sentLM passes requests to a model, keeping a copy of every request's messages.
type sentLM struct {
	lm.LM
	sent [][]lm.Message
}

func (m *sentLM) Call(ctx context.Context, req lm.Request) (lm.Response, error) {
	m.sent = append(m.sent, req.Messages.Slice())
	return m.LM.Call(ctx, req)
}

// A RecordAll session records each request as runs shared with the ones before it
// (lm.MessageLog): every recorded request must still be exactly what was sent, after
// later turns, undos (the next request shares a shorter prefix) and forks.
func TestRecordedRequestsAreWhatWasSent(t *testing.T) {
	for _, o := range []Options{
		{Recursive: Predictors, Record: RecordAll},
		{Recursive: Predictors, Record: RecordAll, MaxTurns: Int(3)},
		{Recursive: Predictors, Record: RecordAll, MaxStoredTurns: Int(5)},
	} {
		t.Run(fmt.Sprintf("window=%v/stored=%v", o.MaxTurns != nil, o.MaxStoredTurns != nil), func(t *testing.T) {
			model := &sentLM{LM: echoLM()}
			ctx := ctxWith(model)
			s := MustSessionify(supportAgent(true), o)
			var calls []*trace.Call
			run := func(s *Session, i int) {
				_, turn, err := s.Run(ctx, in("question", fmt.Sprint("question ", i%4))) // texts repeat
				if err != nil {
					t.Fatal(err)
				}
				calls = append(calls, turn.Calls...)
			}
			for i := range 80 {
				run(s, i)
				if i%7 == 6 {
					s.Undo(2, true)
				}
				if i == 40 {
					f := s.Fork(true)
					f.Undo(1, true)
					run(f, i) // a fork's requests beside the session's
				}
			}
			if len(calls) != len(model.sent) {
				t.Fatalf("%d calls recorded, %d requests sent", len(calls), len(model.sent))
			}
			for i, c := range calls {
				if got := c.Messages.Slice(); !slices.Equal(got, model.sent[i]) {
					t.Fatalf("call %d (%s) recorded %d messages, sent %d:\n%v\n%v", i, c.Path, len(got), len(model.sent[i]), got, model.sent[i])
				}
			}
		})
	}
}
