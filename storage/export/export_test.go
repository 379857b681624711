package export

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/savefile"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
)

func sampleTurn(i int, prev []*trace.Turn) *trace.Turn {
	q := []string{"I can't log in", "It says password expired", "Thanks <3 & bye"}[i]
	a := []string{"Which error do you see?", "Reset it at /reset.", "You're welcome!"}[i]
	var hist sig.History
	msgs := []lm.Message{{Role: "system", Content: "Answer support questions."}}
	for _, p := range prev {
		hist.Messages = append(hist.Messages, sig.NewMap("question", p.Inputs.String("question"), "reply", p.Outputs.String("reply")))
		msgs = append(msgs, lm.Message{Role: "user", Content: "[[ ## question ## ]]\n" + p.Inputs.String("question")},
			lm.Message{Role: "assistant", Content: "[[ ## reply ## ]]\n" + p.Outputs.String("reply") + "\n\n[[ ## completed ## ]]"})
	}
	msgs = append(msgs, lm.Message{Role: "user", Content: "[[ ## question ## ]]\n" + q})
	score := 0.5 + float64(i)/4
	classify := &trace.Call{ID: "c1", Path: "classify", PredictorType: "Predict", Adapter: "chat",
		Inputs: sig.NewMap("question", q), Outputs: sig.NewMap("intent", "account"), History: hist,
		Messages: lm.MessagesOf(msgs), Completion: "[[ ## intent ## ]]\naccount\n\n[[ ## completed ## ]]",
		Usage: lm.Usage{TotalTokens: 50}, Started: time.Unix(int64(1000+i), 0).UTC(), Latency: 120 * time.Millisecond}
	reply := &trace.Call{ID: "c2", Path: "reply", PredictorType: "ChainOfThought", Adapter: "chat",
		Inputs: sig.NewMap("question", q, "intent", "account"), Outputs: sig.NewMap("reasoning", "r", "reply", a), History: hist,
		Messages:   lm.MessagesOf(append(msgs[:len(msgs):len(msgs)], lm.Message{Role: "user", Content: "intent: account"})),
		Completion: "[[ ## reasoning ## ]]\nr\n\n[[ ## reply ## ]]\n" + a + "\n\n[[ ## completed ## ]]",
		Usage:      lm.Usage{TotalTokens: 80}, Started: time.Unix(int64(1000+i), 5e8).UTC(), Latency: 300 * time.Millisecond}
	if i == 1 {
		reply.Children = []*trace.Call{{ID: "c3", Path: "reply.lookup", PredictorType: "Predict", Inputs: sig.NewMap("q", q),
			Error: "timeout", Messages: lm.MessagesOf([]lm.Message{{Role: "user", Content: "lookup"}}), Started: time.Unix(1001, 6e8).UTC()}}
	}
	return &trace.Turn{Index: i, Inputs: sig.NewMap("question", q), Outputs: sig.NewMap("reasoning", "r", "reply", a, "n", int64(i), "f", 1.0),
		Score: &score, Calls: []*trace.Call{classify, reply}}
}

