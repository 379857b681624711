package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

func TestSinkRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "S")
	sink := s.Sink("S", MainBranch)
	var want []*trace.Turn
	for i := 0; i < 6; i++ {
		tr := fixtureTurn(i, 0, i%2 == 0)
		if i == 3 {
			tr.Explicit = true
			tr.History = sig.History{Messages: []*sig.Map{sig.NewMap("question", "seeded", "answer", "x", "k", 1.5)}}
		}
		if i == 4 {
			tr.Score = nil
			tr.Calls[1].Error = "model refused"
			tr.Calls[1].Outputs = nil
			tr.Calls[1].Tries = []lm.Try{{N: 1, Status: 429, Err: "rate limited", Wait: 1e9, Retrying: true}, {N: 2, Status: 200}}
			msgs := tr.Calls[1].Messages.Slice()
			msgs[1].Content += "\x00 byte <&> \xff invalid utf-8"
			tr.Calls[1].Messages = lm.MessagesOf(msgs)
			tr.Calls[1].RawRequest = rawBody(tr.Calls[1].Messages.Slice(), tr.Calls[1].Params)
		}
		if i == 5 { // calls recorded by the proxy keep how their request was understood
			tr.Calls[0].Recovered, tr.Calls[1].Recovered = trace.RecoveredInexact, trace.RecoveredNone
		}
		if _, err := runTurn(ctx, sink, tr); err != nil {
			t.Fatal(err)
		}
		want = append(want, tr)
	}
	got, err := s.LoadBranch(ctx, "S", MainBranch)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("loaded %d turns, want %d", len(got), len(want))
	}
	for i := range want {
		if w, g := toJSON(t, want[i]), toJSON(t, got[i]); w != g {
			t.Fatalf("turn %d differs after the round trip:\nwant %s\ngot  %s", i, w, g)
		}
		// Byte-exact requests, including a NUL and invalid UTF-8.
		for j, c := range want[i].Calls {
			for k, m := range c.Messages.All() {
				if got[i].Calls[j].Messages.At(k) != m {
					t.Fatalf("turn %d call %d message %d differs", i, j, k)
				}
			}
			if got[i].Calls[j].RawRequest != c.RawRequest {
				t.Fatalf("turn %d call %d raw request differs", i, j)
			}
		}
	}
	// Int and float kinds survive.
	if v, _ := got[2].Outputs.Get("n"); v != int64(2) {
		t.Errorf("int output came back as %T %v", v, v)
	}
	if v, _ := got[2].Outputs.Get("ratio"); v != 2.0 {
		t.Errorf("float output came back as %T %v", v, v)
	}
}

func TestRawRequestStoredAsTemplate(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "S")
	for i := 0; i < 3; i++ {
		if _, err := s.AppendTurn(ctx, "S", MainBranch, fixtureTurn(i, 0, true)); err != nil {
			t.Fatal(err)
		}
	}
	var templated, literal int
	s.r.QueryRow("SELECT count(*) FILTER (WHERE raw_request_mode = 3), count(*) FILTER (WHERE raw_request_mode = 1) FROM calls").Scan(&templated, &literal)
	if templated != 9 || literal != 0 {
		t.Errorf("raw requests: %d stored around their messages, %d literal; want all 9 around their messages", templated, literal)
	}
	// The encodings, each given back exactly: around the messages when the body holds
	// them as the OpenAI client writes them, the older template when it holds them some
	// other way, literal otherwise.
	msgs := []lm.Message{{Role: "system", Content: "Answer <b>&</b>\n\t\u2028 \x01 é"}, {Role: "user", Content: strings.Repeat("q", 40)},
		{Role: "assistant"}}
	openaiBody := `{"model":"m","messages":[` + string(lm.AppendMessageJSON(nil, msgs[0])) + `,` + string(lm.AppendMessageJSON(nil, msgs[1])) + `,` +
		string(lm.AppendMessageJSON(nil, msgs[2])) + `],"stream":true}`
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content,omitempty"`
	}
	viaJSON, _ := json.Marshal(map[string]any{"messages": []message{{"system", msgs[0].Content}}})
	if string(viaJSON) != `{"messages":[`+string(lm.AppendMessageJSON(nil, msgs[0]))+`]}` {
		t.Errorf("messageJSON differs from encoding/json: %s", viaJSON)
	}
	for _, c := range []struct {
		body string
		msgs []lm.Message
		mode int
	}{
		{openaiBody, msgs, rawRequestMessages},
		{`{"messages":[{"content":"` + strings.Repeat("q", 40) + `","role":"user"}]}`, msgs[1:2], rawRequestTemplate},
		{`{"x":1}`, msgs, rawRequestLiteral},
		{"", msgs, rawRequestNone},
	} {
		mode, stored := encodeRequestBody(c.body, lm.MessagesOf(c.msgs))
		back, err := decodeRequestBody(mode, stored, lm.MessagesOf(c.msgs))
		if mode != c.mode || err != nil || back != c.body {
			t.Errorf("%.40s: mode %d (want %d), back %q, %v", c.body, mode, c.mode, back, err)
		}
	}
	// A body that does not contain the messages is kept literally.
	tpl, ok := encodeRawRequest(`{"x":1}`, []string{strings.Repeat("a", 40)})
	if ok || tpl != "" {
		t.Errorf("unrelated body templated: %q", tpl)
	}
	if _, err := decodeRawRequest(`["a", 7]`, []string{"x"}); err == nil {
		t.Error("out-of-range reference accepted")
	}
}

