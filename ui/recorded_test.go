package ui_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/recognize"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/storage/capture"
)

// proxyCall is a call as the recording proxy stores a request DSPy's ChatAdapter wrote
// for a dspy-session predictor (its history field last).
func proxyCall(t testing.TB, question, intent string, history sig.History, at time.Time) *trace.Call {
	t.Helper()
	s := sig.New("ClassifyIntent", "Classify the customer's intent.", []sig.Field{{Name: "question", Type: sig.TStr}},
		[]sig.Field{{Name: "intent", Type: sig.TStr}}).
		AppendInput(sig.Field{Name: "history", Type: sig.THistory, Desc: "Conversation history"})
	msgs, err := adapter.Chat{}.Format(adapter.Request{Signature: s, Inputs: sig.NewMap("question", question, "history", history)})
	if err != nil {
		t.Fatal(err)
	}
	rq := recognize.Parse(msgs)
	completion := adapter.AssistantContent(s, sig.NewMap("intent", intent), nil)
	out, err := rq.Outputs(completion)
	if err != nil || !rq.Exact {
		t.Fatalf("recognising the fixture: %v %s", err, rq.Mismatch)
	}
	return &trace.Call{Path: "question -> intent", PredictorType: "Predict", Adapter: "chat", Messages: lm.MessagesOf(msgs),
		Inputs: rq.Inputs, History: rq.History, Outputs: out, Completion: completion, Started: at, Latency: time.Millisecond,
		Recovered: trace.RecoveredExact}
}

// recordProxyConversation stores, through the proxy's recorder, a conversation of two
// turns (one call each) and returns its ID.
func recordProxyConversation(t testing.TB, st *storage.Store) string {
	t.Helper()
	ctx := context.Background()
	rec, err := capture.New(ctx, capture.Options{Store: st, IdleGap: time.Nanosecond, Title: "my dspy program"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-time.Hour)
	calls := []*trace.Call{
		proxyCall(t, "I can't log in", "technical", sig.History{}, t0),
		proxyCall(t, "The reset email never arrives", "technical",
			sig.History{Messages: []*sig.Map{sig.NewMap("question", "I can't log in", "intent", "technical")}}, t0.Add(time.Minute)),
	}
	for _, c := range calls { // minutes apart: a turn each
		if err := rec.Begin("", "", c.Started)(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	conv, err := rec.Conversation()
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return conv
}

// A conversation the proxy recorded opens read only: no input form (a note says where
// its turns come from), nothing typed is sent, the focus never lands on an editor; the
// transcript, the call tree, the wire pane under every strategy and the compare view
// work on its calls.
func TestRecordedConversationIsReadOnly(t *testing.T) {
	r := newReal(t, 0)
	r.conv = recordProxyConversation(t, r.store)
	hs := newHarness(t, r, 120, 36)
	hs.press("enter") // the list opens first
	s := hs.screen()
	assertContains(t, s, "recorded by sessionbench proxy · read only", "X-Sessionbench-Session", "The reset email never arrives")
	assertLacks(t, s, "SupportAgent", "type below", "question:")

	// keys a user would type go nowhere: no turn, no error
	hs.typeText("hello")
	hs.press("esc", "e")
	if n := r.turns(t, "main"); n != 2 {
		t.Fatalf("typing reached a turn: %d turns", n)
	}
	assertLacks(t, hs.screen(), "takes no turns here", "editing turn", "hello")

	// tab and shift+tab visit the panes, never an editor (whose bottom line offers f1,
	// not ?, for help: ? would be typed)
	for i, k := range []string{"tab", "tab", "tab", "tab", "shift+tab", "shift+tab", "shift+tab", "shift+tab"} {
		hs.press(k)
		lines := strings.Split(hs.screen(), "\n")
		if bottom := lines[len(lines)-1]; !strings.Contains(bottom, "? help") {
			t.Fatalf("key %d (%s) focused the editor: %q\n%s", i+1, k, bottom, hs.screen())
		}
	}
	assertContains(t, hs.screen(), "recorded by the proxy")
	assertLacks(t, hs.screen(), "agent proxy")

	// the transcript (focused again: up selects turn 0) → its call → every strategy
	hs.press("up", "enter")
	assertContains(t, hs.screen(), "calls · turn 0", "wire · actual", "actual · question -> intent")
	for _, st := range core.Strategies {
		hs.press("s")
		label := fmt.Sprintf("%d %s", st.Number, st.Name)
		if sc := hs.screen(); !strings.Contains(sc, "wire · "+label) || strings.Contains(sc, "takes no turns") {
			t.Fatalf("strategy %s: the recorded call is not rendered:\n%s", label, sc)
		}
	}
	hs.press("s") // back to actual
	hs.press("c")
	assertContains(t, hs.screen(), "compare · turn 0 · question -> intent", "1 per-predictor", "2 outer, signature-filtered")
	hs.press("esc")

	// compare runs: the replay form has no agent of the conversation's to keep
	hs.press("R")
	assertContains(t, hs.screen(), "compare runs")
	assertLacks(t, hs.screen(), "unchanged (proxy)")
}

// An agent file that lists history among its inputs asks for the session's history,
// which the session injects: the input form asks only for the other inputs.
func TestHistoryInputIsNotAFormField(t *testing.T) {
	dir := t.TempDir()
	agent := "name = \"remember\"\ninputs = [\"question\", \"history\"]\noutputs = [\"seen\"]\n[[steps]]\nname = \"look\"\nset = { seen = \"{history}\" }\n"
	if err := os.WriteFile(filepath.Join(dir, "remember.toml"), []byte(agent), 0o600); err != nil {
		t.Fatal(err)
	}
	r := newReal(t, 0)
	r.SetAgentDirs(dir)
	r.converse(t, "remember", "history agent", "first question")
	hs := newHarness(t, r, 100, 30)
	hs.press("enter")
	s := hs.screen()
	assertContains(t, s, "╭─ remember ", "> question")
	assertLacks(t, s, "history:", "question:")
	// what is typed is the question; the turn sees the history the session injected
	hs.typeText("second question")
	hs.press("enter")
	assertContains(t, hs.screen(), "turn recorded on main", `{"messages": [{"question": "first question"`)
}
