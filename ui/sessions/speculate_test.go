package sessions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/demo"
	"github.com/sessionbench/sessionbench/storage"
)

// sentLM answers as inner does (a request slow says is slow after a minute, unless
// its context ends first), and keeps every request it was sent and how each call
// ended.
type sentLM struct {
	inner lm.LM
	slow  func(lm.Request) bool
	mu    sync.Mutex
	reqs  []lm.Request
	errs  []error
}

func (m *sentLM) Name() string { return m.inner.Name() }
func (m *sentLM) Call(ctx context.Context, req lm.Request) (lm.Response, error) {
	m.mu.Lock()
	i := len(m.reqs)
	m.reqs = append(m.reqs, req)
	m.errs = append(m.errs, nil)
	m.mu.Unlock()
	resp, err := func() (lm.Response, error) {
		if m.slow != nil && m.slow(req) {
			select {
			case <-ctx.Done():
				return lm.Response{}, ctx.Err()
			case <-time.After(time.Minute):
			}
		}
		return m.inner.Call(ctx, req)
	}()
	m.mu.Lock()
	m.errs[i] = err
	m.mu.Unlock()
	return resp, err
}

func (m *sentLM) requests() ([]lm.Request, []error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]lm.Request(nil), m.reqs...), append([]error(nil), m.errs...)
}

// agentInputs are inputs for every input field of agent ag, turn i's.
func agentInputs(ag demo.Agent, i int) *sig.Map {
	in := sig.NewMap()
	for _, f := range ag.Inputs {
		in.Set(f, fmt.Sprintf("I can't log in (%s, turn %d)", f, i))
	}
	return in
}

// branchOf makes a conversation with agent and sends turns turns in a process of its
// own (a Service on a store closed after), returning the database and conversation.
func branchOf(t *testing.T, ag demo.Agent, turns int) (path, conv string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "ahead.db")
	st, err := storage.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	a := New(st, demoModel(0))
	a.SetAgentDirs()
	conv = mustConversation(t, a, ag.Name)
	for i := range turns {
		mustSend(t, a, conv, storage.MainBranch, agentInputs(ag, i))
	}
	a.KeepFirstCalls(context.Background())
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return path, conv
}

// runProcess is what `sessionbench run` does for one turn, in a process of its own: a
// Service on the store at path with model, the restore ahead, the first call ahead
// (with before run on the store first, when given), then the Send.
func runProcess(t *testing.T, path, conv string, model lm.LM, inputs *sig.Map, before func(*storage.Store)) (*Service, []Event) {
	t.Helper()
	ctx := context.Background()
	st, err := storage.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if before != nil {
		before(st)
	}
	a := New(st, model)
	a.SetAgentDirs()
	wait := a.RestoreAhead(ctx, conv, storage.MainBranch, true)
	a.CallAhead(ctx, conv, storage.MainBranch, inputs)
	ev := collect()
	_, err = a.Send(ctx, SendRequest{Conv: conv, Branch: storage.MainBranch, Inputs: inputs}, ev.ch)
	wait()
	all := ev.stop()
	if err != nil {
		t.Fatal(err)
	}
	return a, all
}

