package cli

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/savefile"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/demo"
	"github.com/sessionbench/sessionbench/llm"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/storage/export"
)

// importFile imports path and returns the new conversation id (from --json).
func importFile(t *testing.T, db, path string, extra ...string) (string, map[string]any) {
	t.Helper()
	code, out, errs := runMain(context.Background(), append([]string{"import", path, "--json", "--db", db}, extra...)...)
	if code != 0 {
		t.Fatalf("import %s: exit %d: %s", path, code, errs)
	}
	var sum map[string]any
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("import --json: %v\n%s", err, out)
	}
	return sum["conversation"].(string), sum
}

func exportJSON(t *testing.T, db, id string) string {
	t.Helper()
	code, out, errs := runMain(context.Background(), "export", id, "--format", "session-json", "--db", db)
	if code != 0 {
		t.Fatalf("export %s: exit %d: %s", id, code, errs)
	}
	return out
}

var exportedID = regexp.MustCompile(`"conversation": "[^"]*"`)

// TestImportRoundTrip runs turns with `run`, exports them, imports the export and exports
// again. The two exports must be byte-equal except for the conversation id (an import
// makes a new conversation): the file carries every call record, time, score and the
// conversation's title, agent, status and metadata, so nothing is lost on the way.
func TestImportRoundTrip(t *testing.T) {
	db := runIsolated(t)
	script := writeFile(t, "s.jsonl", "{\"question\": \"I can't log in\"}\n{\"question\": \"It says password expired\"}\n{\"question\": \"thanks\"}\n")
	code, _, errs := runMain(context.Background(), "run", "--agent", "SupportAgent", "--script", script, "--title", "Login help", "--db", db)
	if code != 0 {
		t.Fatal(errs)
	}
	id := convIDOf(t, errs)
	s := openStore(t, db)
	ctx := context.Background()
	if err := s.SetMetadata(ctx, id, map[string]any{"user": "u1", "tags": []any{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	first := exportJSON(t, db, id)
	file := writeFile(t, "conv.json", first)
	newID, sum := importFile(t, db, file)
	if newID == id || sum["turns"] != 3.0 || sum["calls"] != 6.0 || sum["agent"] != "SupportAgent" || sum["title"] != "Login help" || sum["version"] != 2.0 {
		t.Fatalf("summary: %v", sum)
	}
	second := exportJSON(t, db, newID)
	if exportedID.ReplaceAllString(first, "") != exportedID.ReplaceAllString(second, "") {
		t.Errorf("re-export differs:\n--- first\n%s\n--- second\n%s", first, second)
	}
	if !strings.Contains(second, `"conversation": "`+newID+`"`) {
		t.Error("re-export does not name the new conversation")
	}
	// The engine loads the export too, call records included (same extension shape as Save).
	ag, _ := demo.Lookup("SupportAgent")
	mod, opts, _ := ag.Build()
	loaded, err := core.Load([]byte(first), mod, opts)
	if err != nil {
		t.Fatal(err)
	}
	if lt := loaded.Turns(); len(lt) != 3 || len(lt[2].Calls) != 2 || lt[2].Calls[1].Path != "respond" || lt[2].Calls[1].Completion == "" {
		t.Errorf("core.Load of the export: %d turns", len(lt))
	}
	// The imported conversation can be continued: its predictors' memories come back.
	code, out, errs := runMain(ctx, "run", "--conversation", newID, "--input", "question=one more", "--json", "--db", db)
	if code != 0 {
		t.Fatal(errs)
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(out), &line); err != nil || line["index"] != 3.0 {
		t.Fatalf("continued: %v %s", err, out)
	}
	turns, _ := s.LoadBranch(ctx, newID, storage.MainBranch)
	if h := turns[3].Calls[0].History.Messages; len(h) != 3 {
		t.Errorf("classify saw %d earlier calls after import, want 3", len(h))
	}
}

// A version 1 file as dspy-session's SessionState.to_dict writes it: snapshots on every
// turn, a child state with its own memory.
const v1File = `{
  "version": 1,
  "turns": [
    {"index": 0, "inputs": {"question": "Q1"}, "outputs": {"answer": "A1"}, "history_snapshot": {"messages": []}, "score": null},
    {"index": 1, "inputs": {"question": "Q2"}, "outputs": {"answer": "A2"},
     "history_snapshot": {"messages": [{"question": "Q1", "answer": "A1"}]}, "score": 0.5},
    {"index": 2, "inputs": {"question": "Q3"}, "outputs": {"answer": "A3"},
     "history_snapshot": {"messages": [{"question": "Given", "answer": "by the caller"}]}, "score": 1}
  ],
  "initial_history": null,
  "l2_memory": "",
  "node_states": {
    "worker": {"version": 1, "turns": [
      {"index": 0, "inputs": {"task": "t1"}, "outputs": {"result": "r1"}, "history_snapshot": {"messages": []}, "score": null},
      {"index": 1, "inputs": {"task": "t2"}, "outputs": {"result": "r2"}, "history_snapshot": {"messages": [{"task": "t1", "result": "r1"}]}, "score": null},
      {"index": 2, "inputs": {"task": "t3"}, "outputs": {"result": "r3"}, "history_snapshot": {"messages": [{"task": "t2", "result": "r2"}]}, "score": 0.25}
    ], "initial_history": null, "l2_memory": "worker notes", "node_states": {}}
  }
}`

func TestImportVersion1(t *testing.T) {
	db := runIsolated(t)
	ctx := context.Background()
	code, out, errs := runMain(ctx, "import", writeFile(t, "old-session.json", v1File), "--agent", "SupportAgent", "--db", db)
	if code != 0 {
		t.Fatal(errs)
	}
	id := strings.TrimSpace(out)
	if !strings.Contains(errs, "dspy-session version 1): 3 turns, 3 call records") || !strings.Contains(errs, "1 per outer turn") {
		t.Errorf("stderr: %s", errs)
	}
	s := openStore(t, db)
	c, err := s.Conversation(ctx, id)
	if err != nil || c.Title != "old-session" || c.Agent != "SupportAgent" {
		t.Fatalf("conversation %+v %v", c, err)
	}
	turns, err := s.LoadBranch(ctx, id, storage.MainBranch)
	if err != nil || len(turns) != 3 {
		t.Fatalf("%v %d turns", err, len(turns))
	}
	// Snapshots the file's settings derive are not stored again; the caller-given one is.
	if turns[0].Explicit || turns[1].Explicit || !turns[2].Explicit || turns[2].History.Messages[0].String("question") != "Given" {
		t.Errorf("explicit flags: %v %v %v", turns[0].Explicit, turns[1].Explicit, turns[2].Explicit)
	}
	if *turns[1].Score != 0.5 || *turns[2].Score != 1 || turns[0].Score != nil {
		t.Errorf("scores lost")
	}
	w := turns[2].Calls
	if len(w) != 1 || w[0].Path != "worker" || w[0].Inputs.String("task") != "t3" || len(w[0].History.Messages) != 1 || *w[0].Score != 0.25 {
		t.Errorf("child turn as call: %+v", w)
	}
	// Exported again: the same turns, the child state with its memory, the explicit snapshot.
	f, err := savefile.Decode([]byte(exportJSON(t, db, id)))
	if err != nil {
		t.Fatal(err)
	}
	orig, _ := savefile.Decode([]byte(v1File))
	for i, e := range f.Turns {
		tr, o := e.Turn, orig.Turns[i].Turn
		if !tr.Inputs.Equal(o.Inputs) || !tr.Outputs.Equal(o.Outputs) || !py.Same(scoreOf(tr), scoreOf(o)) {
			t.Errorf("turn %d: %v %v", i, tr.Inputs, tr.Outputs)
		}
	}
	if !f.Turns[2].Turn.Explicit || f.Turns[1].Turn.Explicit {
		t.Errorf("explicit snapshot not carried")
	}
	ws, ow := f.Node("worker"), orig.Node("worker")
	if ws == nil || ws.L2Memory != "worker notes" || !py.Same(ws.Raw, ow.Raw) {
		t.Errorf("worker state:\n%s\nwant\n%s", py.CompactJSON(ws.Raw), py.CompactJSON(ow.Raw))
	}
}

func scoreOf(t *trace.Turn) any {
	if t.Score == nil {
		return nil
	}
	return *t.Score
}

// A version 2 file as Session.save writes it, with settings that differ from the
// defaults, a child with two turns per outer turn, a child whose turns cannot be matched
// to outer turns, and a key the library does not define.
const v2File = `{
  "version": 2,
  "history_field": "history",
  "max_turns": 4,
  "max_stored_turns": null,
  "copy_mode": "deep",
  "exclude_fields": ["history", "context"],
  "history_input_fields": null,
  "history_policy": "use_if_provided",
  "turns": [
    {"index": 0, "inputs": {"question": "Q1", "context": "docs"}, "outputs": {"answer": "A1", "n": 1, "f": 2.0}, "score": null},
    {"index": 1, "inputs": {"question": "Q2", "context": "docs"}, "outputs": {"answer": "A2", "n": 2, "f": 0.5}, "score": 0.75}
  ],
  "initial_history": {"messages": [{"question": "Hi", "answer": "Hello"}]},
  "l2_memory": "",
  "node_states": {
    "classify": {"version": 1, "turns": [
      {"index": 0, "inputs": {"q": "a"}, "outputs": {"k": "x"}, "history_snapshot": {"messages": []}, "score": null},
      {"index": 1, "inputs": {"q": "b"}, "outputs": {"k": "y"}, "history_snapshot": {"messages": [{"q": "a", "k": "x"}]}, "score": null},
      {"index": 2, "inputs": {"q": "c"}, "outputs": {"k": "z"}, "history_snapshot": {"messages": [{"q": "a", "k": "x"}, {"q": "b", "k": "y"}]}, "score": null},
      {"index": 3, "inputs": {"q": "d"}, "outputs": {"k": "w"}, "history_snapshot": {"messages": []}, "score": null}
    ], "initial_history": null, "l2_memory": "", "node_states": {}},
    "odd": {"version": 1, "turns": [
      {"index": 0, "inputs": {"q": "a"}, "outputs": {"k": "x"}, "history_snapshot": {"messages": []}, "score": null},
      {"index": 1, "inputs": {"q": "b"}, "outputs": {"k": "y"}, "history_snapshot": {"messages": []}, "score": null},
      {"index": 2, "inputs": {"q": "c"}, "outputs": {"k": "z"}, "history_snapshot": {"messages": []}, "score": null}
    ], "initial_history": null, "l2_memory": "", "node_states": {}}
  },
  "app_version": "1.2"
}`

// TestImportVersion2 checks that every Python key survives import and export: the
// re-export equals the original key by key (semantically: key order of node_states and
// our extension keys aside).
func TestImportVersion2(t *testing.T) {
	db := runIsolated(t)
	id, sum := importFile(t, db, writeFile(t, "py.json", v2File), "--title", "From Python")
	notes, _ := json.Marshal(sum["notes"])
	if sum["turns"] != 2.0 || sum["calls"] != 4.0 || sum["agent"] != "" || !strings.Contains(string(notes), `node_states[\"odd\"]: 3 turns cannot be matched`) {
		t.Errorf("summary: %v", sum)
	}
	s := openStore(t, db)
	turns, _ := s.LoadBranch(context.Background(), id, storage.MainBranch)
	if len(turns) != 2 || len(turns[1].Calls) != 2 || turns[1].Calls[0].Inputs.String("q") != "c" {
		t.Fatalf("two classify calls per turn: %+v", turns)
	}
	if v, _ := turns[0].Outputs.Get("f"); v != 2.0 {
		t.Errorf("float 2.0 came back as %T", v)
	}
	got, err := sig.DecodeJSON([]byte(exportJSON(t, db, id)))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := sig.DecodeJSON([]byte(v2File))
	gm, wm := got.(*sig.Map), want.(*sig.Map)
	for _, k := range wm.Keys() {
		g, _ := gm.Get(k)
		w, _ := wm.Get(k)
		if !py.Same(g, w) {
			t.Errorf("%s differs:\n got %s\nwant %s", k, py.CompactJSON(g), py.CompactJSON(w))
		}
	}
	// A conversation without an agent can be read but not continued.
	code, _, errs := runMain(context.Background(), "run", "--conversation", id, "--input", "question=x", "--db", db)
	if code != 2 || !strings.Contains(errs, "has no agent") {
		t.Errorf("continuing an agentless import: exit %d %s", code, errs)
	}
}

// TestImportSessionSave imports what the engine's own Session.Save writes.
func TestImportSessionSave(t *testing.T) {
	db := runIsolated(t)
	ag, _ := demo.Lookup("SupportAgent")
	mod, opts, err := ag.Build()
	if err != nil {
		t.Fatal(err)
	}
	sess, err := core.Sessionify(mod, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := core.WithLM(context.Background(), llm.NewDemo(llm.DemoOptions{Scripts: demo.Scripts()}))
	for _, q := range []string{"I was charged twice", "for March"} {
		if _, _, err := sess.Run(ctx, sig.NewMap("question", q)); err != nil {
			t.Fatal(err)
		}
	}
	var saved strings.Builder
	if err := sess.Save(&saved); err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, "saved.json", saved.String())
	id, sum := importFile(t, db, path, "--agent", "SupportAgent")
	if sum["calls"] != 4.0 || sum["agent"] != "SupportAgent" {
		t.Errorf("summary %v", sum)
	}
	turns, err := openStore(t, db).LoadBranch(context.Background(), id, storage.MainBranch)
	want := sess.Turns()
	if err != nil || len(turns) != len(want) {
		t.Fatalf("%v: %d turns, want %d", err, len(turns), len(want))
	}
	for i, tr := range turns {
		w := want[i]
		if !tr.Inputs.Equal(w.Inputs) || !tr.Outputs.Equal(w.Outputs) || len(tr.Calls) != len(w.Calls) || !tr.Started.Equal(w.Started) {
			t.Fatalf("turn %d differs: %v %v", i, tr, w)
		}
		for j, c := range tr.Calls {
			wc := w.Calls[j]
			if c.Path != wc.Path || c.Completion != wc.Completion || c.Messages.Len() != wc.Messages.Len() || c.Messages.At(0) != wc.Messages.At(0) ||
				!c.Outputs.Equal(wc.Outputs) || len(c.History.Messages) != len(wc.History.Messages) {
				t.Errorf("turn %d call %d differs:\n%+v\n%+v", i, j, c, wc)
			}
		}
	}
}

func TestImportRefusesBadFiles(t *testing.T) {
	db := runIsolated(t)
	dupCalls := `{"version": 2, "turns": [{"inputs": {}, "outputs": {}}], "sessionbench": {"turns": [{"calls": [{"id": "c1", "path": "a"}, {"id": "c1", "path": "b"}]}]}}`
	cases := []struct {
		name, text string
		args       []string
		msg        string
	}{
		{"syntax", "{\n  \"version\": 2,\n  \"turns\": [\n    {\"inputs\": {\"q\": \"a\"},}\n  ]\n}", nil, "line 4, column 27: not valid JSON"},
		{"truncated", `{"version": 2, "turns": [`, nil, "not valid JSON"},
		{"not an object", `[1]`, nil, "$: top level is a list, want an object"},
		{"no version", `{"turns": []}`, nil, `$: no "version" key`},
		{"version 3", `{"version": 3}`, nil, "$.version: unsupported session state version: 3 (want 1 or 2)"},
		{"inputs type", `{"version": 2, "turns": [{"inputs": {}}, {"inputs": "x"}]}`, nil, "$.turns[1].inputs: is a string, want an object"},
		{"child score", `{"version": 2, "node_states": {"w": {"version": 1, "turns": [{"score": "high"}]}}}`, nil, `$.node_states["w"].turns[0].score: is a string, want a number or null`},
		{"child version", `{"version": 2, "node_states": {"w": {"version": 7}}}`, nil, `$.node_states["w"].version: unsupported session state version: 7`},
		{"snapshot", `{"version": 1, "turns": [{"history_snapshot": {"msgs": []}}]}`, nil, `$.turns[0].history_snapshot: history object has no "messages" key`},
		{"ext count", `{"version": 2, "turns": [], "sessionbench": {"turns": [{}]}}`, nil, "$.sessionbench.turns: has 1 entries for 0 turns"},
		{"ext calls", `{"version": 2, "turns": [{}], "sessionbench": {"turns": [{"calls": [{"latency": "soon"}]}]}}`, nil, "$.sessionbench.turns[0].calls: not call records"},
		{"duplicate call ids", dupCalls, nil, `$.sessionbench.turns[0].calls: call id "c1" appears twice`},
		{"status", `{"version": 2, "x_sessionbench": {"status": "done"}}`, nil, "$.x_sessionbench.status"},
		{"agent mismatch", `{"version": 2, "x_sessionbench": {"agent": "RAGAgent"}}`, []string{"--agent", "SupportAgent"}, `recorded with agent "RAGAgent"; --agent "SupportAgent" disagrees`},
		{"unknown agent", `{"version": 2}`, []string{"--agent", "Nope"}, `no agent "Nope"`},
	}
	for _, tc := range cases {
		path := writeFile(t, "bad.json", tc.text)
		args := append([]string{"import", path, "--db", db}, tc.args...)
		code, _, errs := runMain(context.Background(), args...)
		if code != 2 || !strings.Contains(errs, tc.msg) || !strings.Contains(errs, path) && tc.args == nil {
			t.Errorf("%s: exit %d, want 2 with %q\nstderr: %s", tc.name, code, tc.msg, errs)
		}
	}
	if code, _, errs := runMain(context.Background(), "import", "--db", db); code != 2 || !strings.Contains(errs, "want one FILE") {
		t.Errorf("no file: %d %s", code, errs)
	}
	if code, _, errs := runMain(context.Background(), "import", filepath.Join(t.TempDir(), "none.json"), "--db", db); code != 2 || !strings.Contains(errs, "no such file") {
		t.Errorf("missing file: %d %s", code, errs)
	}
	// Nothing was written: the database was not even created.
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("refused imports touched the database: %v", err)
	}
}

// TestImportFailurePartWayLeavesNothing: an import is one transaction: a turn that
// storage refuses part-way (a call's parameters cannot be encoded) leaves no
// conversation, not the turns before it.
func TestImportFailurePartWayLeavesNothing(t *testing.T) {
	ctx := context.Background()
	f, err := savefile.Decode([]byte(v1File))
	if err != nil {
		t.Fatal(err)
	}
	im, err := export.BuildImport(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Turns) < 3 {
		t.Fatalf("fixture has %d turns, want 3 or more", len(im.Turns))
	}
	s := openStore(t, filepath.Join(t.TempDir(), "x.db"))
	nc := storage.NewConversation{Title: "x", Metadata: im.Metadata}
	bad := append([]*trace.Turn(nil), im.Turns...)
	broken := *bad[2]
	nan := math.NaN()
	broken.Calls = []*trace.Call{{ID: "c1", Path: "answer", Params: lm.Params{Temperature: &nan}}}
	bad[2] = &broken
	if _, err = s.ImportConversation(ctx, nc, bad, trace.StatusCompleted); err == nil || !strings.Contains(err.Error(), "call c1 params") {
		t.Fatalf("an unencodable turn: %v", err)
	}
	list, err := s.ListConversations(ctx)
	if err != nil || len(list) != 0 {
		t.Errorf("a failed import left %d conversation(s): %v", len(list), err)
	}
	// And with no failure the status recorded in the file is applied with the turns.
	c, err := s.ImportConversation(ctx, nc, im.Turns, trace.StatusCompleted)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != trace.StatusCompleted {
		t.Errorf("status %s", c.Status)
	}
	if turns, _ := s.LoadBranch(ctx, c.ID, storage.MainBranch); len(turns) != len(im.Turns) {
		t.Errorf("%d turns imported, want %d", len(turns), len(im.Turns))
	}
}
