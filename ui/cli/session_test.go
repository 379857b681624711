package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/savefile"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
)

func seedDB(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cli.db")
	s, err := storage.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateConversation(ctx, storage.NewConversation{ID: "conv1", Title: "Login help", Agent: "support",
		Metadata: map[string]any{"user": "u1"}}); err != nil {
		t.Fatal(err)
	}
	for i, q := range []string{"I can't log in", "password expired", "thanks"} {
		c := &trace.Call{ID: "c1", Path: "reply", PredictorType: "Predict", Inputs: sig.NewMap("question", q),
			Outputs: sig.NewMap("reply", "answer "+q), Messages: lm.MessagesOf([]lm.Message{{Role: "system", Content: "sys"}, {Role: "user", Content: q}}),
			Completion: "[[ ## reply ## ]]\nanswer " + q}
		score := float64(i) / 2
		if _, err := s.AppendTurn(ctx, "conv1", storage.MainBranch, &trace.Turn{Inputs: sig.NewMap("question", q),
			Outputs: sig.NewMap("reply", "answer "+q), Score: &score, Calls: []*trace.Call{c}}); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func runStoreCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), Env{Args: args, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

func TestSessionCommands(t *testing.T) {
	db := seedDB(t)
	steps := []struct {
		args     []string
		code     int
		contains string // in stdout (or stderr when code != 0)
	}{
		{[]string{"session", "ls", "--db", db}, 0, "conv1"},
		{[]string{"session", "show", "conv1", "--db", db}, 0, "turns on main:"},
		{[]string{"session", "show", "conv1", "--tree", "--db", db}, 0,
			"\n▼ [Turn 2] support\n  Inputs: question=\"thanks\"\n  └─ reply (Predict)  → reply=\"answer thanks\"\n  Outputs: reply=\"answer thanks\"\n"},
		{[]string{"session", "fork", "conv1", "--at", "1", "--name", "alt", "--db", db}, 0, `forked "alt" from "main" at turn 1: 2 shared turns`},
		{[]string{"session", "fork", "conv1", "--at", "9", "--name", "bad", "--db", db}, 1, "out of range (0-2)"},
		{[]string{"session", "fork", "conv1", "--name", "x", "--db", db}, 2, "--at N"},
		{[]string{"session", "fork", "--db", db, "conv1", "--at", "0", "--name", "alt2", "--from", "alt"}, 0, `forked "alt2" from "alt"`},
		{[]string{"session", "branches", "conv1", "--db", db}, 0, "alt2"},
		{[]string{"session", "rm-branch", "conv1", "alt", "--db", db}, 1, "delete children first: alt2"},
		{[]string{"session", "rm-branch", "conv1", "main", "--db", db}, 1, "cannot delete the 'main' branch"},
		{[]string{"session", "undo", "conv1", "--steps", "2", "--db", db}, 0, `undid 2 turns on "main": now 1 turn, 2 to redo`},
		{[]string{"session", "redo", "conv1", "--db", db}, 0, `redid 1 turn on "main": now 2 turns, 1 to redo`},
		{[]string{"session", "undo", "conv1", "--steps", "0", "--db", db}, 2, "--steps must be at least 1"},
		{[]string{"session", "status", "conv1", "completed", "--db", db}, 0, "conv1 is now completed"},
		{[]string{"session", "status", "conv1", "in_progress", "--db", db}, 1, "cannot go from completed to in_progress"},
		{[]string{"session", "status", "conv1", "done", "--db", db}, 2, `unknown conversation status "done" (want one of in_progress, completed, needs_human, failed, cancelled)`},
		{[]string{"session", "rm-branch", "conv1", "alt", "--recursive", "--db", db}, 0, "deleted branch(es): alt2, alt"},
		{[]string{"session", "pending", "--db", db}, 0, "no in-flight turns"},
		{[]string{"session", "show", "nope", "--db", db}, 1, `conversation "nope": not found`},
		{[]string{"session", "frobnicate", "--db", db}, 2, "unknown subcommand"},
		{[]string{"session", "show", "--db", db}, 2, "want 1 argument(s) (ID), got 0"},
		{[]string{"session", "rm", "conv1", "--db", db}, 0, "deleted conversation conv1"},
		{[]string{"session", "ls", "--db", db}, 0, "no conversations"},
	}
	for _, st := range steps {
		code, out, errs := runStoreCmd(t, st.args...)
		text := out
		if st.code != 0 {
			text = errs
		}
		if code != st.code || !strings.Contains(text, st.contains) {
			t.Fatalf("%v: exit %d, want %d with %q\nstdout: %s\nstderr: %s", st.args, code, st.code, st.contains, out, errs)
		}
	}
}

func TestSessionJSONOutput(t *testing.T) {
	db := seedDB(t)
	code, out, errs := runStoreCmd(t, "session", "ls", "--json", "--db", db)
	if code != 0 {
		t.Fatal(errs)
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 1 || list[0]["id"] != "conv1" || list[0]["main_turns"] != 3.0 {
		t.Fatalf("ls --json: %v %s", err, out)
	}
	code, out, _ = runStoreCmd(t, "session", "show", "conv1", "--json", "--db", db)
	var show struct {
		Conversation storage.Conversation `json:"conversation"`
		Turns        []storage.TurnNode   `json:"turns"`
		Branches     []storage.Branch     `json:"branches"`
	}
	if err := json.Unmarshal([]byte(out), &show); code != 0 || err != nil || len(show.Turns) != 3 || show.Conversation.Metadata["user"] != "u1" || len(show.Branches) != 1 {
		t.Fatalf("show --json: %v %s", err, out)
	}
	code, out, _ = runStoreCmd(t, "session", "undo", "conv1", "--json", "--db", db)
	var undo struct {
		Turns  []string       `json:"turns"`
		Branch storage.Branch `json:"branch"`
	}
	if err := json.Unmarshal([]byte(out), &undo); code != 0 || err != nil || len(undo.Turns) != 1 || undo.Branch.Length != 2 || undo.Branch.Redo != 1 {
		t.Fatalf("undo --json: %v %s", err, out)
	}
}

func TestExportCommand(t *testing.T) {
	db := seedDB(t)
	code, out, errs := runStoreCmd(t, "export", "conv1", "--format", "session-json", "--db", db)
	if code != 0 {
		t.Fatal(errs)
	}
	f, err := savefile.Decode([]byte(out))
	if err != nil || len(f.Turns) != 3 || f.Turns[1].Turn.Inputs.String("question") != "password expired" {
		t.Fatalf("exported session-json: %v %s", err, out)
	}
	code, out, _ = runStoreCmd(t, "export", "--db", db, "conv1", "--format", "openai-jsonl")
	if ls := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(ls) != 3 ||
		ls[0] != `{"messages":[{"role":"system","content":"sys"},{"role":"user","content":"I can't log in"},{"role":"assistant","content":"[[ ## reply ## ]]\nanswer I can't log in"}]}` {
		t.Fatalf("openai-jsonl: %s", out)
	}
	outFile := filepath.Join(t.TempDir(), "t.md")
	if code, _, errs := runStoreCmd(t, "export", "conv1", "--format", "markdown", "--out", outFile, "--db", db); code != 0 {
		t.Fatal(errs)
	}
	md, _ := os.ReadFile(outFile)
	if !strings.Contains(string(md), "# Login help") {
		t.Errorf("markdown file: %s", md)
	}
	if st, _ := os.Stat(outFile); st.Mode().Perm() != 0o600 {
		t.Errorf("export file mode %v", st.Mode().Perm())
	}
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"export", "conv1", "--db", db}, 2, "--format must be one of"},
		{[]string{"export", "conv1", "--format", "xml", "--db", db}, 2, "--format must be one of"},
		{[]string{"export", "--format", "calls", "--db", db}, 2, "want one conversation ID"},
		{[]string{"export", "nope", "--format", "calls", "--db", db}, 1, "not found"},
		{[]string{"export", "conv1", "--format", "calls", "--branch", "zz", "--db", db}, 1, `branch "zz" not found`},
	}
	for _, tc := range cases {
		code, _, errs := runStoreCmd(t, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.msg) {
			t.Errorf("%v: exit %d %q, want %d %q", tc.args, code, errs, tc.code, tc.msg)
		}
	}
}

func TestSessionRefusesForeignFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(p, []byte("not a database at all, just some text that is long enough"), 0o644)
	code, _, errs := runStoreCmd(t, "session", "ls", "--db", p)
	if code != 1 || !strings.Contains(errs, "not a SQLite file") {
		t.Errorf("exit %d: %s", code, errs)
	}
}

// 'session show --tree' marks attempts as the workbench's call tree does: each
// attempt's calls under a line of it, the best starred, and attempts that made no model
// call (a tool step) as lines of their own.
func TestSessionShowTreeMarksAttempts(t *testing.T) {
	db := runIsolated(t)
	agent := writeFile(t, "tools.toml", `name = "tools"
inputs = ["task"]
outputs = ["answer", "result"]
[[predictors]]
name = "answerer"
signature = "task, result -> answer"
[[steps]]
name = "compute"
tool = "calculator"
inputs = { expression = "1-1" }
max_retries = 2
retry_until = "result"
[[steps]]
name = "answer"
predictor = "answerer"
`)
	for _, tc := range []struct {
		agent string
		want  []string
	}{
		{"RetryAgent", []string{"  ├─ attempt 1 of attempt  score 0.3\n  │  ├─ planner (ChainOfThought)", "  │  └─ validator (Predict)",
			"  └─ attempt 2 of attempt  score 0.9  ★ best\n     ├─ planner (ChainOfThought)"}},
		{agent, []string{"  ├─ attempt 1 of compute  score 0  ★ best  (no model calls)\n  ├─ attempt 2 of compute  score 0  (no model calls)\n  └─ answerer (Predict)"}},
	} {
		code, out, errs := runMain(context.Background(), "run", "--agent", tc.agent, "--input", "task=Plan a team offsite", "--db", db)
		if code != 0 {
			t.Fatalf("run %s: exit %d %s", tc.agent, code, errs)
		}
		code, out, errs = runMain(context.Background(), "session", "show", convIDOf(t, out), "--tree", "--db", db)
		for _, want := range tc.want {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("%s: session show --tree lacks %q (exit %d %s):\n%s", tc.agent, want, code, errs, out)
			}
		}
	}
}