func TestSinkErrors(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "S")
	sink := s.Sink("S", MainBranch)
	key, err := sink.BeginTurn(ctx, sig.NewMap("q", "hi"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.CommitTurn(ctx, key, &trace.Turn{Outputs: sig.NewMap("a", "x")}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		err  error
		want error
		msg  string
	}{
		{"record on committed", sink.RecordCall(ctx, key, "", &trace.Call{ID: "x"}), ErrConflict, "not in flight"},
		{"commit twice", sink.CommitTurn(ctx, key, &trace.Turn{}), ErrConflict, "not in flight"},
		{"abort committed", sink.AbortTurn(ctx, key, &trace.Turn{Error: "x"}), ErrConflict, "not in flight"},
		{"abort as completed", sink.AbortTurn(ctx, key, &trace.Turn{Status: trace.StatusCompleted}), ErrInvalid, "want failed, cancelled or interrupted"},
		{"abort nil", sink.AbortTurn(ctx, key, nil), ErrInvalid, "nil turn"},
		{"bad key", sink.RecordCall(ctx, "abc", "", &trace.Call{}), ErrInvalid, "not a turn key"},
		{"unknown key", sink.AbortTurn(ctx, "9999", &trace.Turn{}), ErrNotFound, "turn 9999"},
		{"nil call", sink.RecordCall(ctx, key, "", nil), ErrInvalid, "nil call"},
		{"other conversation", s.Sink("T", MainBranch).AbortTurn(ctx, key, &trace.Turn{}), ErrInvalid, "not in conversation"},
	}
	for _, tc := range cases {
		if !errors.Is(tc.err, tc.want) || !strings.Contains(tc.err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %v %q", tc.name, tc.err, tc.want, tc.msg)
		}
	}
	if _, err := s.Sink("S", "nope").BeginTurn(ctx, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("begin on unknown branch: %v", err)
	}
	// The tip moving under an in-flight turn makes its transaction fail rather than
	// orphan a turn; the failure ends the turn (kept as failed: commitFailed), reported
	// by Sync as it runs after CommitTurn returned (commitlater.go), so there is nothing
	// left to abort.
	k2, _ := sink.BeginTurn(ctx, sig.NewMap("q", "2"))
	moveTipUnder(t, s, "S", MainBranch)
	if err := sink.CommitTurn(ctx, k2, &trace.Turn{}); err != nil {
		t.Errorf("commit after tip moved: %v; want it returned, its transaction beside", err)
	}
	if err := s.Sync(); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "moved") ||
		!strings.Contains(err.Error(), "kept beside branch \"main\" as failed") {
		t.Errorf("Sync after a commit whose tip moved: %v", err)
	}
	if err := sink.AbortTurn(ctx, k2, &trace.Turn{Status: trace.StatusCancelled, Error: "user cancelled"}); !errors.Is(err, ErrConflict) {
		t.Errorf("abort after the failed commit ended the turn: %v", err)
	}
	tree, _ := s.TurnTree(ctx, "S")
	if len(tree) != 2 || tree[1].Status != trace.StatusFailed || !strings.Contains(tree[1].Error, "moved") || tree[1].Owner != nil {
		t.Errorf("turn whose commit failed: %+v", tree[1])
	}
}

