package sessions

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
)

// benchTurn is turn i of the 100,000-turn fixture: one answered call with a short request.
func benchTurn(i int) *trace.Turn {
	q := fmt.Sprintf("question %d: what does step %d do?", i, i)
	a := fmt.Sprintf("step %d hands its result to step %d", i, i+1)
	at := time.Date(2025, 1, 15, 10, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
	return &trace.Turn{
		Inputs: sig.NewMap("question", q), Outputs: sig.NewMap("answer", a), Started: at, Ended: at.Add(time.Second),
		Calls: []*trace.Call{{
			ID: "c1", Path: "agent", PredictorType: "Predict", Adapter: "chat",
			Inputs: sig.NewMap("question", q), Outputs: sig.NewMap("answer", a),
			Messages:   lm.MessagesOf([]lm.Message{{Role: "system", Content: "Answer the question."}, {Role: "user", Content: q}}),
			Completion: "[[ ## answer ## ]]\n" + a + "\n\n[[ ## completed ## ]]",
			Usage:      lm.Usage{PromptTokens: 20, CompletionTokens: 10, TotalTokens: 30},
			Started:    at, Latency: 300 * time.Millisecond,
		}},
	}
}

// BenchmarkFirstFrame100k measures what the workbench reads before its first frame
// (issue 7: under 150 ms) on a real SQLite file holding a 100,000-turn conversation with
// 20 forks beside 50 small conversations: the conversation list, the branches, and the
// last page of 50 turns of main. The file is built once per run (in the parent
// benchmark, which runs once) and only under -bench; plain `go test` never builds it.
// Sub-benchmarks split the frame so a slow part is visible; frame-before is the frame as
// the workbench read it before issue 19 (the whole branch to learn its length). The
// navigator draws the tree's first page (navigator-first-page) while the rest arrives;
// TurnTree is the whole tree at once, as it was read before.
func BenchmarkFirstFrame100k(b *testing.B) {
	ctx := context.Background()
	st, err := storage.Open(ctx, filepath.Join(b.TempDir(), "first-frame.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if _, err := st.CreateConversation(ctx, storage.NewConversation{ID: "big", Title: "long session", Agent: "qa"}); err != nil {
		b.Fatal(err)
	}
	const total, batch = 100000, 5000
	for done := 0; done < total; done += batch {
		turns := make([]*trace.Turn, batch)
		for i := range turns {
			turns[i] = benchTurn(done + i)
		}
		if _, err := st.AppendTurns(ctx, "big", storage.MainBranch, turns); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < 20; i++ {
		if _, err := st.Fork(ctx, "big", storage.MainBranch, fmt.Sprintf("f%d", i), i*4999); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < 50; i++ {
		if _, err := st.CreateConversation(ctx, storage.NewConversation{Title: fmt.Sprintf("small %d", i), Agent: "qa"}); err != nil {
			b.Fatal(err)
		}
	}
	a := New(st, &lm.Scripted{})

	conversations := func() error {
		cs, err := a.Conversations(ctx)
		if err == nil && len(cs) != 51 {
			err = fmt.Errorf("%d conversations", len(cs))
		}
		return err
	}
	branches := func() error {
		bs, err := a.Branches(ctx, "big")
		if err == nil && len(bs) != 21 {
			err = fmt.Errorf("%d branches", len(bs))
		}
		return err
	}
	// The chat pane's page, read as the workbench reads it (workbenchLastPage).
	lastPage := func() error {
		p, err := workbenchLastPage(ctx, a, "big", storage.MainBranch)
		if err == nil && (len(p.Turns) != 50 || p.Total != total || p.Turns[49].Calls == nil) {
			err = fmt.Errorf("page of %d turns of %d", len(p.Turns), p.Total)
		}
		return err
	}
	run := func(name string, fs ...func() error) {
		b.Run(name, func(b *testing.B) {
			loopCPU(b, func() error {
				for _, f := range fs {
					if err := f(); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
	lastPageBefore := func() error {
		p, err := workbenchLastPageBefore(ctx, a, "big", storage.MainBranch)
		if err == nil && (len(p.Turns) != 50 || p.Total != total) {
			err = fmt.Errorf("page of %d turns of %d", len(p.Turns), p.Total)
		}
		return err
	}
	run("frame", conversations, branches, lastPage)
	run("frame-before", conversations, branches, lastPageBefore)
	run("Conversations", conversations)
	run("Branches", branches)
	run("last-page", lastPage)
	run("navigator-first-page", func() error {
		nodes, next, err := a.TurnTreePage(ctx, "big", "", 2000)
		if err == nil && (len(nodes) != 2000 || next == "") {
			err = fmt.Errorf("%d nodes, next %q", len(nodes), next)
		}
		return err
	})
	run("TurnTree", func() error {
		nodes, err := a.TurnTree(ctx, "big")
		if err == nil && len(nodes) != total {
			err = fmt.Errorf("%d nodes", len(nodes))
		}
		return err
	})
}

// sendFixture stores a SupportAgent conversation of n turns shaped like the turns the
// workbench records (a classify and a respond call per turn, each with its own history),
// copied from one real Send; call histories and requests are kept to the last 4 turns so
// the fixture builds in linear time (restoring a branch reads the values, not the texts),
// but for the tip's, which a real Send stores.
func sendFixture(b *testing.B, n int) (*storage.Store, string) {
	return sendFixtureOf(b, "SupportAgent", n)
}

// sendFixtureOf is sendFixture for another agent with SupportAgent's fields.
func sendFixtureOf(b testing.TB, agent string, n int) (*storage.Store, string) {
	ctx := context.Background()
	st, err := storage.Open(ctx, filepath.Join(b.TempDir(), "send.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	a := New(st, demoModel(0))
	a.SetAgentDirs()
	c, err := a.NewConversation(ctx, agent, "long support session")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := a.Send(ctx, SendRequest{Conv: c.ID, Branch: storage.MainBranch, Inputs: question("template")}, nil); err != nil {
		b.Fatal(err)
	}
	tmpl, err := st.LoadBranch(ctx, c.ID, storage.MainBranch)
	if err != nil || len(tmpl) != 1 {
		b.Fatal(len(tmpl), err)
	}
	if _, err := a.Undo(ctx, c.ID, storage.MainBranch, 1); err != nil {
		b.Fatal(err)
	}
	if _, err := st.Fork(ctx, c.ID, storage.MainBranch, "scratch", 0); err != nil {
		b.Fatal(err) // keeps the undone template reachable; main is rebuilt below
	}
	const batch = 1000
	hist := map[string][]*sig.Map{}
	for done := 0; done < n; done += batch {
		turns := make([]*trace.Turn, 0, batch)
		for i := done; i < min(done+batch, n); i++ {
			t := tmpl[0].Clone()
			q := fmt.Sprintf("question %d: why was I charged twice in month %d?", i, i%12)
			t.Inputs.Set("question", q)
			t.Index = i
			for _, call := range t.Calls {
				call.Inputs.Set("question", q)
				h := hist[call.Path]
				call.History = sig.History{Messages: h[max(len(h)-4, 0):]}
				m := call.Inputs.Clone()
				call.Outputs.Range(func(k string, v any) bool { m.Set(k, v); return true })
				hist[call.Path] = append(h, m)
			}
			turns = append(turns, t)
		}
		if _, err := st.AppendTurns(ctx, c.ID, storage.MainBranch, turns); err != nil {
			b.Fatal(err)
		}
	}
	// The tip a real Send stores: its requests and histories are what the engine sends
	// for the branch (the turns above keep short ones), so the next Send shares them as
	// in a real conversation instead of storing the whole branch's anew (which made the
	// first Send measured pay for the fixture).
	if _, err := a.Send(ctx, SendRequest{Conv: c.ID, Branch: storage.MainBranch, Inputs: question("the tip")}, nil); err != nil {
		b.Fatal(err)
	}
	// What that Send left running in the background (its transaction, the warm-ups its
	// model call began) is the fixture's: a store opened again starts with none of it,
	// where a measured Send would have waited for the write lock or the branch's journal.
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	if st, err = storage.Open(ctx, st.Path()); err != nil { // the Cleanup above closes this one
		b.Fatal(err)
	}
	return st, c.ID
}

// sendTurns is the branch length of BenchmarkSendAt10k.
var sendTurns = 10000

// BenchmarkSendAt10k is one Send on a 10,000-turn branch through the Service with the demo
// model: restoring the branch's session, running the turn, storing it. cold is a fresh
// Service per Send (the workbench's first Send on a branch); warm is consecutive Sends on
// one Service (the branch grows by one turn per Send); session-cold restores the session
// alone, session-warm finds the one kept for the branch.
func BenchmarkSendAt10k(b *testing.B) {
	ctx := context.Background()
	st, conv := sendFixture(b, sendTurns)
	send := func(a *Service) error {
		_, err := a.Send(ctx, SendRequest{Conv: conv, Branch: storage.MainBranch, Inputs: question("Why was I charged twice?")}, nil)
		return err
	}
	// The session a Send restores, alone (the Send's own work is mostly the model's and
	// the request's, which grow with the history as they must).
	b.Run("session-cold", func(b *testing.B) {
		loopCPU(b, func() error {
			a := New(st, demoModel(0))
			a.SetAgentDirs()
			_, err := a.session(ctx, conv, storage.MainBranch, "")
			return err
		})
	})
	b.Run("session-warm", func(b *testing.B) {
		// The session kept for the branch, validated against its tip: what a Send on a
		// branch whose session is kept does before running the turn (session itself
		// takes the session out, so calling it again would restore every time).
		a := New(st, demoModel(0))
		a.SetAgentDirs()
		if _, _, _, err := a.liveState(ctx, conv, storage.MainBranch, false, false); err != nil { // what the first Send did
			b.Fatal(err)
		}
		loopCPU(b, func() error {
			_, _, l, err := a.liveState(ctx, conv, storage.MainBranch, false, false)
			if err == nil && l == nil {
				err = fmt.Errorf("no session kept for the branch")
			}
			return err
		})
	})
	b.Run("cold", func(b *testing.B) {
		loopCPU(b, func() error {
			a := New(st, demoModel(0))
			a.SetAgentDirs()
			return send(a)
		})
	})
	b.Run("warm", func(b *testing.B) {
		a := New(st, demoModel(0))
		a.SetAgentDirs()
		if _, err := a.session(ctx, conv, storage.MainBranch, ""); err != nil { // what the first Send did
			b.Fatal(err)
		}
		loopCPU(b, func() error { return send(a) })
	})
}

// loopCPUPrepared is loopCPU over a call that prep makes ready first, each time: prep's
// time is left out of both wall and CPU time.
func loopCPUPrepared(b *testing.B, prep func() (func() error, error)) {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	var c, out time.Duration
	n := 0
	c0 := cpuTime()
	for b.Loop() {
		b.StopTimer()
		p0 := cpuTime()
		f, err := prep()
		if err != nil {
			b.Fatal(err)
		}
		out += cpuTime() - p0
		b.StartTimer()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	c = cpuTime() - c0 - out
	runtime.ReadMemStats(&m1)
	if c > 0 && n > 0 {
		b.ReportMetric(float64(c.Microseconds())/1000/float64(n), "cpu-ms/op")
		// prep's allocations are counted: a fresh Service is small beside a Send
		b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/1e6/float64(n), "MB-alloc/op")
	}
}

// loopCPU runs f in b.Loop and reports CPU milliseconds per call beside wall time: on a
// shared machine CPU time varies far less than wall time.
// It also reports the megabytes allocated per call.
func loopCPU(b *testing.B, f func() error) {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	c0, n := cpuTime(), 0
	for b.Loop() {
		if err := f(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	c := cpuTime() - c0
	runtime.ReadMemStats(&m1)
	if c > 0 && n > 0 {
		b.ReportMetric(float64(c.Microseconds())/1000/float64(n), "cpu-ms/op")
		b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/1e6/float64(n), "MB-alloc/op")
	}
}