// TestCallAhead: for every built-in agent, a new process's first turn on a branch
// whose last turn this program ran has its first model call made ahead when that call
// is a predictor's given the turn's inputs, and the turn takes its answer. The model is
// sent the same requests, in the same order, as by the same process without the call
// ahead (on a copy of the database), and the turns recorded are the same.
func TestCallAhead(t *testing.T) {
	ctx := context.Background()
	for _, ag := range demo.Agents() {
		t.Run(ag.Name, func(t *testing.T) {
			path, conv := branchOf(t, ag, 3)
			control := filepath.Join(t.TempDir(), "control.db")
			copyFile(t, path, control)
			if _, err := os.Stat(path + "-wal"); err == nil {
				copyFile(t, path+"-wal", control+"-wal") // what the log holds of it yet
			}
			inputs := agentInputs(ag, 3)
			model := &sentLM{inner: demoModel(0)}
			a, _ := runProcess(t, path, conv, model, inputs, nil)
			without := &sentLM{inner: demoModel(0)}
			func() {
				st, err := storage.Open(ctx, control)
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				b := New(st, without)
				b.SetAgentDirs()
				mustSend(t, b, conv, storage.MainBranch, inputs)
				b.KeepFirstCalls(ctx)
			}()
			reqs, _ := model.requests()
			want, _ := without.requests()
			if len(reqs) != len(want) {
				t.Fatalf("the model was sent %d requests; without the call ahead %d", len(reqs), len(want))
			}
			for i := range want {
				if reqs[i].Meta.Path != want[i].Meta.Path || !reqs[i].Messages.Equal(want[i].Messages) {
					t.Errorf("request %d (%s) is not the one sent without the call ahead (%s)", i, reqs[i].Meta.Path, want[i].Meta.Path)
				}
			}
			got, exp := lastTurn(t, path, conv), lastTurn(t, control, conv)
			if !got.Outputs.Equal(exp.Outputs) || len(leafCalls(got)) != len(leafCalls(exp)) {
				t.Errorf("the turn: %v with %d calls; without the call ahead %v with %d", got.Outputs, len(leafCalls(got)), exp.Outputs, len(leafCalls(exp)))
			}
			for i, c := range leafCalls(got) {
				if e := leafCalls(exp)[i]; c.Path != e.Path || !c.Messages.Equal(e.Messages) {
					t.Errorf("call %d (%s) records another request than without the call ahead", i, c.Path)
				}
			}
			// which agents' first calls are made ahead: those given the turn's inputs
			made, taken := a.ahead.made.Load(), a.ahead.taken.Load()
			wantAhead := map[string]bool{"SupportAgent": true, "CorrectThenTranslate": true, "RetryAgent": true, "ResearchAgent": true}[ag.Name]
			if wantAhead && (made != 1 || taken != 1) || !wantAhead && made != 0 {
				t.Errorf("%d made ahead, %d taken (made ahead expected: %v)", made, taken, wantAhead)
			}
		})
	}
}

// lastTurn is the last turn of the main branch of conv in the database at path.
func lastTurn(t *testing.T, path, conv string) *trace.Turn {
	t.Helper()
	st, err := storage.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	page, err := st.LoadBranchRange(context.Background(), conv, storage.MainBranch, -1, 1)
	if err != nil || len(page.Turns) != 1 {
		t.Fatalf("the last turn: %v", err)
	}
	return page.Turns[0]
}

// The stored first call is what a session restored from the branch would send: for
// SupportAgent, classify's history, the turn's question its input.
func TestFirstCallKept(t *testing.T) {
	ag, _ := demo.Lookup("SupportAgent")
	path, conv := branchOf(t, ag, 3)
	ctx := context.Background()
	st, err := storage.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fc, ref, err := st.FirstCall(ctx, conv, storage.MainBranch)
	if err != nil || fc == nil {
		t.Fatalf("no first call kept: %v", err)
	}
	if fc.Path != "classify" || len(fc.Fields) != 1 || fc.Fields[0] != "question" || ref != "SupportAgent" {
		t.Errorf("first call of %s: %s %v", ref, fc.Path, fc.Fields)
	}
	a := New(st, demoModel(0))
	a.SetAgentDirs()
	r, err := a.session(ctx, conv, storage.MainBranch, "")
	if err != nil {
		t.Fatal(err)
	}
	want, ok, err := r.s.NextCallHistory("classify")
	if !ok || err != nil {
		t.Fatalf("NextCallHistory: %v %v", ok, err)
	}
	if want.Len() != 6 || !fc.History.Equal(want) {
		t.Errorf("stored history of %d messages, the restored session's %d", fc.History.Len(), want.Len())
	}
}

