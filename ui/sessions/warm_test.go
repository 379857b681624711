package sessions

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/demo"
	"github.com/sessionbench/sessionbench/llm"
	"github.com/sessionbench/sessionbench/storage"
)

// TestWarmedFirstSendParsesNothing checks that storage.Warm prepares every statement the
// first Sends of a process run: after it, they make SQLite parse nothing, on the
// writer or on a reader, whatever the agent and the branch (every built-in agent; a
// branch long enough for calls to be journaled against the stored turn before; a
// windowed agent; an empty branch). Without Warm the same Send parses dozens.
func TestWarmedFirstSendParsesNothing(t *testing.T) {
	window, err := filepath.Abs("testdata/support_window.toml")
	if err != nil {
		t.Fatal(err)
	}
	type scenario struct {
		name, agent string
		input       string // the agent's input field
		turns       int    // Sends before the process ends
	}
	cases := []scenario{
		{"SupportAgent, long branch", "SupportAgent", "question", 34}, // 64+ messages: seeded journaling
		{"window4", window, "question", 6},
		{"empty branch", "SupportAgent", "question", 0},
	}
	for _, ag := range demo.Agents() {
		cases = append(cases, scenario{ag.Name, ag.Name, ag.Inputs[0], 2})
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "warm.db")
			st, err := storage.Open(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			a := New(st, demoModel(0))
			a.SetAgentDirs()
			conv := mustConversation(t, a, tc.agent)
			for i := range tc.turns {
				mustSend(t, a, conv, storage.MainBranch, sig.NewMap(tc.input, fmt.Sprintf("question %d: I can't log in", i)))
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			for _, warm := range []bool{false, true} {
				// a new process: it lists the conversations, warms up (or not), sends
				st, err := storage.Open(ctx, db)
				if err != nil {
					t.Fatal(err)
				}
				a := New(st, demoModel(0))
				a.SetAgentDirs()
				a.warm.store.Store(true) // Warm runs here or not at all, not at the first call
				if _, err := a.Conversations(ctx); err != nil {
					t.Fatal(err)
				}
				if warm {
					if err := st.Warm(ctx); err != nil {
						t.Fatal(err)
					}
				}
				for i, nth := range []string{"first", "second"} {
					w0, r0 := st.Parses()
					mustSend(t, a, conv, storage.MainBranch, sig.NewMap(tc.input, fmt.Sprintf("one more question (%d)", i)))
					w1, r1 := st.Parses()
					switch {
					case warm && (w1 != w0 || r1 != r0):
						t.Errorf("after Warm the %s Send parsed %d statements on the writer and %d on the readers, want none",
							nth, w1-w0, r1-r0)
					case !warm && i == 0 && w1-w0 < 10:
						// the counter counts: a cold first Send parses a turn's statements
						// (its reads before the turn all run on the writer, at the head
						// the turn's lock read: storage/hotread.go)
						t.Errorf("without Warm the first Send parsed %d statements on the writer and %d on the readers", w1-w0, r1-r0)
					}
				}
				if err := st.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// waitingLM answers as inner does once the store has been parsing nothing for a while
// (its warm-ups, if any, are done), as a model that thinks long enough for them would;
// parsed is the writer's parse count then.
type waitingLM struct {
	inner  lm.LM
	st     *storage.Store
	parsed int64
}

func (m *waitingLM) Name() string { return m.inner.Name() }
func (m *waitingLM) Call(ctx context.Context, req lm.Request) (lm.Response, error) {
	w, r := m.st.Parses()
	quiet := time.Now()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && time.Since(quiet) < 500*time.Millisecond; {
		time.Sleep(10 * time.Millisecond)
		if w2, r2 := m.st.Parses(); w2 != w || r2 != r {
			w, r, quiet = w2, r2, time.Now()
		}
	}
	m.parsed = w
	return m.inner.Call(ctx, req)
}

// A turn nobody warmed up for (run, session retry) warms the store as its first model
// call begins (its calls seeded against the branch meanwhile), so its commit, after the
// model answered, parses nothing;
// a Service whose warm-ups are done (or, here, turned off) leaves the commit to parse its
// statements.
func TestFirstCallWarmsUp(t *testing.T) {
	ctx := context.Background()
	_, st, _, db := newWorkbench(t)
	a := New(st, demoModel(0))
	conv := mustConversation(t, a, "SupportAgent")
	for i := range 3 {
		mustSend(t, a, conv, storage.MainBranch, question(fmt.Sprintf("question %d", i)))
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		off  bool
	}{{"warms at the first call", false}, {"warm-ups off", true}} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := storage.Open(ctx, db) // a new process
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			model := &waitingLM{inner: demoModel(0), st: st}
			a := New(st, model)
			if tc.off {
				a.warm.store.Store(true)
				a.warm.branch(conv, storage.MainBranch)
			}
			mustSend(t, a, conv, storage.MainBranch, question("one more"))
			w, _ := st.Parses()
			switch commit := w - model.parsed; {
			case !tc.off && commit != 0:
				t.Errorf("the commit after the model answered parsed %d statements: the first call did not warm the store up", commit)
			case tc.off && commit < 10:
				t.Errorf("with no warm-up the commit parsed %d statements, want its own (the check cannot fail)", commit)
			}
		})
	}
}

// A later Send on a branch reads before its turn begins only the branch under the
// journal's lock (the conversation's agent and status, the tip and the turns left open
// on it, in one read), which its cached session is checked against: its reads are each
// tens of microseconds on this driver, so they are counted.
func TestLaterSendReads(t *testing.T) {
	window, err := filepath.Abs("testdata/support_window.toml")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, agent := range []string{"SupportAgent", window} {
		t.Run(filepath.Base(agent), func(t *testing.T) {
			st, err := storage.Open(ctx, filepath.Join(t.TempDir(), "reads.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			a := New(st, demoModel(0))
			a.SetAgentDirs()
			conv := mustConversation(t, a, agent)
			// no warm-ups: their reads, in the background, would be counted too
			a.warm.store.Store(true)
			a.warm.branch(conv, storage.MainBranch)
			for i := range 8 {
				mustSend(t, a, conv, storage.MainBranch, question(fmt.Sprintf("question %d: I can't log in", i)))
			}
			// 6 before the branch's head was one read, the sink kept its branch's id and the
			// header read the turns left running on it in the same query; 2 before the head
			// was read under the lock (storage.TurnHold) instead of once before it and again
			// under it; on the writer connection, whose pages the last commit left warm
			const maxReads = 1
			for i := range 3 {
				r0, w0 := st.Reads()
				mustSend(t, a, conv, storage.MainBranch, question(fmt.Sprintf("one more question (%d)", i)))
				r1, w1 := st.Reads()
				if n := r1 - r0 + w1 - w0; n > maxReads {
					t.Errorf("Send %d ran %d reads; want at most %d", i, n, maxReads)
				}
				if r1 != r0 {
					t.Errorf("Send %d ran %d reads on the readers, whose page cache each commit empties; want them on the writer", i, r1-r0)
				}
			}
		})
	}
}

// The first Send of a process on a windowed agent's branch reads the branch once (its
// head: the tail of its path is read from that tip and the sink locks the branch's
// journal by the id the head read found), then the tail's turns and their calls, then
// the header under the lock. Each statement is parsed for the first time in the process, a tenth of a
// millisecond or more apiece on this driver, so they are counted.
func TestFirstSendReads(t *testing.T) {
	path, conv := windowedBranch(t)
	st, a := quietProcess(t, path, conv)
	defer st.Close()
	// the head and the header on the writer; the tail's nodes and calls on a reader (8
	// when the tail read and the sink looked the branch up again, 5 when a restore read
	// the turns' attempts too)
	const maxReads = 4
	r0, w0 := st.Reads()
	mustSend(t, a, conv, storage.MainBranch, question("one more question"))
	r1, w1 := st.Reads()
	if n := r1 - r0 + w1 - w0; n > maxReads {
		t.Errorf("the first Send ran %d reads (%d on the readers, %d on the writer); want at most %d", n, r1-r0, w1-w0, maxReads)
	}
}

// The first Send of a process that nobody prefetched for (`sessionbench run`) seeds its
// long calls against the turn before as they begin (storage.BranchSink.PrepareCall),
// although the process has written nothing yet: its commit reads none of the stored
// requests and histories back (at 1,000 turns of SupportAgent, that read cost the first
// Send's process about 30 ms of CPU after the model had answered).
func TestFirstSendReadsNoListBack(t *testing.T) {
	fixture, conv := sendFixtureOf(t, "SupportAgent", 40) // requests of 80 messages and more
	st, a := quietProcess(t, fixture.Path(), conv)
	defer st.Close()
	mustSend(t, a, conv, storage.MainBranch, question("one more question"))
	if n := st.ListsReadBack(); n != 0 {
		t.Errorf("the first Send's commit read %d stored lists back, want none", n)
	}
	// the check can fail: a turn whose calls are not seeded (an agent too short for
	// seeding; here the branch undone to a few turns) reads what it shares back
	if _, err := a.Undo(context.Background(), conv, storage.MainBranch, 38); err != nil {
		t.Fatal(err)
	}
	mustSend(t, a, conv, storage.MainBranch, question("and another"))
	if n := st.ListsReadBack(); n == 0 {
		t.Error("a commit that shares unseeded lists with the turn before read none back: ListsReadBack counts nothing")
	}
}

// What SetCallWarmUp is given runs once per Service, in the background while the
// model thinks: not when the Service is made, not before the first call begins, and
// not again for later turns.
func TestCallWarmUpRunsOnceWhileTheModelThinks(t *testing.T) {
	ctx := context.Background()
	st, err := storage.Open(ctx, filepath.Join(t.TempDir(), "callwarm.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	model := &slowLM{inner: instantLM{}, latency: 200 * time.Millisecond}
	a := New(st, model)
	a.SetAgentDirs()
	ran := make(chan time.Time, 4)
	a.SetCallWarmUp(func() { ran <- time.Now() })
	conv := mustConversation(t, a, "SupportAgent")
	select {
	case <-ran:
		t.Fatal("the call warm-up ran before any model call")
	case <-time.After(50 * time.Millisecond):
	}
	mustSend(t, a, conv, storage.MainBranch, question("first"))
	select {
	case at := <-ran:
		first := time.Unix(0, model.first.Load())
		if at.Before(first) || at.After(first.Add(model.latency)) {
			t.Errorf("the call warm-up ran %v after the first call began; want while the model thought (%v)", at.Sub(first), model.latency)
		}
	default:
		t.Fatal("the call warm-up did not run during the first Send")
	}
	mustSend(t, a, conv, storage.MainBranch, question("second"))
	select {
	case <-ran:
		t.Error("the call warm-up ran again for a later turn")
	case <-time.After(50 * time.Millisecond):
	}
}

// TestRestoreAhead: what `run` does while it reads its setup (RestoreAhead) leaves the
// first Send of the process no read at all (it locked the branch and read it under the
// lock, for the Send to take over); the branch is held until then, and let go by the
// wait when no Send came; the journal goes with the store's Close either way.
func TestRestoreAhead(t *testing.T) {
	ctx := context.Background()
	path, conv := windowedBranch(t)
	runs := path + "-runs"
	for _, send := range []bool{true, false} {
		st, a := quietProcess(t, path, conv)
		wait := a.RestoreAhead(ctx, conv, storage.MainBranch, false)
		a.mu.Lock()
		ahead := a.aheads[conv+"\x00"+storage.MainBranch]
		a.mu.Unlock()
		<-ahead.done // done, not waited for: the hold is still the Send's to take
		other, err := storage.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		sink := other.Sink(conv, storage.MainBranch)
		if send {
			// another process finds the branch held (it waits a second for a turn's
			// header that does not come, then gives up)
			if _, err := sink.BeginTurn(ctx, question("meanwhile")); !errors.Is(err, storage.ErrBusy) {
				t.Errorf("another process's turn while the restore ahead holds the branch: %v, want busy", err)
			}
		}
		if send {
			r0, w0 := st.Reads()
			mustSend(t, a, conv, storage.MainBranch, question("one more question"))
			r1, w1 := st.Reads()
			if n := r1 - r0 + w1 - w0; n > 0 {
				t.Errorf("the Send after the restore ahead ran %d reads (%d on the readers, %d on the writer); want none", n, r1-r0, w1-w0)
			}
		}
		wait()
		if entries, err := os.ReadDir(runs); err != nil || len(entries) != 1 {
			t.Errorf("journals after the restore ahead: %v (%v), want the branch's", entries, err)
		}
		// let go: the other process's turn begins now (and is given up)
		key, err := sink.BeginTurn(ctx, question("after"))
		if err != nil {
			t.Errorf("another process's turn after the restore ahead's wait (a turn sent: %v): %v", send, err)
		} else if err := sink.AbortTurn(ctx, key, &trace.Turn{Status: trace.StatusCancelled}); err != nil {
			t.Fatal(err)
		}
		if err := other.Close(); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(runs); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after Close (a turn sent: %v) the journals are still there: %v", send, err)
		}
	}
}

// windowedBranch is a database holding a conversation of the 4-turn-window agent with 8
// turns on its main branch, closed.
func windowedBranch(t *testing.T) (path, conv string) {
	t.Helper()
	window, err := filepath.Abs("testdata/support_window.toml")
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "windowed.db")
	st, err := storage.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	a := New(st, demoModel(0))
	a.SetAgentDirs()
	conv = mustConversation(t, a, window)
	for i := range 8 {
		mustSend(t, a, conv, storage.MainBranch, question(fmt.Sprintf("question %d: I can't log in", i)))
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return path, conv
}

// quietProcess opens path as a new process would, with a Service that starts no
// warm-ups (their reads, in the background, would be counted with a Send's).
func quietProcess(t *testing.T, path, conv string) (*storage.Store, *Service) {
	t.Helper()
	st, err := storage.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	a := New(st, demoModel(0))
	a.SetAgentDirs()
	a.warm.store.Store(true)
	a.warm.branch(conv, storage.MainBranch)
	return st, a
}

// What readies a turn (RestoreAhead for `run`, Prefetch as the user types) also opens
// the model's connection to its server, so that the Send does not wait for it: the
// server sees the connection, with a HEAD, before the Send, and the Send's calls open
// none of their own.
func TestReadyingOpensTheModelsConnection(t *testing.T) {
	ctx := context.Background()
	for _, ready := range []string{"RestoreAhead", "Prefetch"} {
		t.Run(ready, func(t *testing.T) {
			var mu sync.Mutex
			conns, heads := 0, 0
			handler := sseHandler(0)
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodHead {
					mu.Lock()
					heads++
					mu.Unlock()
					http.NotFound(w, r)
					return
				}
				handler(w, r)
			}))
			srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
				if st == http.StateNew {
					mu.Lock()
					conns++
					mu.Unlock()
				}
			}
			srv.Start()
			defer srv.Close()
			seen := func() (int, int) { mu.Lock(); defer mu.Unlock(); return conns, heads }

			st, err := storage.Open(ctx, filepath.Join(t.TempDir(), "pre.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			model, err := llm.NewOpenAI(llm.OpenAIOptions{Provider: "test", BaseURL: srv.URL + "/v1", Model: "gpt-4o-mini"})
			if err != nil {
				t.Fatal(err)
			}
			a := New(st, llm.NewSwitch(model)) // as the workbench gives it
			conv := mustConversation(t, a, "SupportAgent")
			switch ready {
			case "RestoreAhead":
				defer a.RestoreAhead(ctx, conv, storage.MainBranch, false)()
			case "Prefetch":
				a.Prefetch(ctx, conv, storage.MainBranch)
			}
			// The server answering the HEAD is not enough: until the client has read
			// the answer, its connection is not free and a Send would dial another.
			a.warm.connecting.Wait()
			if c, h := seen(); c != 1 || h != 1 {
				t.Fatalf("%s: the server saw %d connections and %d HEADs, want 1 and 1", ready, c, h)
			}
			mustSend(t, a, conv, storage.MainBranch, question("Why was I charged twice?"))
			if c, h := seen(); c != 1 || h != 1 {
				t.Errorf("%s, then a Send: %d connections and %d HEADs, want 1 and 1", ready, c, h)
			}
		})
	}
}

// What readies a turn in a new process (RestoreAhead for `run`, Prefetch as the user
// types) also renders the restored session's histories, so the first Send's calls find
// every entry of the history they send rendered, as a later Send's do. Restoring alone
// renders nothing, which shows the check can fail.
func TestReadyingRendersTheHistories(t *testing.T) {
	ctx := context.Background()
	fixture, conv := sendFixtureOf(t, "SupportAgent", 12)
	for _, c := range []struct {
		ready    string
		rendered bool
	}{{"RestoreAhead", true}, {"Prefetch", true}, {"restore only", false}} {
		t.Run(c.ready, func(t *testing.T) {
			st, a := quietProcess(t, fixture.Path(), conv)
			defer st.Close()
			switch c.ready {
			case "RestoreAhead":
				a.RestoreAhead(ctx, conv, storage.MainBranch, false)()
			case "Prefetch":
				a.Prefetch(ctx, conv, storage.MainBranch)
			}
			_, _, l, err := a.liveState(ctx, conv, storage.MainBranch, false, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{"classify", "respond"} {
				h, _ := l.run.s.NextHistory(path)
				if len(h.Messages) < 12 {
					t.Fatalf("%s: %d history entries, want one a turn", path, len(h.Messages))
				}
				for i, m := range h.Messages {
					if got := m.Rendering() != nil; got != c.rendered {
						t.Fatalf("%s: entry %d rendered: %v, want %v", path, i, got, c.rendered)
					}
				}
			}
		})
	}
}
