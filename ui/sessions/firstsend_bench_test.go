package sessions

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/llm"
	"github.com/sessionbench/sessionbench/storage"
)

// modelTime is the time a Send's model calls took: what the Send took beyond it is
// the engine's and storage's (and, over HTTP, the client's).
type modelTime struct {
	spent       atomic.Int64 // ns
	first, last atomic.Int64 // unix ns: the first call's start, the last call's end
}

// call times one model call from t0 to now.
func (m *modelTime) call(t0 time.Time) {
	m.first.CompareAndSwap(0, t0.UnixNano())
	m.spent.Add(int64(time.Since(t0)))
	m.last.Store(time.Now().UnixNano())
}

// slowLM answers as inner does after latency, as a served model takes time to answer,
// timing each call.
type slowLM struct {
	modelTime
	inner   lm.LM
	latency time.Duration
}

func (m *slowLM) Name() string { return m.inner.Name() }
func (m *slowLM) Call(ctx context.Context, req lm.Request) (lm.Response, error) {
	t0 := time.Now()
	defer m.call(t0)
	select {
	case <-ctx.Done():
		return lm.Response{}, ctx.Err()
	case <-time.After(m.latency):
	}
	return m.inner.Call(ctx, req)
}

// benchModel makes a model that answers after latency, with the clock that times it:
// a client of one server over HTTP (slowServer; each its own connection, as each
// process has), or one in the process (slowLM over instantLM).
func benchModel(b *testing.B, http bool, latency time.Duration) func() (*modelTime, lm.LM) {
	if http {
		clock, newClient := slowServer(b, latency)
		return func() (*modelTime, lm.LM) { return clock, newClient() }
	}
	return func() (*modelTime, lm.LM) {
		sl := &slowLM{inner: instantLM{}, latency: latency}
		return &sl.modelTime, sl
	}
}

// slowServer is an OpenAI-compatible server (sseServer's answers) that takes latency to
// answer, as a served model streams: its first word after half of it, the others over
// the other half. Each request is timed from its arrival to its last byte: the model's
// time as the client sees it is that and the loopback's, and all the client does
// besides (its request's JSON, the stream's parsing once the last word came, the record)
// counts as the Send's.
func slowServer(b *testing.B, latency time.Duration) (*modelTime, func() lm.LM) {
	m := &modelTime{}
	inner := sseHandler(latency / 2)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.NotFound(w, r) // the HEAD that opens a connection early (Preconnect)
			return
		}
		t0 := time.Now()
		defer m.call(t0)
		time.Sleep(latency / 2)
		inner(w, r)
	}))
	b.Cleanup(s.Close)
	return m, func() lm.LM {
		model, err := llm.NewOpenAI(llm.OpenAIOptions{Provider: "test", BaseURL: s.URL + "/v1", Model: "gpt-4o-mini"})
		if err != nil {
			b.Fatal(err)
		}
		return model
	}
}