// Inner calls may finish in parallel.
func TestSinkConcurrentRecordCall(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "S")
	sink := s.Sink("S", MainBranch)
	key, err := sink.BeginTurn(ctx, sig.NewMap("q", "x"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := fixtureCall(0, i, "agent.worker", 0, true)
			errs <- sink.RecordCall(ctx, key, "", c)
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.CommitTurn(ctx, key, &trace.Turn{Outputs: sig.NewMap()}); err != nil {
		t.Fatal(err)
	}
	turns, _ := s.LoadBranch(ctx, "S", MainBranch)
	if len(turns) != 1 || len(turns[0].Calls) != 16 {
		t.Fatalf("calls recorded in parallel: %d", len(turns[0].Calls))
	}
}

type countingLM struct {
	mu    sync.Mutex
	calls int
}

func (c *countingLM) Name() string { return "counting" }
func (c *countingLM) Call(_ context.Context, req lm.Request) (lm.Response, error) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	return lm.Response{Text: "fresh answer for " + req.Meta.Path}, nil
}

func TestRecoveryResumeReplays(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "S")
	appendN(t, s, "S", MainBranch, 2)
	// A turn that crashed after two of its three calls finished.
	tr := fixtureTurn(2, 0, true)
	sink := s.Sink("S", MainBranch)
	key, _ := sink.BeginTurn(ctx, tr.Inputs)
	if err := sink.RecordCall(ctx, key, "t2.c1", tr.Calls[0].Children[0]); err != nil {
		t.Fatal(err)
	}
	if err := sink.RecordCall(ctx, key, "", tr.Calls[0]); err != nil {
		t.Fatal(err)
	}
	// While its process lives the turn is running, not offered for resuming.
	if p, err := s.PendingTurn(ctx, key); err != nil || p.Status != trace.StatusRunning || p.Resumable() || !p.Owner.Alive {
		t.Fatalf("live turn: %+v %v", p, err)
	}
	if err := s.Sink("S", MainBranch).Resume(ctx, key); !errors.Is(err, ErrBusy) {
		t.Fatalf("resume of a live turn: %v", err)
	}
	crash(t, s, sink, key)

	pending, err := s.PendingTurns(ctx)
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending: %v %v", pending, err)
	}
	p := pending[0]
	if p.Key != key || p.ConvID != "S" || p.Branch != MainBranch || p.Index != 2 || p.Stale || !p.Resumable() ||
		!p.Inputs.Equal(tr.Inputs) || len(p.Calls) != 1 || len(p.Calls[0].Children) != 1 {
		t.Fatalf("pending turn: %+v", p)
	}

	// Resume: the engine runs the turn again through the normal path.
	sink2 := s.Sink("S", MainBranch)
	if err := sink2.Resume(ctx, key); err != nil {
		t.Fatal(err)
	}
	real := &countingLM{}
	model := s.ReplayLM(key, real)
	k2, err := sink2.BeginTurn(ctx, tr.Inputs)
	if err != nil || k2 != key {
		t.Fatalf("resumed BeginTurn = %s %v, want %s", k2, err, key)
	}
	var rec func(parent string, c *trace.Call)
	rec = func(parent string, c *trace.Call) {
		for _, ch := range c.Children {
			rec(c.ID, ch)
		}
		resp, err := model.Call(ctx, lm.Request{Messages: c.Messages, Params: c.Params, Meta: lm.Meta{Path: c.Path}})
		if err != nil {
			t.Fatal(err)
		}
		c.Completion = resp.Text
		if err := sink2.RecordCall(ctx, k2, parent, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range tr.Calls {
		rec("", c)
	}
	if real.calls != 1 || Replayed(model) != 2 {
		t.Errorf("model paid for %d calls and %d were replayed; want 1 and 2", real.calls, Replayed(model))
	}
	if tr.Calls[0].Completion != fixtureCall(2, 1, "agent.planner", 0, true).Completion {
		t.Errorf("replayed completion = %q", tr.Calls[0].Completion)
	}
	if err := sink2.CommitTurn(ctx, k2, tr); err != nil {
		t.Fatal(err)
	}
	turns, _ := s.LoadBranch(ctx, "S", MainBranch)
	if len(turns) != 3 || len(turns[2].Calls) != 2 || len(turns[2].Calls[0].Children) != 1 {
		t.Fatalf("after resume: %d turns", len(turns))
	}
	if pending, _ := s.PendingTurns(ctx); len(pending) != 0 {
		t.Errorf("still pending: %v", pending)
	}

	// Discard: an interrupted turn, given up (kept, cancelled); a live one is refused.
	k3, _ := sink.BeginTurn(ctx, sig.NewMap("question", "abandoned"))
	if err := s.DiscardTurn(ctx, k3, "user chose discard"); !errors.Is(err, ErrBusy) {
		t.Fatalf("discard of a live turn: %v", err)
	}
	crash(t, s, sink, k3)
	if err := s.DiscardTurn(ctx, k3, "user chose discard"); err != nil {
		t.Fatal(err)
	}
	if err := s.DiscardTurn(ctx, k3, ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("discard twice: %v", err)
	}
	// New input supersedes an interrupted turn (kept, cancelled); a retry of it then finds
	// the branch busy with the new one.
	k4, _ := sink.BeginTurn(ctx, sig.NewMap("question", "interrupted"))
	crash(t, s, sink, k4)
	k5, _ := sink.BeginTurn(ctx, sig.NewMap("question", "new"))
	if _, err := s.PendingTurn(ctx, k4); !errors.Is(err, ErrNotFound) {
		t.Errorf("superseded turn still pending: %v", err)
	}
	kept, err := s.KeptTurns(ctx, "S", MainBranch)
	if err != nil || len(kept) != 3 || kept[0].Key != k3 || kept[1].Key != k4 || kept[1].Status != trace.StatusCancelled ||
		kept[1].Error != "superseded by a new turn" || kept[2].Key != k5 || kept[2].Status != trace.StatusRunning {
		t.Errorf("kept turns: %v %+v", err, kept)
	}
	if err := sink.Resume(ctx, k4); err != nil {
		t.Errorf("retry of a superseded turn: %v", err)
	}
	if _, err := sink.BeginTurn(ctx, sig.NewMap("question", "again")); !errors.Is(err, ErrBusy) ||
		!strings.Contains(err.Error(), fmt.Sprintf("is running in process %d on ", os.Getpid())) {
		t.Errorf("begin beside a live turn: %v", err)
	}
	if p, err := s.PendingTurn(ctx, k5); err != nil || p.Stale {
		t.Errorf("new turn: %+v %v", p, err)
	}
	if err := s.Sink("S", "other").Resume(ctx, k5); !errors.Is(err, ErrInvalid) {
		t.Errorf("resume on another branch: %v", err)
	}
}

// attemptsTurn is fixture turn i with attempts of step "review" scoring scores (a
// negative score stands for a failed attempt).
func attemptsTurn(i int, scores ...float64) *trace.Turn {
	t := fixtureTurn(i, 0, false)
	best, bestN := 0.0, 0
	for n, sc := range scores {
		a := &trace.Attempt{Step: "review", N: n + 1, Score: sc, Time: fixtureEpoch.Add(time.Duration(n) * time.Second),
			Summary: fmt.Sprintf("score=%v", sc), Details: sig.NewMap("score", sc), Calls: []string{fmt.Sprintf("c%d", n+1)}}
		if sc < 0 {
			a.Score, a.Details, a.Error, a.Summary = 0, nil, "boom", "failed: boom"
		} else if bestN == 0 || sc > best {
			best, bestN = sc, n+1
		}
		t.Attempts = append(t.Attempts, a)
	}
	for _, a := range t.Attempts {
		a.Best = a.N == bestN
	}
	return t
}

// Attempts are stored with their turn, load with it unchanged, and move the turn's and the
// conversation's best attempt (strictly higher scores only); a turn that did not complete
// keeps its attempts but they are never a best.
func TestAttemptsStoredWithTheirTurn(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "S")
	k0, err := s.AppendTurn(ctx, "S", MainBranch, attemptsTurn(0, 0.65, 0.78, 0.72, 0.69)) // seed 003's example
	if err != nil {
		t.Fatal(err)
	}
	want := attemptsTurn(0, 0.65, 0.78, 0.72, 0.69).Attempts
	got, err := s.LoadTurn(ctx, k0)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := toJSON(t, got.Attempts), toJSON(t, want); g != w {
		t.Fatalf("attempts came back as\n%s\nwant\n%s", g, w)
	}
	// A later turn with an equal best score does not take the conversation's best; a
	// failed attempt is stored with its error and no details.
	k1, err := s.AppendTurn(ctx, "S", MainBranch, attemptsTurn(1, -1, 0.78))
	if err != nil {
		t.Fatal(err)
	}
	b0, _ := s.BestAttempt(ctx, "S", k0)
	b1, _ := s.BestAttempt(ctx, "S", k1)
	bc, _ := s.BestAttempt(ctx, "S", "")
	if b0 == nil || b0.N != 2 || b0.Score != 0.78 || b1 == nil || b1.N != 2 || bc == nil || bc.TurnKey != k0 || bc.N != 2 {
		t.Fatalf("best: turn0 %+v turn1 %+v conversation %+v", b0, b1, bc)
	}
	all, _ := s.Attempts(ctx, "S")
	if len(all) != 6 || all[4].Error != "boom" || all[4].Details != nil || all[4].TurnKey != k1 || all[0].Details.String("score") != "0.65" {
		t.Fatalf("attempts: %s", toJSON(t, all))
	}
	// Through the sink: a committed turn's better attempt becomes the conversation's best,
	// an aborted turn's attempts are kept and never best.
	sink := s.Sink("S", MainBranch)
	k2, err := sink.BeginTurn(ctx, sig.NewMap("question", "q"))
	if err != nil {
		t.Fatal(err)
	}
	failed := attemptsTurn(2, 0.99)
	failed.Status, failed.Error = trace.StatusFailed, "step failed"
	if err := sink.AbortTurn(ctx, k2, failed); err != nil {
		t.Fatal(err)
	}
	k3, err := sink.BeginTurn(ctx, sig.NewMap("question", "q"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.CommitTurn(ctx, k3, attemptsTurn(3, 0.5, 0.9)); err != nil {
		t.Fatal(err)
	}
	c, _ := s.Conversation(ctx, "S")
	if c.BestAttempt == nil || c.BestAttempt.TurnKey != k3 || c.BestAttempt.N != 2 || c.BestAttempt.Score != 0.9 {
		t.Fatalf("conversation best %+v", c.BestAttempt)
	}
	if kept, err := s.LoadTurn(ctx, k2); err != nil || len(kept.Attempts) != 1 || kept.Attempts[0].Score != 0.99 {
		t.Fatalf("aborted turn's attempts: %+v %v", kept, err)
	}
	if b, err := s.BestAttempt(ctx, "S", k2); err != nil || b != nil {
		t.Fatalf("aborted turn has a best attempt: %+v %v", b, err)
	}
	bad := attemptsTurn(4, 0.5)
	bad.Attempts[0].Score = math.NaN()
	if _, err := s.AppendTurn(ctx, "S", MainBranch, bad); !errors.Is(err, ErrInvalid) {
		t.Errorf("a NaN score: %v", err)
	}
}

// Contents shared between conversations survive deleting one of them.
func TestDeleteKeepsSharedContent(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "A")
	mustConv(t, s, "B")
	for i := 0; i < 3; i++ {
		for _, c := range []string{"A", "B"} {
			if _, err := s.AppendTurn(ctx, c, MainBranch, fixtureTurn(i, 0, true)); err != nil {
				t.Fatal(err)
			}
		}
	}
	before, _ := s.LoadBranch(ctx, "B", MainBranch)
	if err := s.DeleteConversation(ctx, "A"); err != nil {
		t.Fatal(err)
	}
	after, err := s.LoadBranch(ctx, "B", MainBranch)
	if err != nil {
		t.Fatal(err)
	}
	if toJSON(t, before) != toJSON(t, after) {
		t.Fatal("B changed when A was deleted")
	}
	if err := s.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
}

// A sink begins its first turn on the branch id the store's last head read of the branch
// found, without looking the branch up; the header, read under the journal's lock, finds
// the name naming another branch since (deleted and made again) and the turn goes to the
// branch the name names now, or fails as on any missing branch when there is none.
func TestSinkAfterBranchReplaced(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "S")
	if _, err := s.CreateBranch(ctx, "S", "side"); err != nil {
		t.Fatal(err)
	}
	commit := func(branch, q string) (string, error) {
		sink := s.Sink("S", branch)
		key, err := sink.BeginTurn(ctx, sig.NewMap("q", q))
		if err != nil {
			return "", err
		}
		if err := sink.CommitTurn(ctx, key, &trace.Turn{Outputs: sig.NewMap("a", q)}); err != nil {
			return "", err
		}
		return key, s.Sync()
	}
	if _, err := commit("side", "first"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := s.BranchHead(ctx, "S", "side"); err != nil { // the store learns side's id
		t.Fatal(err)
	}
	if _, err := s.DeleteBranch(ctx, "S", "side", false); err != nil {
		t.Fatal(err)
	}
	if _, err := commit("side", "gone"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a turn on the deleted branch: %v, want ErrNotFound", err)
	}
	// SQLite gives a new branch the deleted one's id when that was the highest: another
	// branch takes it first, so that the name comes to name a branch of another id
	if _, err := s.CreateBranch(ctx, "S", "other"); err != nil {
		t.Fatal(err)
	}
	again, err := s.CreateBranch(ctx, "S", "side")
	if err != nil {
		t.Fatal(err)
	}
	key, err := commit("side", "anew")
	if err != nil {
		t.Fatalf("a turn on the branch made again: %v", err)
	}
	keys, err := s.BranchPath(ctx, "S", "side")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0].Key != key {
		t.Errorf("branch made again (id %d) holds %v, want only turn %s", again.ID, keys, key)
	}
	// in flight, the turn held the journal of the branch made again: the one another
	// process beginning a turn there locks
	if _, err := os.Stat(s.runPath(again.ID)); err != nil {
		t.Errorf("the turn did not take the journal of the branch made again: %v", err)
	}
}

