package sessions

// Benchmarks of issue 19 on the paths the workbench and the CLI take: every one goes
// through the Service on a real SQLite file, as ui (cmds.go) and ui/cli call it.

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/llm"
	"github.com/sessionbench/sessionbench/storage"
)

// instantLM answers every request at once with a section for each output field of the
// predictor's signature (a reply that names the question), so a benchmark over it
// measures the engine and storage, not a model.
type instantLM struct{}

func (instantLM) Name() string { return "instant" }
func (instantLM) Call(_ context.Context, req lm.Request) (lm.Response, error) {
	q := req.Meta.Inputs.String("question")
	var b strings.Builder
	for _, f := range req.Meta.Signature.Outputs {
		v := "About \"" + q + "\": clear the cookies, reset the password again and tell us the time of the failure."
		if f.Name == "intent" {
			v = "technical"
		}
		b.WriteString("[[ ## " + f.Name + " ## ]]\n" + v + "\n\n")
	}
	text := b.String() + "[[ ## completed ## ]]"
	if req.OnDelta != nil {
		req.OnDelta(text)
	}
	return lm.Response{Text: text, Model: "instant", Tries: []lm.Try{{N: 1}},
		Usage: lm.Usage{PromptTokens: 100, CompletionTokens: 30, TotalTokens: 130}}, nil
}

// recordingLM remembers a digest of every request it answered, to check that the store
// gives back each exact request.
type recordingLM struct {
	lm.LM
	mu   sync.Mutex
	sent map[[32]byte]bool
}

func (r *recordingLM) Call(ctx context.Context, req lm.Request) (lm.Response, error) {
	resp, err := r.LM.Call(ctx, req)
	r.mu.Lock()
	r.sent[requestDigest(req.Messages.Slice())] = true
	r.mu.Unlock()
	return resp, err
}

func requestDigest(msgs []lm.Message) [32]byte {
	h := sha256.New()
	for _, m := range msgs {
		fmt.Fprintf(h, "%d:%s%d:%s", len(m.Role), m.Role, len(m.Content), m.Content)
	}
	var d [32]byte
	copy(d[:], h.Sum(nil))
	return d
}

// sseServer is an OpenAI-compatible chat-completions server streaming the demo model's
// answer in word-sized chunks, as a real server does: the client then records the exact
// HTTP request and the SSE text of the response, which the store keeps.
func sseServer(b *testing.B) string {
	s := httptest.NewServer(http.HandlerFunc(sseHandler(0)))
	b.Cleanup(s.Close)
	return s.URL + "/v1"
}

