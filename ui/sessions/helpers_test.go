package sessions

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/demo"
	"github.com/sessionbench/sessionbench/llm"
	"github.com/sessionbench/sessionbench/storage"
)

// countingLM is the demo model, counting the requests it answers.
type countingLM struct {
	inner lm.LM
	n     atomic.Int64
}

func (c *countingLM) Name() string { return c.inner.Name() }
func (c *countingLM) Call(ctx context.Context, req lm.Request) (lm.Response, error) {
	c.n.Add(1)
	return c.inner.Call(ctx, req)
}

func demoModel(rate float64) *countingLM {
	return &countingLM{inner: llm.NewDemo(llm.DemoOptions{TokenRate: rate, Scripts: demo.Scripts()})}
}

// newWorkbench opens a real SQLite file in a temporary folder with the demo model; no
// agent directories are searched unless a test sets them.
func newWorkbench(t *testing.T) (*Service, *storage.Store, *countingLM, string) {
	t.Helper()
	m := demoModel(0)
	a, st := serviceWith(t, m)
	return a, st, m, st.Path()
}

// serviceWith is a Service with model on a real SQLite file in a temporary folder,
// closed when the test ends; no agent directories are searched unless a test sets them.
func serviceWith(t *testing.T, model lm.LM) (*Service, *storage.Store) {
	t.Helper()
	st, err := storage.Open(context.Background(), filepath.Join(t.TempDir(), "wb.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	a := New(st, model)
	a.SetAgentDirs()
	return a, st
}

// events collects everything a run streams.
type events struct {
	ch   chan Event
	mu   sync.Mutex
	all  []Event
	done chan struct{}
}

func collect() *events {
	e := &events{ch: make(chan Event, 4096), done: make(chan struct{})}
	go func() {
		for ev := range e.ch {
			e.mu.Lock()
			e.all = append(e.all, ev)
			e.mu.Unlock()
		}
		close(e.done)
	}()
	return e
}

// stop ends collection and returns the events.
func (e *events) stop() []Event {
	close(e.ch)
	<-e.done
	return e.all
}

func mustConversation(t *testing.T, a *Service, agent string) string {
	t.Helper()
	c, err := a.NewConversation(context.Background(), agent, "")
	if err != nil {
		t.Fatal(err)
	}
	return c.ID
}

func mustSend(t *testing.T, a *Service, conv, branch string, inputs *sig.Map) *trace.Turn {
	t.Helper()
	tr, err := a.Send(context.Background(), SendRequest{Conv: conv, Branch: branch, Inputs: inputs}, nil)
	if err != nil {
		t.Fatalf("send %v on %s: %v", inputs, branch, err)
	}
	return tr
}

func question(q string) *sig.Map { return sig.NewMap("question", q) }

// pageOf loads a whole branch, its turns whole (LoadTurns reads pages without the
// calls' requests).
func pageOf(t *testing.T, a *Service, conv, branch string) TurnPage {
	t.Helper()
	p, err := a.store.LoadBranchRange(context.Background(), conv, branch, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return TurnPage{From: p.From, Total: p.Total, IDs: p.Keys, Turns: p.Turns}
}

func branchInfo(t *testing.T, a *Service, conv, name string) BranchInfo {
	t.Helper()
	bs, err := a.Branches(context.Background(), conv)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		if b.Name == name {
			// the row read alone (what the workbench refreshes) is the listed one
			if one, err := a.Branch(context.Background(), conv, name); err != nil || one != b {
				t.Errorf("Branch(%s) = %+v (%v), Branches lists %+v", name, one, err, b)
			}
			return b
		}
	}
	t.Fatalf("no branch %q in %+v", name, bs)
	return BranchInfo{}
}

func leafCalls(t *trace.Turn) []*trace.Call {
	var out []*trace.Call
	trace.WalkCalls(t.Calls, func(c *trace.Call, _ int) {
		if len(c.Children) == 0 {
			out = append(out, c)
		}
	})
	return out
}

func map1(k string, v any) *sig.Map { return sig.NewMap(k, v) }
