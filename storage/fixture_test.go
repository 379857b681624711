package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// The fixtures imitate what the engine records for a two-predictor program under the chat
// adapter: each request repeats the system prompt and the whole conversation so far as
// user/assistant pairs, then asks the new question.

const fixtureSystem = "Your input fields are:\n1. `question` (str)\n2. `history` (History): Conversation history\n" +
	"Your output fields are:\n1. `answer` (str)\nAll interactions will be structured in the following way, with the appropriate values filled in.\n\n" +
	"[[ ## question ## ]]\n{question}\n\n[[ ## answer ## ]]\n{answer}\n\n[[ ## completed ## ]]\nIn adhering to this structure, your objective is: \n        Answer the question."

func fixtureQuestion(i int) string {
	return fmt.Sprintf("Question number %d: what does step %d of the plan <do> & why?", i, i)
}

func fixtureAnswer(path string, i int) string {
	return fmt.Sprintf("Step %d of %s handles its part of the work and hands over to the next step.", i, path)
}

// fixtureMessages renders the request predictor path sends at turn i.
func fixtureMessages(path string, i int, window int) []lm.Message {
	msgs := []lm.Message{{Role: "system", Content: fixtureSystem + "\n(" + path + ")"}}
	from := 0
	if window > 0 && i > window {
		from = i - window
	}
	for j := from; j < i; j++ {
		msgs = append(msgs,
			lm.Message{Role: "user", Content: "[[ ## question ## ]]\n" + fixtureQuestion(j)},
			lm.Message{Role: "assistant", Content: "[[ ## answer ## ]]\n" + fixtureAnswer(path, j) + "\n\n[[ ## completed ## ]]"})
	}
	msgs = append(msgs, lm.Message{Role: "user", Content: "[[ ## question ## ]]\n" + fixtureQuestion(i) +
		"\n\nRespond with the corresponding output fields, starting with the field `[[ ## answer ## ]]`, and then ending with the marker for `[[ ## completed ## ]]`."})
	return msgs
}

func rawBody(msgs []lm.Message, p lm.Params) string {
	b, _ := json.Marshal(struct {
		Model    string       `json:"model"`
		Messages []lm.Message `json:"messages"`
		Stream   bool         `json:"stream"`
	}{p.Model, msgs, true})
	return string(b)
}

func fixtureHistory(i, window int) sig.History {
	var h sig.History
	from := 0
	if window > 0 && i > window {
		from = i - window
	}
	for j := from; j < i; j++ {
		h.Messages = append(h.Messages, sig.NewMap("question", fixtureQuestion(j), "answer", fixtureAnswer("agent", j)))
	}
	return h
}

var fixtureEpoch = time.Date(2025, 1, 15, 10, 30, 45, 123456789, time.UTC)

// fixtureCall builds the call path makes at turn i.
func fixtureCall(turn int, n int, path string, window int, raw bool) *trace.Call {
	temp := 0.0
	p := lm.Params{Model: "gpt-4o-mini", Temperature: &temp}
	msgs := fixtureMessages(path, turn, window)
	c := &trace.Call{
		ID: fmt.Sprintf("t%d.c%d", turn, n), Path: path, PredictorType: "Predict", Adapter: "chat",
		Inputs:     sig.NewMap("question", fixtureQuestion(turn)),
		Outputs:    sig.NewMap("answer", fixtureAnswer(path, turn)),
		History:    fixtureHistory(turn, window),
		Messages:   lm.MessagesOf(msgs),
		Params:     p,
		Completion: "[[ ## answer ## ]]\n" + fixtureAnswer(path, turn) + "\n\n[[ ## completed ## ]]",
		Usage:      lm.Usage{PromptTokens: 100 + turn, CompletionTokens: 20, TotalTokens: 120 + turn},
		Model:      "gpt-4o-mini-2024-07-18",
		Started:    fixtureEpoch.Add(time.Duration(turn)*time.Second + time.Duration(n)*time.Millisecond),
		Latency:    time.Duration(250+n) * time.Millisecond,
	}
	if raw {
		c.RawRequest = rawBody(msgs, p)
		c.RawResponse = `data: {"choices":[{"delta":{"content":"` + strings.ReplaceAll(c.Completion, "\n", `\n`) + `"}}]}` + "\n\ndata: [DONE]\n\n"
	}
	return c
}

// fixtureTurn is turn i: a planner call with a nested tool call, then an answer call.
func fixtureTurn(i, window int, raw bool) *trace.Turn {
	planner := fixtureCall(i, 1, "agent.planner", window, raw)
	planner.Children = []*trace.Call{fixtureCall(i, 2, "agent.planner.tool", window, raw)}
	answer := fixtureCall(i, 3, "agent.answer", window, raw)
	score := float64(i%10) / 10
	return &trace.Turn{
		Index:   i,
		Inputs:  sig.NewMap("question", fixtureQuestion(i)),
		Outputs: sig.NewMap("answer", fixtureAnswer("agent.answer", i), "n", int64(i), "ratio", 2.0),
		Score:   &score,
		Calls:   []*trace.Call{planner, answer},
		Started: fixtureEpoch.Add(time.Duration(i) * time.Second),
		Ended:   fixtureEpoch.Add(time.Duration(i)*time.Second + 900*time.Millisecond),
		Status:  trace.StatusCompleted,
	}
}

// runTurn writes turn t through the sink the way the engine does: calls as they finish
// (children before their parent), then the commit.
func runTurn(ctx context.Context, sink *BranchSink, t *trace.Turn) (string, error) {
	key, err := recordCalls(ctx, sink, t)
	if err != nil {
		return key, err
	}
	return key, sink.CommitTurn(ctx, key, t)
}

func openTemp(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "sb.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustConv(t testing.TB, s *Store, id string) {
	t.Helper()
	if _, err := s.CreateConversation(context.Background(), NewConversation{ID: id, Title: "test " + id, Agent: "demo"}); err != nil {
		t.Fatal(err)
	}
}

// appendN commits n fixture turns to branch, continuing from its current length.
func appendN(t testing.TB, s *Store, conv, branch string, n int) []string {
	t.Helper()
	ctx := context.Background()
	b, err := s.Branch(ctx, conv, branch)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i := b.Length; i < b.Length+n; i++ {
		k, err := s.AppendTurn(ctx, conv, branch, fixtureTurn(i, 0, false))
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	return keys
}

func toJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// crash makes turn key, running under sink in this process, look as it does after its
// process was killed: its journal is let go with the turn in it.
func crash(t testing.TB, s *Store, sink *BranchSink, key string) {
	t.Helper()
	sink.abandon(key)
}

// moveTipUnder moves branch's tip back one turn behind the store's back, as a version of
// this program that took no journal lock could while a turn is in flight there (Undo
// refuses): what makes that turn's commit fail.
func moveTipUnder(t testing.TB, s *Store, conv, branch string) {
	t.Helper()
	if _, err := s.Undo(context.Background(), conv, branch, 1); !errors.Is(err, ErrBusy) {
		t.Fatalf("undo under a turn in flight: %v, want it refused as busy", err)
	}
	res, err := s.w.Exec(`UPDATE branches SET tip_id = (SELECT parent_id FROM turns WHERE id = tip_id) WHERE conv_id = ? AND name = ?`, conv, branch)
	if n, _ := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("move the tip of %s/%s: %v", conv, branch, err)
	}
}