// sseHandler is sseServer's handler, which streams its answer's words over pace (0: at
// once).
func sseHandler(pace time.Duration) http.HandlerFunc {
	demoLM := llm.NewDemo(llm.DemoOptions{})
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []lm.Message `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		text, err := demoLM.Complete(lm.Meta{}, req.Messages)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		var chunks []string // a word each
		for len(text) > 0 {
			n := strings.IndexByte(text[1:], ' ') + 1
			if n <= 0 {
				n = len(text)
			}
			chunks = append(chunks, text[:n])
			text = text[n:]
		}
		for _, delta := range chunks {
			d, _ := json.Marshal(delta)
			fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%s},\"finish_reason\":null}]}\n\n", d)
			if pace > 0 {
				w.(http.Flusher).Flush()
				time.Sleep(pace / time.Duration(len(chunks)))
			}
		}
		fmt.Fprint(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":30,\"total_tokens\":130}}\n\ndata: [DONE]\n\n")
	}
}

// sentFixture runs n real Sends of agent (a built-in name or an agent file) through a
// Service with model on a fresh database, as the workbench records them.
func sentFixture(b *testing.B, agent string, n int, model lm.LM) (*Service, *storage.Store, string, string) {
	ctx := context.Background()
	db := filepath.Join(b.TempDir(), "sent.db")
	st, err := storage.Open(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	a := New(st, model)
	a.SetAgentDirs()
	c, err := a.NewConversation(ctx, agent, "long support session")
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		q := fmt.Sprintf("question %d: why was I charged twice in month %d?", i, i%12)
		if _, err := a.Send(ctx, SendRequest{Conv: c.ID, Branch: storage.MainBranch, Inputs: question(q)}, nil); err != nil {
			b.Fatal(err)
		}
	}
	return a, st, c.ID, db
}

// BenchmarkSend is one Send (what enter in the workbench and `run` call) at 100, 1,000
// and 10,000 turns, on SupportAgent (no window: requests grow with the branch) and on
// the same agent with a 4-turn window (requests stay the same size, so any growth is
// the engine's or storage's). first is the first Send of a fresh Service, as a process
// makes it: the workbench has listed the conversations (reading their agents) when the
// user presses enter, and `run` has checked its agent (with the catalog it gives the
// Service); first-process is that with a fresh Store as well (a new process), warmed
// up (storage.Warm) as the workbench warms it while the user types, and
// first-process-cold without the warm-up before the Send (as `run`: the Service warms
// up as the model call begins, which a model answering at once leaves no time for, so
// this is CPU spent, not waited for; BenchmarkBeyondModel measures the wait);
// first-cold is a fresh Service that has read nothing, the agent file included.
// next is the Sends after the first. demo answers with the demo model; instant with a
// model that answers at once, so its time is the engine's and storage's overhead beyond
// the model call. The fixtures keep stored call histories short (see sendFixture).
func BenchmarkSend(b *testing.B) {
	window, err := filepath.Abs("testdata/support_window.toml")
	if err != nil {
		b.Fatal(err)
	}
	for _, agent := range []string{"SupportAgent", window} {
		name := "SupportAgent"
		if agent == window {
			name = "window4"
		}
		for _, n := range []int{100, 1000, 10000} {
			// The fixture is built inside the sub-benchmark, so a -bench pattern that
			// skips it does not pay for it.
			b.Run(fmt.Sprintf("%s/turns=%d", name, n), func(b *testing.B) { benchSendOn(b, agent, n) })
		}
	}
}

// benchSendOn is BenchmarkSend's runs on one agent and branch length.
func benchSendOn(b *testing.B, agent string, n int) {
	ctx := context.Background()
	st, conv := sendFixtureOf(b, agent, n)
	for _, m := range []struct {
		name  string
		model func() lm.LM
	}{{"demo", func() lm.LM { return demoModel(0) }}, {"instant", func() lm.LM { return instantLM{} }}} {
		send := func(a *Service) error {
			_, err := a.Send(ctx, SendRequest{Conv: conv, Branch: storage.MainBranch, Inputs: question("Why was I charged twice?")}, nil)
			return err
		}
		b.Run(m.name+"/first", func(b *testing.B) {
			loopCPUPrepared(b, func() (func() error, error) {
				a := New(st, m.model())
				a.SetAgentDirs()
				_, err := a.Conversations(ctx)
				return func() error { return send(a) }, err
			})
		})
		// first-process: a fresh Store too, as a new process opens it (its caches of
		// stored texts cold), warmed up (storage.Warm) before the Send as the workbench
		// does while the user types; first-process-typed also with the branch's session
		// prefetched, as the workbench asks when the user starts typing;
		// first-process-cold without either before the Send, as `run` makes it (its
		// warm-ups begin with the model call). Opening the Store, warming it, prefetching and closing the one
		// before are left out.
		for _, mode := range []string{"-typed", "", "-cold"} {
			warm, typed := mode != "-cold", mode == "-typed"
			b.Run(m.name+"/first-process"+mode, func(b *testing.B) {
				var open *storage.Store
				defer func() {
					if open != nil {
						open.Close()
					}
				}()
				loopCPUPrepared(b, func() (func() error, error) {
					if open != nil {
						open.Close()
					}
					var err error
					if open, err = storage.Open(ctx, st.Path()); err != nil {
						return nil, err
					}
					a := New(open, m.model())
					a.SetAgentDirs()
					if _, err = a.Conversations(ctx); err != nil {
						return nil, err
					}
					if warm {
						err = open.Warm(ctx)
					}
					if typed {
						a.Prefetch(ctx, conv, storage.MainBranch)
					}
					return func() error { return send(a) }, err
				})
			})
		}
		b.Run(m.name+"/first-cold", func(b *testing.B) {
			loopCPU(b, func() error {
				a := New(st, m.model())
				a.SetAgentDirs()
				return send(a)
			})
		})
		b.Run(m.name+"/next", func(b *testing.B) {
			a := New(st, m.model())
			a.SetAgentDirs()
			if err := send(a); err != nil { // the first Send of this Service
				b.Fatal(err)
			}
			loopCPU(b, func() error { return send(a) })
		})
	}
}

// BenchmarkPreview renders what the wire pane shows for a recorded call under all five
// strategies (Service.Preview: messages, token counts and lint, as the pane draws them)
// on a 1,000-turn SupportAgent branch recorded by real Sends, for the respond call of
// one of the last turns. first is a fresh Service (the process has counted tokens
// before); first-process a fresh Service in a process that has not; warm and
// unseen-turn are one Service that has read the last page of the branch, as the chat
// pane has before its turns can be selected.
func BenchmarkPreview(b *testing.B) {
	ctx := context.Background()
	a, st, conv, _ := sentFixture(b, "SupportAgent", 1000, instantLM{})
	page, err := a.LoadTurns(ctx, conv, storage.MainBranch, 950, 50)
	if err != nil || len(page.Turns) != 50 {
		b.Fatal(len(page.Turns), err)
	}
	all := func(a *Service, i int) error {
		t := page.Turns[i%len(page.Turns)]
		for s := 1; s <= 5; s++ {
			r, err := a.Preview(ctx, PreviewRequest{Conv: conv, Branch: storage.MainBranch, Turn: page.IDs[i%len(page.IDs)],
				Call: t.Calls[1].ID, Strategy: s})
			if err == nil && (r.Err != "" || len(r.Messages) < 2 || r.Tokens == 0) {
				err = fmt.Errorf("strategy %d: %q, %d messages, %d tokens", s, r.Err, len(r.Messages), r.Tokens)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	b.Run("all5/first", func(b *testing.B) {
		i := 0
		loopCPU(b, func() error { i++; return all(New(st, instantLM{}), i) })
	})
	// first-process: the first preview of a process, which has counted no token yet (its
	// encoders loaded, as the workbench preloads them at start).
	b.Run("all5/first-process", func(b *testing.B) {
		i := 0
		loopCPU(b, func() error { i++; llm.ForgetCounts(); return all(New(st, instantLM{}), i) })
	})
	// a Service that has read the page the previewed turns are on, as the chat pane has
	page1 := func() *Service {
		w := New(st, instantLM{})
		if _, err := workbenchLastPage(ctx, w, conv, storage.MainBranch); err != nil {
			b.Fatal(err)
		}
		return w
	}
	// warm: turns previewed before (the wire pane cycling strategies, going back to a
	// turn); unseen-turn: a turn not previewed before, whose calls' histories are read
	// (a page holds calls without them).
	b.Run("all5/warm", func(b *testing.B) {
		w := page1()
		for i := range 10 {
			if err := all(w, i); err != nil {
				b.Fatal(err)
			}
		}
		i := 0
		loopCPU(b, func() error { i++; return all(w, i%10) })
	})
	b.Run("all5/unseen-turn", func(b *testing.B) {
		w := page1()
		if err := all(w, 0); err != nil { // the session restored
			b.Fatal(err)
		}
		i := 0
		loopCPU(b, func() error { i++; return all(w, i) }) // new turns for 49 runs
	})
}

// BenchmarkBranchOps is undo (it reports the inner turns rolled back), redo and fork as
// the workbench runs them, on a 1,000-turn SupportAgent branch recorded by real Sends
// and on a 10,000-turn one: the Service call alone, and with the reload the workbench
// does after it (ui/route.go reloadBranches: the row of the branch moved or made, and
// the last page of its pane with its kept turns; a fork, named by the service as the
// workbench asks, opens a pane on the new branch, forked at a turn of the page shown).
// Each fork adds a branch: the fork benchmarks run after thousands of them.
func BenchmarkBranchOps(b *testing.B) {
	ctx := context.Background()
	type fx struct {
		name string
		st   *storage.Store
		conv string
	}
	_, st1, conv1, _ := sentFixture(b, "SupportAgent", 1000, instantLM{})
	st10, conv10 := sendFixtureOf(b, "SupportAgent", 10000)
	for _, f := range []fx{{"turns=1000", st1, conv1}, {"turns=10000", st10, conv10}} {
		a := New(f.st, instantLM{})
		a.SetAgentDirs()
		// reload is what the workbench reads after an undo, a redo or a fork (ui/route.go
		// reloadBranches, ui/chat.go load): the branch's row, and for its pane the last
		// page of the branch with the turns kept beside it.
		reload := func(a *Service, branch string) error {
			if _, err := a.Branch(ctx, f.conv, branch); err != nil {
				return err
			}
			if _, err := workbenchLastPage(ctx, a, f.conv, branch); err != nil {
				return err
			}
			_, err := a.KeptTurns(ctx, f.conv, branch)
			return err
		}
		undoRedo := func() error {
			if _, err := a.Undo(ctx, f.conv, storage.MainBranch, 1); err != nil {
				return err
			}
			_, err := a.Redo(ctx, f.conv, storage.MainBranch, 1)
			return err
		}
		page, err := a.LoadTurns(ctx, f.conv, storage.MainBranch, 500, 1)
		if err != nil {
			b.Fatal(err)
		}
		fork := func() error {
			_, err := a.Fork(ctx, f.conv, page.IDs[0], "")
			return err
		}
		b.Run(f.name+"/undo+redo", func(b *testing.B) { loopCPU(b, undoRedo) })
		// One undo or redo (they alternate) and the reload after it: what one key costs.
		b.Run(f.name+"/undo-or-redo+reload", func(b *testing.B) {
			if err := reload(a, storage.MainBranch); err != nil { // the pane shows the branch
				b.Fatal(err)
			}
			undone := false
			loopCPU(b, func() error {
				var err error
				if undone {
					_, err = a.Redo(ctx, f.conv, storage.MainBranch, 1)
				} else {
					_, err = a.Undo(ctx, f.conv, storage.MainBranch, 1)
				}
				undone = !undone
				if err != nil {
					return err
				}
				return reload(a, storage.MainBranch)
			})
			if undone {
				if _, err := a.Redo(ctx, f.conv, storage.MainBranch, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
		// The first undo after opening: a Service that has only read the pane's last
		// page and kept turns (as the workbench has after opening the conversation), then
		// one undo and its reload; only that part is timed (a redo puts the tip back,
		// untimed).
		b.Run(f.name+"/first-undo+reload", func(b *testing.B) {
			var cpu time.Duration
			n := 0
			for b.Loop() {
				b.StopTimer()
				w := New(f.st, instantLM{})
				w.SetAgentDirs()
				if err := reload(w, storage.MainBranch); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				c0 := cpuTime()
				_, err := w.Undo(ctx, f.conv, storage.MainBranch, 1)
				if err == nil {
					err = reload(w, storage.MainBranch)
				}
				cpu += cpuTime() - c0
				n++
				b.StopTimer()
				if err == nil {
					_, err = w.Redo(ctx, f.conv, storage.MainBranch, 1)
				}
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(n), "cpu-ms/op")
		})
		// Forks last: each adds a branch, and every reload lists the branches.
		b.Run(f.name+"/fork", func(b *testing.B) { loopCPU(b, fork) })
		// A fork at the selected turn of the pane, and the pane it opens.
		last, err := workbenchLastPage(ctx, a, f.conv, storage.MainBranch)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(f.name+"/fork+open", func(b *testing.B) {
			loopCPU(b, func() error {
				name, err := a.Fork(ctx, f.conv, last.IDs[len(last.IDs)-2], "")
				if err != nil {
					return err
				}
				return reload(a, name)
			})
		})
		b.Run(f.name+"/reload-before", func(b *testing.B) {
			loopCPU(b, func() error {
				_, err := workbenchLastPageBefore(ctx, a, f.conv, storage.MainBranch)
				return err
			})
		})
	}
}

// BenchmarkStorage records 1,000 turns of SupportAgent through Send and reports the
// database's bytes against the unique content: the distinct texts of every request
// message and every completion (what it takes to give back each exact request and
// answer). Every request the model received is then loaded back and compared. demo has
// no HTTP bodies; openai talks to an OpenAI-compatible server over HTTP, so each call
// also keeps its exact request body and the SSE text of its response; window4 is the
// same with a sliding window of 4 turns.
func BenchmarkStorage(b *testing.B) {
	ctx := context.Background()
	window, err := filepath.Abs("testdata/support_window.toml")
	if err != nil {
		b.Fatal(err)
	}
	url := sseServer(b)
	openai := func() lm.LM {
		m, err := llm.NewOpenAI(llm.OpenAIOptions{BaseURL: url, Model: "gpt-4o-mini", APIKey: "k"})
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	for _, c := range []struct {
		name, agent string
		model       func() lm.LM
	}{
		{"demo", "SupportAgent", func() lm.LM { return demoModel(0) }},
		{"openai", "SupportAgent", openai},
		{"openai-window4", window, openai},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				rec := &recordingLM{LM: c.model(), sent: map[[32]byte]bool{}}
				_, st, conv, db := sentFixture(b, c.agent, 1000, rec)
				// the 1,000 Sends and the conversation's creation, SQLite's commit hook counting
				commits, durable := st.Commits()
				b.ReportMetric(float64(commits)/1000, "commits/turn")
				b.ReportMetric(float64(durable)/1000, "fsyncs/turn")
				turns, err := st.LoadBranch(ctx, conv, storage.MainBranch)
				if err != nil || len(turns) != 1000 {
					b.Fatal(len(turns), err)
				}
				unique := map[string]bool{}
				var uniq, calls int64
				add := func(x string) {
					if !unique[x] {
						unique[x] = true
						uniq += int64(len(x))
					}
				}
				for _, t := range turns {
					trace.WalkCalls(t.Calls, func(c *trace.Call, _ int) {
						calls++
						if !rec.sent[requestDigest(c.Messages.Slice())] {
							b.Fatalf("turn %d call %s: the stored request is not one the model received", t.Index, c.ID)
						}
						for _, m := range c.Messages.All() {
							add(m.Content)
						}
						add(c.Completion)
					})
				}
				if int(calls) != len(rec.sent) {
					b.Fatalf("%d calls stored, %d distinct requests sent", calls, len(rec.sent))
				}
				if err := st.Close(); err != nil { // checkpoints the WAL into the file
					b.Fatal(err)
				}
				fi, err := os.Stat(db)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(fi.Size())/float64(uniq), "disk/unique")
				reportSpace(b, db, len(turns))
				b.ReportMetric(float64(fi.Size())/1e6, "MB-on-disk")
				b.ReportMetric(float64(uniq)/1e6, "MB-unique")
			}
		})
	}
}

// reportSpace reports where a database's bytes are, per turn: its largest tables and
// all its indexes together (SQLite's dbstat, what sqlite3_analyzer reads).
func reportSpace(b *testing.B, path string, turns int) {
	db, err := sql.Open("sqlite", path+"?_pragma=query_only(1)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT CASE WHEN s.name IN ('contents', 'list_nodes', 'calls', 'turns') THEN s.name
			WHEN m.type = 'index' OR s.name LIKE 'sqlite_autoindex%' THEN 'indexes' ELSE 'other' END, sum(s.pgsize)
		FROM dbstat s LEFT JOIN sqlite_schema m ON m.name = s.name GROUP BY 1`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var bytes int64
		if err := rows.Scan(&name, &bytes); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(bytes)/float64(turns), name+"-B/turn")
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
}

// workbenchLastPage is what the workbench's chat pane loads when it opens a branch and
// after every turn, undo, redo and fork (ui/chat.go load with from < 0): the last page,
// with the branch's length, in one read.
func workbenchLastPage(ctx context.Context, a *Service, conv, branch string) (TurnPage, error) {
	return a.LoadTurns(ctx, conv, branch, -50, 50)
}

// workbenchLastPageBefore is how the chat pane loaded its last page before issue 19:
// the whole branch to learn its length, then the page.
func workbenchLastPageBefore(ctx context.Context, a *Service, conv, branch string) (TurnPage, error) {
	head, err := a.LoadTurns(ctx, conv, branch, 0, 0)
	if err != nil {
		return TurnPage{}, err
	}
	return a.LoadTurns(ctx, conv, branch, max(0, head.Total-50), 50)
}
