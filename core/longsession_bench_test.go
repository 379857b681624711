package core

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// instantModel answers every request at once (the time of a call is the engine's).
type instantModel struct{}

func (instantModel) Name() string { return "instant" }
func (instantModel) Call(_ context.Context, req lm.Request) (lm.Response, error) {
	var kv []any
	for _, f := range req.Meta.Signature.Outputs {
		kv = append(kv, f.Name, "technical")
	}
	return lm.Response{Text: chatAnswer(kv...), Tries: []lm.Try{{N: 1}}}, nil
}

// timedChat is an adapter (the ChatAdapter, or one that wraps it) timing how long
// formatting takes: the request's bytes, which grow with an unwindowed history as they
// must.
type timedChat struct {
	adapter.Adapter
	ns *atomic.Int64
}

func (a timedChat) Format(req adapter.Request) ([]lm.Message, error) {
	t0 := time.Now()
	msgs, err := a.Adapter.Format(req)
	a.ns.Add(int64(time.Since(t0)))
	return msgs, err
}

// supportTurns are n recorded SupportAgent turns (classify, respond), each call's history
// every earlier call of its predictor, sharing one array as storage's loaded lists do.
func supportTurns(n int) []*trace.Turn {
	at := time.Date(2025, 1, 15, 10, 0, 0, 0, time.UTC)
	var cl, re []*sig.Map
	out := make([]*trace.Turn, n)
	for i := range out {
		q := fmt.Sprintf("question %d: why was I charged twice?", i)
		r := fmt.Sprintf("reply %d: the second charge is a pending authorisation.", i)
		c1 := &trace.Call{ID: "c1", Path: "classify", PredictorType: "Predict", Adapter: "chat", Inputs: sig.NewMap("question", q),
			Outputs: sig.NewMap("intent", "billing"), History: sig.History{Messages: cl[:len(cl):len(cl)]}, Started: at}
		c2 := &trace.Call{ID: "c2", Path: "respond", PredictorType: "Predict", Adapter: "chat", Inputs: sig.NewMap("question", q, "intent", "billing"),
			Outputs: sig.NewMap("reply", r), History: sig.History{Messages: re[:len(re):len(re)]}, Started: at}
		cl = append(cl, sig.NewMap("question", q, "intent", "billing"))
		re = append(re, sig.NewMap("question", q, "intent", "billing", "reply", r))
		out[i] = &trace.Turn{Index: i, Inputs: sig.NewMap("question", q), Outputs: sig.NewMap("reply", r, "intent", "billing"),
			Calls: []*trace.Call{c1, c2}, Started: at, Ended: at, Status: trace.StatusCompleted}
	}
	return out
}

// BenchmarkEngineTurn is one SupportAgent turn of a session already holding 100, 1,000
// or 10,000 turns (restored), with no window and with a window of 4 turns, recording
// every call (the library's default for a recursive session: requests kept) and calls
// only (what the workbench keeps: the sink has the requests). The model answers at once.
// format-ns/op is the ChatAdapter producing the two requests; overhead-ns/op is the rest
// of the turn: the engine's own work, which must not grow with the session, and the cost
// that producing large requests puts on it (BenchmarkEngineTurnFixedRequest tells them
// apart).
func BenchmarkEngineTurn(b *testing.B) {
	for _, rec := range []RecordMode{RecordAll, RecordCalls} {
		for _, window := range []int{0, 4} {
			for _, n := range []int{100, 1000, 10000} {
				b.Run(fmt.Sprintf("record=%s/window=%d/turns=%d", rec, window, n), func(b *testing.B) {
					benchEngineTurn(b, adapter.Chat{}, rec, window, n)
				})
			}
		}
	}
}

