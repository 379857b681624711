package app

import (
	"context"
	"fmt"
	"path/filepath"
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
			Messages:   []lm.Message{{Role: "system", Content: "Answer the question."}, {Role: "user", Content: q}},
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
// Sub-benchmarks split the frame so a slow part is visible; the navigator's whole tree
// is measured apart because the first frame need not wait for it.
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
	lastPage := func() error {
		p, err := a.LoadTurns(ctx, "big", storage.MainBranch, total-50, 50)
		if err == nil && (len(p.Turns) != 50 || p.Total != total || p.Turns[49].Calls == nil) {
			err = fmt.Errorf("page of %d turns of %d", len(p.Turns), p.Total)
		}
		return err
	}
	run := func(name string, fs ...func() error) {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				for _, f := range fs {
					if err := f(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
	run("frame", conversations, branches, lastPage)
	run("Conversations", conversations)
	run("Branches", branches)
	run("LoadTurns-last-50", lastPage)
	run("TurnTree", func() error {
		nodes, err := a.TurnTree(ctx, "big")
		if err == nil && len(nodes) != total {
			err = fmt.Errorf("%d nodes", len(nodes))
		}
		return err
	})
}