// TestBeginTurnParsesNothingAfterHead: a turn's header, read under the branch's lock,
// is the statement the branch's head read just ran on the writer connection, so a
// process's first Send parses it once (a tenth of a millisecond apiece on this driver).
func TestBeginTurnParsesNothingAfterHead(t *testing.T) {
	ctx := context.Background()
	path := openTemp(t).Path()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	mustConv(t, s, "S")
	for i := range 2 { // the branch has turn ids reserved: beginning a turn writes nothing
		sink := s.Sink("S", MainBranch)
		key, err := sink.BeginTurn(ctx, sig.NewMap("q", i))
		if err != nil {
			t.Fatal(err)
		}
		if err := sink.CommitTurn(ctx, key, &trace.Turn{Outputs: sig.NewMap("a", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(ctx, path); err != nil { // a new process
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, _, err := s.BranchHead(ctx, "S", MainBranch); err != nil {
		t.Fatal(err)
	}
	w0, r0 := s.Parses()
	sink := s.Sink("S", MainBranch)
	key, err := sink.BeginTurn(ctx, sig.NewMap("q", "new"))
	if err != nil {
		t.Fatal(err)
	}
	w1, r1 := s.Parses()
	if w1 != w0 || r1 != r0 {
		t.Errorf("beginning the turn after the head read parsed %d statements on the writer, %d on the readers; want none", w1-w0, r1-r0)
	}
	if err := sink.CommitTurn(ctx, key, &trace.Turn{Outputs: sig.NewMap("a", "new")}); err != nil {
		t.Fatal(err)
	}
}