// A call made ahead that is not the turn's first request is cancelled, and the turn
// sends its own: the stored history was changed behind the program's back. A stored
// first call that no longer follows the branch's tip, or that another definition of
// the agent left, makes no call at all.
func TestCallAheadRefused(t *testing.T) {
	ag, _ := demo.Lookup("SupportAgent")
	ctx := context.Background()
	rewrite := func(change func(fc *storage.FirstCall)) func(*storage.Store) {
		return func(st *storage.Store) {
			fc, _, err := st.FirstCall(ctx, conv0(t, st), storage.MainBranch)
			if err != nil || fc == nil {
				t.Fatalf("no first call stored: %v", err)
			}
			tip := fc.Tip
			change(fc)
			if err := st.PutFirstCall(ctx, conv0(t, st), storage.MainBranch, fc, tip, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		name        string
		before      func(*storage.Store)
		made, taken int64
	}{
		{"as kept", nil, 1, 1},
		{"history changed", rewrite(func(fc *storage.FirstCall) {
			m := fc.History.Slice()
			m[0].Content += " (changed)"
			fc.History = lm.ListOf(m)
		}), 1, 0},
		{"another agent", rewrite(func(fc *storage.FirstCall) { fc.Agent = hashKey("another") }), 0, 0},
		{"older tip", func(st *storage.Store) {
			// a turn another program committed after the one the first call follows
			sink := st.Sink(conv0(t, st), storage.MainBranch)
			key, err := sink.BeginTurn(ctx, question("meanwhile"))
			if err == nil {
				err = sink.CommitTurn(ctx, key, &trace.Turn{Inputs: question("meanwhile"), Outputs: sig.NewMap("reply", "x", "intent", "general")})
			}
			if err != nil {
				t.Fatal(err)
			}
		}, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, conv := branchOf(t, ag, 2)
			// the request made from the changed history is slow: it ends only when
			// cancelled
			model := &sentLM{inner: demoModel(0), slow: func(req lm.Request) bool {
				for _, m := range req.Messages.All() {
					if strings.Contains(m.Content, "(changed)") {
						return true
					}
				}
				return false
			}}
			a, evs := runProcess(t, path, conv, model, question("Why was I charged twice?"), c.before)
			if made, taken := a.ahead.made.Load(), a.ahead.taken.Load(); made != c.made || taken != c.taken {
				t.Errorf("%d made ahead, %d taken; want %d and %d", made, taken, c.made, c.taken)
			}
			reqs, errs := model.requests()
			if want := 2 + int(c.made-c.taken); len(reqs) != want {
				t.Fatalf("%d requests sent, want %d", len(reqs), want)
			}
			for i, r := range reqs {
				if model.slow(r) && !errors.Is(errs[i], context.Canceled) {
					t.Errorf("the call made ahead ended with %v, want it cancelled", errs[i])
				}
			}
			turns := 0
			for _, ev := range evs {
				if ev.Kind == EventTurn {
					turns++
					if got := ev.Turn.Outputs.String("intent"); got != "billing" {
						t.Errorf("the turn's intent: %q", got)
					}
				}
			}
			if turns != 1 {
				t.Errorf("%d turns streamed", turns)
			}
		})
	}
}

// conv0 is the one conversation of st.
func conv0(t *testing.T, st *storage.Store) string {
	t.Helper()
	cs, err := st.ListConversations(context.Background())
	if err != nil || len(cs) != 1 {
		t.Fatalf("conversations: %v (%d)", err, len(cs))
	}
	return cs[0].ID
}

// A turn that takes a call made ahead streams what that call streamed before it took
// it, then the rest, as a call of its own would: the reply's text arrives whole.
func TestCallAheadStreams(t *testing.T) {
	ag, _ := demo.Lookup("SupportAgent")
	path, conv := branchOf(t, ag, 2)
	model := demoModel(2000) // streams, a token at a time
	a, evs := runProcess(t, path, conv, model, question("I can't log in"), nil)
	if a.ahead.taken.Load() != 1 {
		t.Fatalf("the call made ahead was not taken")
	}
	var last string
	var turn string
	for _, ev := range evs {
		switch {
		case ev.Kind == EventDelta && ev.Path == "classify":
			last = ""
			for _, o := range ev.Output {
				last += o.Text
			}
		case ev.Kind == EventTurn:
			turn = ev.Turn.Outputs.String("intent")
		}
	}
	if last == "" || strings.TrimSpace(last) != turn {
		t.Errorf("classify streamed %q; the turn's intent is %q", last, turn)
	}
}