// BenchmarkEngineTurnFixedRequest is BenchmarkEngineTurn without a window, the
// ChatAdapter shown only the last two history messages: a request of the same size at
// any length, the engine still holding and handing on the whole history. Its
// overhead-ns/op is the engine's own work, flat; what BenchmarkEngineTurn's adds at
// 10,000 turns is what formatting the two requests costs the rest of the turn: the
// collection of its garbage, now their two message lists (2 MB; each history entry's
// text is rendered once and shared by every request, sig.Rendering).
func BenchmarkEngineTurnFixedRequest(b *testing.B) {
	for _, rec := range []RecordMode{RecordAll, RecordCalls} {
		for _, n := range []int{100, 1000, 10000} {
			b.Run(fmt.Sprintf("record=%s/window=0/turns=%d", rec, n), func(b *testing.B) {
				benchEngineTurn(b, lastTurnsChat{}, rec, 0, n)
			})
		}
	}
}

// benchEngineTurn measures SupportAgent turns on a session restored with n turns, the
// predictors formatting with ad.
func benchEngineTurn(b *testing.B, ad adapter.Adapter, rec RecordMode, window, n int) {
	var ns atomic.Int64
	ag := supportAgent(true)
	for _, sub := range ag.Subs {
		sub.Module.(*Predict).Adapter = timedChat{Adapter: ad, ns: &ns}
	}
	o := Options{Recursive: Predictors, Record: rec}
	if window > 0 {
		o.MaxTurns = Int(window)
	}
	s, err := Restore(ag, o, supportTurns(n))
	if err != nil {
		b.Fatal(err)
	}
	ctx := WithLM(context.Background(), instantModel{})
	// The garbage of restoring is the setup's: collected before the timer starts, not
	// by the first turns measured.
	runtime.GC()
	b.ReportAllocs()
	ns.Store(0)
	i := 0
	for b.Loop() {
		i++
		if _, err := s.Forward(ctx, sig.NewMap("question", fmt.Sprintf("next question %d?", i))); err != nil {
			b.Fatal(err)
		}
	}
	// The time ns/op divides (the loop's), not a clock around the loop, which also
	// holds the timer's start and stop (each stops the world to read the memory
	// statistics, waiting for a collection under way).
	b.ReportMetric(float64(ns.Load())/float64(i), "format-ns/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds()-ns.Load())/float64(i), "overhead-ns/op")
}

// BenchmarkEngineMemory runs 200 turns on a session of 1,000 and of 5,000 turns, with
// no window and a window of 4, and reports the heap it keeps per turn, with the returned
// turns dropped and kept by the caller: with the history shared, and a recorded request
// sharing the runs of the one before it (lm.MessageLog), a turn costs the same whatever
// the session's length.
func BenchmarkEngineMemory(b *testing.B) {
	for _, rec := range []RecordMode{RecordAll, RecordCalls} {
		for _, keep := range []bool{false, true} {
			for _, window := range []int{0, 4} {
				for _, n := range []int{1000, 5000} {
					b.Run(fmt.Sprintf("record=%s/keep-returned=%v/window=%d/turns=%d", rec, keep, window, n), func(b *testing.B) {
						for b.Loop() {
							b.ReportMetric(engineMemory(b, rec, keep, window, n), "KB/turn")
						}
					})
				}
			}
		}
	}
}

// engineMemory is the heap kept per turn over 200 turns of a session restored with n,
// under a window of that many turns (0: none),
// after 20 turns that pay what a restored session builds once (the first request's
// log of messages, the history's array grown once more).
func engineMemory(b *testing.B, rec RecordMode, keep bool, window, n int) float64 {
	o := Options{Recursive: Predictors, Record: rec}
	if window > 0 {
		o.MaxTurns = Int(window)
	}
	s, err := Restore(supportAgent(true), o, supportTurns(n))
	if err != nil {
		b.Fatal(err)
	}
	ctx := WithLM(context.Background(), instantModel{})
	for i := range 20 {
		if _, _, err := s.Run(ctx, sig.NewMap("question", fmt.Sprintf("warm-up %d", i))); err != nil {
			b.Fatal(err)
		}
	}
	var kept []*trace.Turn
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	const turns = 200
	for i := range turns {
		_, t, err := s.Run(ctx, sig.NewMap("question", fmt.Sprintf("q%d", i)))
		if err != nil {
			b.Fatal(err)
		}
		if keep {
			kept = append(kept, t)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	runtime.KeepAlive(s)
	runtime.KeepAlive(kept)
	return float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc)) / turns / 1024
}