func sampleSource(t *testing.T) (*storage.Store, *Source) {
	t.Helper()
	ctx := context.Background()
	s, err := storage.Open(ctx, filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.CreateConversation(ctx, storage.NewConversation{ID: "c", Title: "Support chat", Agent: "support"}); err != nil {
		t.Fatal(err)
	}
	var prev []*trace.Turn
	for i := 0; i < 3; i++ {
		tr := sampleTurn(i, prev)
		if _, err := s.AppendTurn(ctx, "c", storage.MainBranch, tr); err != nil {
			t.Fatal(err)
		}
		prev = append(prev, tr)
	}
	src, err := Load(ctx, s, "c", storage.MainBranch)
	if err != nil {
		t.Fatal(err)
	}
	return s, src
}

// allTurns reads every turn of src.
func allTurns(t *testing.T, src *Source) []*trace.Turn {
	t.Helper()
	var out []*trace.Turn
	if err := src.Each(func(tr *trace.Turn) error { out = append(out, tr); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSessionJSONRoundTrip(t *testing.T) {
	_, src := sampleSource(t)
	var buf bytes.Buffer
	if err := Write(&buf, "session-json", src, Options{}); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	// The Python keys, in the library's order, json.dump(indent=2) spelling.
	wantPrefix := "{\n  \"version\": 2,\n  \"history_field\": \"history\",\n  \"max_turns\": null,\n  \"max_stored_turns\": null,\n" +
		"  \"copy_mode\": \"deep\",\n  \"exclude_fields\": [\n    \"history\"\n  ],\n  \"history_input_fields\": null,\n" +
		"  \"history_policy\": \"override\",\n  \"turns\": [\n    {\n      \"index\": 0,"
	if !strings.HasPrefix(text, wantPrefix) {
		t.Fatalf("session-json starts:\n%s", text[:min(len(text), 400)])
	}
	if !json.Valid(buf.Bytes()) {
		t.Fatal("not valid JSON")
	}
	f, err := savefile.Decode(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 2 || len(f.Turns) != 3 || f.L2Memory != "" || f.InitialHistory != nil {
		t.Fatalf("parsed: %+v", f)
	}
	stored := allTurns(t, src)
	for i, tr := range f.Turns {
		tr := tr.Turn
		if !tr.Inputs.Equal(stored[i].Inputs) || !tr.Outputs.Equal(stored[i].Outputs) || *tr.Score != *stored[i].Score {
			t.Errorf("turn %d differs: %v %v", i, tr.Inputs, tr.Outputs)
		}
	}
	if v, _ := f.Turns[2].Turn.Outputs.Get("f"); v != 1.0 {
		t.Errorf("float kind lost: %T", v)
	}
	// node_states: one child session per predictor path, failed calls excluded.
	cl, rp := f.Node("classify"), f.Node("reply")
	if cl == nil || rp == nil || len(cl.Turns) != 3 || f.Node("reply.lookup") != nil {
		t.Fatalf("node states: %v", f.Nodes)
	}
	if v, _ := cl.Raw.Get("version"); v != int64(1) || cl.Turns[2].Snapshot == nil || len(cl.Turns[2].Snapshot.Messages) != 2 {
		t.Errorf("child snapshot: %+v", cl.Turns[2])
	}
	if _, err := savefile.Decode([]byte(`{"version": 3}`)); err == nil || !strings.Contains(err.Error(), "unsupported session state version: 3") {
		t.Errorf("version 3: %v", err)
	}
	if _, err := savefile.Decode([]byte(`{"version": 2, "turns": [1]}`)); err == nil || !strings.Contains(err.Error(), "$.turns[0]: is an int") {
		t.Errorf("bad turn: %v", err)
	}
}

func lines(t *testing.T, format string, src *Source, o Options) []map[string]any {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, format, src, o); err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s line %q: %v", format, l, err)
		}
		out = append(out, m)
	}
	return out
}

func TestExamplesAndCalls(t *testing.T) {
	_, src := sampleSource(t)
	ex := lines(t, "examples", src, Options{})
	if len(ex) != 3 {
		t.Fatalf("%d turn examples", len(ex))
	}
	h := ex[2]["history"].(map[string]any)["messages"].([]any)
	if len(h) != 2 || h[1].(map[string]any)["question"] != "It says password expired" || h[1].(map[string]any)["reply"] != "Reset it at /reset." {
		t.Errorf("derived history: %v", h)
	}
	if keys := ex[0]["_input_keys"].([]any); len(keys) != 2 || keys[0] != "question" || keys[1] != "history" {
		t.Errorf("input keys %v", keys)
	}
	cex := lines(t, "examples", src, Options{Path: "reply"})
	if len(cex) != 3 || cex[1]["intent"] != "account" || cex[1]["reply"] != "Reset it at /reset." {
		t.Errorf("call-level examples: %v", cex)
	}
	if err := Write(&bytes.Buffer{}, "examples", src, Options{Path: "nope"}); err == nil {
		t.Error("examples of an unknown path succeeded")
	}

	calls := lines(t, "calls", src, Options{})
	if len(calls) != 7 {
		t.Fatalf("%d call lines, want 7", len(calls))
	}
	var child map[string]any
	for _, c := range calls {
		if c["id"] == "c3" {
			child = c
		}
	}
	if child == nil || child["parent"] != "c2" || child["depth"] != 1.0 || child["error"] != "timeout" {
		t.Errorf("nested call line: %v", child)
	}

	oa := lines(t, "openai-jsonl", src, Options{})
	if len(oa) != 6 {
		t.Fatalf("%d openai lines, want 6 (failed call skipped)", len(oa))
	}
	msgs := oa[5]["messages"].([]any)
	orig := allTurns(t, src)[2].Calls[1]
	if len(msgs) != orig.Messages.Len()+1 || msgs[len(msgs)-1].(map[string]any)["content"] != orig.Completion ||
		msgs[0].(map[string]any)["content"] != orig.Messages.At(0).Content {
		t.Errorf("openai line: %v", msgs)
	}
	if only := lines(t, "openai-jsonl", src, Options{Path: "classify"}); len(only) != 3 {
		t.Errorf("openai --path classify: %d", len(only))
	}
}

func TestMarkdownAndUnknownFormat(t *testing.T) {
	_, src := sampleSource(t)
	var buf bytes.Buffer
	if err := Write(&buf, "markdown", src, Options{}); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	for _, want := range []string{"# Support chat\n", "## Turn 2\n", "**question**: Thanks <3 & bye", "**reply**: You're welcome!",
		"score: 1.0", "  - `reply.lookup` Predict, 0 tokens, 0s — error: timeout"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if err := Write(&buf, "yaml", src, Options{}); err == nil || !strings.Contains(err.Error(), "unknown export format") {
		t.Errorf("unknown format: %v", err)
	}
}