// BenchmarkBeyondModel is the wall time a Send adds to its model calls (beyond-ms/op: the
// Send's wall time less the time its model calls took), for a model that answers after
// 30 ms (a small served model; hosted ones take longer, which only gives the background
// work more room). It is issue 19's "overhead beyond the model call", on the paths a user
// hits:
//   - run: the first Send of a new process as `sessionbench run` makes it (ui/cli/run.go):
//     a fresh Store, what `run` does before it (its reads, with the branch held for the
//     turn and its session restored beside them: Service.RestoreAhead), then the Send
//     (model call, commit),
//     whose first model call starts the store's and the branch's warm-ups in the
//     background (ui/sessions/warm.go).
//   - cold: the same with the restore ahead and the warm-ups turned off, what they save:
//     the Send restores the session itself.
//   - typed: the first Send of a workbench process, which the user typed: typing
//     readied the branch (Service.Prefetch) before the Send.
//   - next: a later Send of the same process.
//   - run-process, typed-process: run and typed, each op in a process of its own (this
//     test binary started again: TestBeyondModelProcess), as `sessionbench run` and the
//     workbench are. In the benchmark's process the heap is the fixture's, large enough
//     that the collector seldom runs, and what a process does once (encoding/json's
//     encoders, statements prepared) is done; a new process starts with a heap of a few
//     megabytes, and the collector ran again and again during its first restore
//     (ui/sessions/gcpause.go).
//   - run-http, next-http: run and next with a real llm.OpenAI client over HTTP, its
//     answers streamed (slowServer): what the client does besides (the request's JSON,
//     600 KB at 1,000 turns of SupportAgent, and its record) counts too.
//
// before-ms/op and after-ms/op split the beyond figure: the time before the first model
// call (restore, beginning the turn) and after the last (the turn's end record; its
// transaction runs beside, storage/commitlater.go, and is waited for, untimed, before
// the next Send, as a user's next turn comes later). Both on the 4-turn-window agent at
// 1,000 turns (whose requests stay the same size) and on SupportAgent (no window) at
// 1,000. cpu-ms/op is the process's CPU time per Send,
// background work included: the CPU the first Send of a process costs in all, where the
// beyond figure is what the user waits for. whole-ms/op (run-process, typed-process) is
// the child's time from opening the store to the Send's end, beyond the model: for run,
// its setup and restore included, which overlap (a faster setup shows as a longer
// before-ms, the restore left for the Send to wait for, with a shorter whole).
func BenchmarkBeyondModel(b *testing.B) {
	window, err := filepath.Abs("testdata/support_window.toml")
	if err != nil {
		b.Fatal(err)
	}
	const latency = 30 * time.Millisecond
	ctx := context.Background()
	for _, ag := range []struct{ name, agent string }{{"window4", window}, {"SupportAgent", "SupportAgent"}} {
		b.Run(fmt.Sprintf("%s/turns=1000", ag.name), func(b *testing.B) {
			st, conv := sendFixtureOf(b, ag.agent, 1000)
			send := func(a *Service) error {
				_, err := a.Send(ctx, SendRequest{Conv: conv, Branch: storage.MainBranch, Inputs: question("Why was I charged twice?")}, nil)
				return err
			}
			for _, mode := range []string{"run", "cold", "run-http", "typed"} {
				b.Run(mode, func(b *testing.B) {
					var open *storage.Store
					defer func() {
						if open != nil {
							open.Close()
						}
					}()
					newModel := benchModel(b, strings.HasSuffix(mode, "-http"), latency)
					loopBeyond(b, func() (*modelTime, func() error, func() error, error) {
						if open != nil {
							open.Close()
						}
						var err error
						if open, err = storage.Open(ctx, st.Path()); err != nil {
							return nil, nil, nil, err
						}
						clock, model := newModel()
						a := New(open, model)
						a.SetAgentDirs()
						if mode == "cold" {
							a.warm.store.Store(true)
							a.warm.branch(conv, storage.MainBranch)
						}
						restored := func() {}
						switch mode {
						case "typed":
							// the workbench's first Send: typing readied the branch
							a.Prefetch(ctx, conv, storage.MainBranch)
							return clock, func() error { return send(a) }, open.Settle, nil
						case "run", "run-http":
							restored = a.RestoreAhead(ctx, conv, storage.MainBranch, true)
						}
						err = runSetup(ctx, a, open, conv)
						if mode != "cold" {
							a.CallAhead(ctx, conv, storage.MainBranch, question("Why was I charged twice?"))
						}
						settle := func() error { restored(); a.KeepFirstCalls(ctx); return open.Settle() }
						return clock, func() error { return send(a) }, settle, err
					})
				})
			}
			for _, mode := range []string{"run", "typed"} {
				b.Run(mode+"-process", func(b *testing.B) { beyondInProcesses(b, st.Path(), conv, mode) })
			}
			for _, mode := range []string{"next", "next-http"} {
				b.Run(mode, func(b *testing.B) {
					clock, model := benchModel(b, strings.HasSuffix(mode, "-http"), latency)()
					a := New(st, model)
					a.SetAgentDirs()
					if err := send(a); err != nil { // the first Send of this Service
						b.Fatal(err)
					}
					if err := st.Settle(); err != nil { // its transaction, as after each Send below
						b.Fatal(err)
					}
					loopBeyond(b, func() (*modelTime, func() error, func() error, error) {
						return clock, func() error { return send(a) }, st.Settle, nil
					})
				})
			}
		})
	}
}

// runSetup is what `sessionbench run` does before its first Send (ui/cli/run.go),
// beside the restore ahead it started: it reads the conversation, resolves and builds
// the agent (runPrepare, with the catalog it gives the Service), reads the branch and
// the turns left pending.
func runSetup(ctx context.Context, a *Service, open *storage.Store, conv string) error {
	c, err := open.Conversation(ctx, conv)
	if err != nil {
		return err
	}
	ag, err := a.files.Resolve(c.Agent)
	if err != nil {
		return err
	}
	if _, _, err := ag.Build(); err != nil {
		return err
	}
	if _, err := open.Branch(ctx, conv, storage.MainBranch); err != nil {
		return err
	}
	_, err = open.PendingTurns(ctx)
	return err
}

// loopBeyond runs the Sends prep makes in b.Loop (prep itself untimed), reporting the
// wall time each took beyond its model's calls, and the process's CPU time per Send
// (whatever runs beside it, the background warm-ups and the turn's transaction, which
// settle waits for after the Send, included).
func loopBeyond(b *testing.B, prep func() (*modelTime, func() error, func() error, error)) {
	var beyond, cpu, pre, post time.Duration
	n := 0
	for b.Loop() {
		b.StopTimer()
		model, f, settle, err := prep()
		if err != nil {
			b.Fatal(err)
		}
		spent0 := model.spent.Load()
		model.first.Store(0)
		b.StartTimer()
		c0, t0 := cpuTime(), time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		end := time.Now()
		beyond += end.Sub(t0) - time.Duration(model.spent.Load()-spent0)
		pre += time.Duration(model.first.Load() - t0.UnixNano())
		post += time.Duration(end.UnixNano() - model.last.Load())
		b.StopTimer()
		if err := settle(); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - c0
		b.StartTimer()
		n++
	}
	if n > 0 {
		b.ReportMetric(float64(beyond.Microseconds())/1000/float64(n), "beyond-ms/op")
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(n), "cpu-ms/op")
		b.ReportMetric(float64(pre.Microseconds())/1000/float64(n), "before-ms/op")
		b.ReportMetric(float64(post.Microseconds())/1000/float64(n), "after-ms/op")
	}
}
