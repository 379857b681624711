package capture

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
)

func openStore(t *testing.T) *storage.Store {
	t.Helper()
	s, err := storage.Open(context.Background(), filepath.Join(t.TempDir(), "sb.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// never is a timer gap no test reaches: turns close only when the next one begins or
// at Close, so grouping depends on the calls' own (synthetic) times, not the clock.
const never = time.Hour

// newRecorder is a recorder whose idle timers never fire (see never).
func newRecorder(t *testing.T, s *storage.Store, gap time.Duration) *Recorder {
	t.Helper()
	r, err := New(context.Background(), Options{Store: s, IdleGap: gap, Title: "run"})
	if err != nil {
		t.Fatal(err)
	}
	r.timerGap = never
	return r
}

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// call is a recorded call as the proxy makes them: the system message identifies the
// predictor, question -> answer.
func call(system, q, a string, at time.Duration, lat time.Duration) *trace.Call {
	return &trace.Call{Path: "question -> answer", Adapter: "chat", PredictorType: "Predict",
		Messages: lm.MessagesOf([]lm.Message{{Role: "system", Content: system}, {Role: "user", Content: q}}),
		Inputs:   sig.NewMap("question", q), Outputs: sig.NewMap("answer", a), Completion: a,
		Started: t0.Add(at), Latency: lat, Recovered: trace.RecoveredExact}
}

// run begins and finishes calls on r in the order of the steps: "b i" begins call i,
// "f i" finishes it.
func run(t *testing.T, r *Recorder, session, turn []string, calls []*trace.Call, steps ...string) {
	t.Helper()
	finish := map[int]func(context.Context, *trace.Call) error{}
	for _, st := range steps {
		var op byte
		var i int
		fmt.Sscanf(st, "%c %d", &op, &i)
		switch op {
		case 'b':
			finish[i] = r.Begin(session[i], turn[i], calls[i].Started)
		case 'f':
			if err := finish[i](context.Background(), calls[i]); err != nil {
				t.Fatalf("%s: %v", st, err)
			}
		}
	}
}

func onlyConversation(t *testing.T, s *storage.Store) storage.ConversationSummary {
	t.Helper()
	cs, err := s.ListConversations(context.Background())
	if err != nil || len(cs) != 1 {
		t.Fatalf("conversations %v %v, want one", cs, err)
	}
	return cs[0]
}

func TestHeuristicTurns(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	r := newRecorder(t, s, 2*time.Second)
	calls := []*trace.Call{
		call("A", "q1", "a1", 0, time.Second),                     // turn 0
		call("A", "q2", "a2", 2500*time.Millisecond, time.Second), // 1.5s after the last end: same turn
		call("A", "q3", "a3", 10*time.Second, 5*time.Second),      // idle 6.5s: turn 1
		call("B", "q4", "a4", 13*time.Second, time.Second),        // starts while 2 is in flight: same turn
		call("A", "q5", "a5", 30*time.Second, time.Second),        // turn 2
		{Path: "chat", Started: t0.Add(30500 * time.Millisecond), Latency: 1, // a failed call in turn 2
			Inputs: sig.NewMap("user", "x"), Error: "upstream answered 500", Recovered: trace.RecoveredNone},
	}
	none := make([]string, len(calls))
	run(t, r, none, none, calls, "b 0", "f 0", "b 1", "f 1", "b 2", "b 3", "f 3", "f 2", "b 4", "b 5", "f 5", "f 4")
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	c := onlyConversation(t, s)
	if c.Agent != Agent || c.Title != "run" || c.Pending != 0 {
		t.Errorf("conversation %+v", c)
	}
	turns, err := s.LoadBranch(ctx, c.ID, storage.MainBranch)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		ids     []string
		in, out string
	}{{[]string{"c1", "c2"}, "q1", "a2"}, {[]string{"c1", "c2"}, "q3", "a3"}, {[]string{"c1", "c2"}, "q5", "a5"}}
	if len(turns) != len(want) {
		t.Fatalf("%d turns, want %d", len(turns), len(want))
	}
	for i, w := range want {
		tr := turns[i]
		var ids []string
		for _, c := range tr.Calls {
			ids = append(ids, c.ID)
		}
		sort.Strings(ids)
		if fmt.Sprint(ids) != fmt.Sprint(w.ids) || tr.Inputs.String("question") != w.in || tr.Outputs.String("answer") != w.out {
			t.Errorf("turn %d: calls %v inputs %s outputs %s, want %v %s %s", i, ids, py.CompactJSON(tr.Inputs), py.CompactJSON(tr.Outputs), w.ids, w.in, w.out)
		}
	}
	// Turn 1 holds two predictors with the same fields: told apart by their paths.
	paths := map[string]bool{}
	for _, c := range turns[1].Calls {
		paths[c.Path] = true
	}
	if !paths["question -> answer"] || !paths["question -> answer #2"] {
		t.Errorf("paths %v", paths)
	}
	if turns[2].Calls[1].Error == "" || turns[2].Calls[1].Recovered != trace.RecoveredNone {
		t.Errorf("the failed call was not kept as failed: %+v", turns[2].Calls[1])
	}
}

// TestIdleTimerCommits: with nothing in flight, a turn is committed once the idle gap
// passes, without waiting for another call (the workbench sees it while the program
// keeps running).
func TestIdleTimerCommits(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	var mu sync.Mutex
	done := make(chan string, 4)
	r, err := New(ctx, Options{Store: s, IdleGap: 10 * time.Millisecond, OnTurn: func(_ context.Context, conv, key string) {
		mu.Lock()
		defer mu.Unlock()
		done <- conv + "/" + key
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	f := r.Begin("", "", time.Now())
	if err := f(ctx, call("A", "q", "a", 0, 0)); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-done:
		c := onlyConversation(t, s)
		if c.Turns != 1 || c.Pending != 0 || got != c.ID+"/"+mustTip(t, s, c.ID) {
			t.Errorf("after the idle gap: %+v, OnTurn %s", c, got)
		}
	case <-time.After(20 * time.Second): // a hang guard, not a speed assertion
		t.Fatal("the turn was not committed after the idle gap")
	}
}

func mustTip(t *testing.T, s *storage.Store, conv string) string {
	b, err := s.Branch(context.Background(), conv, storage.MainBranch)
	if err != nil {
		t.Fatal(err)
	}
	return b.Tip
}

// TestHeaders: the session header names a conversation continued by a later run; turn
// headers group calls, and a turn that begins while the previous one still has a call
// in flight waits for it (its finished calls are stored once the previous is committed).
func TestHeaders(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	sess := []string{"run-1", "run-1", "run-1", "other thing/!"}
	turn := []string{"T1", "T1", "T2", ""}
	calls := []*trace.Call{call("A", "q1", "a1", 0, time.Minute), call("A", "q2", "a2", time.Hour, time.Second),
		call("A", "q3", "a3", 2*time.Hour, time.Second), call("A", "q4", "a4", 0, time.Second)}
	r := newRecorder(t, s, never)
	// T2's call begins and ends while T1's first call is still in flight.
	run(t, r, sess, turn, calls, "b 0", "b 1", "f 1", "b 2", "f 2", "f 0", "b 3", "f 3")
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	turns, err := s.LoadBranch(ctx, "p-run-1", storage.MainBranch)
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 2 || len(turns[0].Calls) != 2 || len(turns[1].Calls) != 1 || turns[1].Inputs.String("question") != "q3" {
		t.Fatalf("turns %d (%s)", len(turns), py.CompactJSON(turns[0].Inputs))
	}
	c, err := s.Conversation(ctx, "p-run-1")
	if err != nil || c.Title != "run-1" || c.Metadata["session"] != "run-1" {
		t.Errorf("conversation %+v %v", c, err)
	}
	odd := conversationID("other thing/!")
	if _, err := s.Conversation(ctx, odd); err != nil || len(odd) != len("p-")+16 {
		t.Errorf("hashed session id %q: %v", odd, err)
	}
	// A second run with the same session continues the conversation.
	r2 := newRecorder(t, s, never)
	run(t, r2, sess[:1], turn[:1], calls[:1], "b 0", "f 0")
	r2.Close(ctx)
	if turns, _ := s.LoadBranch(ctx, "p-run-1", storage.MainBranch); len(turns) != 3 {
		t.Errorf("the second run has %d turns in the conversation, want 3", len(turns))
	}
	// A session naming a conversation the proxy did not record is refused.
	if _, err := s.CreateConversation(ctx, storage.NewConversation{ID: "p-mine", Agent: "SupportAgent"}); err != nil {
		t.Fatal(err)
	}
	if err := r2.Begin("mine", "", t0)(ctx, calls[0]); err == nil {
		t.Error("recorded into a conversation of another agent")
	}
}

// childEnv makes the test binary a recorder process that records calls into the
// database named by SB_DB and then waits to be killed.
const childEnv = "SESSIONBENCH_CAPTURE_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(child())
	}
	os.Exit(m.Run())
}

// child records two calls (one turn, left open: the idle gap is never reached), says
// so on stdout, then waits to be killed.
func child() int {
	ctx := context.Background()
	s, err := storage.Open(ctx, os.Getenv("SB_DB"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	r, err := New(ctx, Options{Store: s, IdleGap: time.Hour})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	last := os.Getenv("SB_LAST")
	calls := []*trace.Call{call("A", "q1", "a1", 0, time.Second), call("A", "q2", last, time.Second, time.Second)}
	if last == "fail" {
		calls[1].Outputs, calls[1].Error = nil, "upstream answered 500 Internal Server Error"
	}
	for _, c := range calls {
		if err := r.Begin("", "", c.Started)(ctx, c); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	fmt.Println("recorded")
	select {}
}

// TestRecoverKilledProxy: calls a killed proxy stored stay in its open turn; a recorder
// started while that proxy lives leaves the turn alone, one started after the kill ends
// it: completed with its last call's outputs, or kept as failed when that call failed.
func TestRecoverKilledProxy(t *testing.T) {
	for _, last := range []string{"a2", "fail"} {
		t.Run(last, func(t *testing.T) {
			ctx := context.Background()
			db := filepath.Join(t.TempDir(), "sb.db")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"=1", "SB_DB="+db, "SB_LAST="+last)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			if line, _ := bufio.NewReader(out).ReadString('\n'); line != "recorded\n" {
				cmd.Process.Kill()
				t.Fatalf("child said %q", line)
			}
			s, err := storage.Open(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// Its owner is alive: left alone.
			if _, err := New(ctx, Options{Store: s}); err != nil {
				t.Fatal(err)
			}
			if ps, _ := s.PendingTurns(ctx); len(ps) != 1 || ps[0].Status != trace.StatusRunning || len(ps[0].Calls) != 2 {
				t.Fatalf("the live proxy's open turn: %+v", ps)
			}
			cmd.Process.Kill()
			cmd.Wait()
			var told []string
			n, err := Recover(ctx, s, func(_ context.Context, conv, key string) { told = append(told, conv) })
			if err != nil || n != 1 || len(told) != 1 {
				t.Fatalf("recovered %d (%v), told %v", n, err, told)
			}
			c := onlyConversation(t, s)
			turns, _ := s.LoadBranch(ctx, c.ID, storage.MainBranch)
			kept, _ := s.KeptTurns(ctx, c.ID, storage.MainBranch)
			if ps, _ := s.PendingTurns(ctx); len(ps) != 0 {
				t.Errorf("%d turns still pending", len(ps))
			}
			if last == "fail" {
				if len(turns) != 0 || len(kept) != 1 || kept[0].Status != trace.StatusFailed || !strings.Contains(kept[0].Error, "500") {
					t.Fatalf("failed turn: %d on the branch, kept %+v", len(turns), kept)
				}
				return
			}
			if len(turns) != 1 || len(turns[0].Calls) != 2 || turns[0].Outputs.String("answer") != "a2" || len(kept) != 0 {
				t.Fatalf("after recovery: %d turns, %d kept", len(turns), len(kept))
			}
		})
	}
}

// TestTurnsEndingInAFailedCall: a turn whose last call failed (the program gave up
// there) is kept beside the branch as failed, or cancelled when the program hung up;
// a failure followed by an answer (a retry) leaves the turn completed.
func TestTurnsEndingInAFailedCall(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	r := newRecorder(t, s, time.Second)
	failed := func(at time.Duration, status int) *trace.Call {
		c := call("A", "q", "", at, time.Millisecond)
		c.Outputs, c.Error, c.Tries = nil, "upstream answered 429 Too Many Requests", []lm.Try{{N: 1, Status: status}}
		return c
	}
	calls := []*trace.Call{
		failed(0, 429), call("A", "q1", "a1", time.Second, time.Millisecond), // retried: completed
		call("A", "q2", "a2", time.Minute, time.Millisecond), failed(time.Minute+time.Second, 429), // gave up: failed
		failed(2*time.Minute, 499), // hung up: cancelled
	}
	none := make([]string, len(calls))
	run(t, r, none, none, calls, "b 0", "f 0", "b 1", "f 1", "b 2", "f 2", "b 3", "f 3", "b 4", "f 4")
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	c := onlyConversation(t, s)
	turns, _ := s.LoadBranch(ctx, c.ID, storage.MainBranch)
	kept, _ := s.KeptTurns(ctx, c.ID, storage.MainBranch)
	if len(turns) != 1 || turns[0].Outputs.String("answer") != "a1" || len(turns[0].Calls) != 2 {
		t.Fatalf("%d turns on the branch", len(turns))
	}
	if len(kept) != 2 || kept[0].Status != trace.StatusFailed || kept[1].Status != trace.StatusCancelled ||
		!strings.Contains(kept[0].Error, "429") {
		t.Fatalf("kept %+v", kept)
	}
}
