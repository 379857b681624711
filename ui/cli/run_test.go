package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/demo"
	"github.com/sessionbench/sessionbench/llm"
	"github.com/sessionbench/sessionbench/storage"
)

// runIsolated gives a test an empty configuration (so the demo model answers at once)
// and a fresh database path.
func runIsolated(t *testing.T) string {
	t.Helper()
	dir := isolate(t)
	writeConfig(t, dir, "[demo]\ntoken_rate = 0\n")
	return filepath.Join(t.TempDir(), "run.db")
}

func runMain(ctx context.Context, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(ctx, Env{Args: args, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

var convIDPattern = regexp.MustCompile(`conversation (c-[0-9T]+-[0-9a-f]+)`)

func convIDOf(t *testing.T, text string) string {
	t.Helper()
	m := convIDPattern.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no conversation id in %q", text)
	}
	return m[1]
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func openStore(t *testing.T, db string) *storage.Store {
	t.Helper()
	s, err := storage.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestRunNewConversationThenContinue(t *testing.T) {
	db := runIsolated(t)
	code, out, errs := runMain(context.Background(), "run", "--agent", "SupportAgent", "--input", "question=I can't log in", "--db", db)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	id := convIDOf(t, out)
	for _, want := range []string{"(new) · agent SupportAgent · branch main", "turn 0 (id ", "> question: I can't log in", "< reply: ", "< intent: "} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "offline demo model") || !strings.Contains(errs, "--conversation "+id) {
		t.Errorf("stderr should name the demo model and how to continue:\n%s", errs)
	}

	// Continue it with --json: one object per turn on stdout, nothing else there.
	code, out, errs = runMain(context.Background(), "run", "--conversation", id, "--input", "question=It says password expired", "--json", "--db", db)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var line struct {
		Conversation, Branch, Turn, Source string
		Index                              int
		Inputs, Outputs                    map[string]any
		Calls                              int
		Usage                              struct {
			TotalTokens int `json:"total_tokens"`
		}
		LatencyMS *int64 `json:"latency_ms"`
	}
	if err := json.Unmarshal([]byte(out), &line); err != nil || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("--json output is not one object: %v\n%s", err, out)
	}
	if line.Conversation != id || line.Branch != "main" || line.Index != 1 || line.Turn == "" || line.Source != "--input" ||
		line.Inputs["question"] != "It says password expired" || line.Outputs["reply"] == nil || line.Calls != 2 ||
		line.Usage.TotalTokens == 0 || line.LatencyMS == nil {
		t.Errorf("json line: %+v", line)
	}

	s := openStore(t, db)
	turns, err := s.LoadBranch(context.Background(), id, "main")
	if err != nil || len(turns) != 2 || len(turns[1].Calls) != 2 {
		t.Fatalf("stored: %v %d turns", err, len(turns))
	}
	// The classifier kept its own history across the two runs (restored from storage).
	if h := turns[1].Calls[0].History.Messages; len(h) != 1 || h[0].String("question") != "I can't log in" {
		t.Errorf("second turn's classify history: %v", h)
	}
	c, _ := s.Conversation(context.Background(), id)
	if c.Title != "I can't log in" || c.Agent != "SupportAgent" {
		t.Errorf("conversation: %+v", c)
	}
}

func TestRunScript(t *testing.T) {
	db := runIsolated(t)
	script := writeFile(t, "turns.jsonl", "{\"question\": \"I can't log in\"}\n\n{\"question\": \"It says password expired\"}\n{\"question\": \"thanks\"}\n")
	code, out, errs := runMain(context.Background(), "run", "--agent", "supportagent", "--script", script, "--branch", "trial", "--title", "Scripted", "--json", "--db", db)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d json lines, want 3:\n%s", len(lines), out)
	}
	for i, l := range lines {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatal(err)
		}
		wantSrc := fmt.Sprintf("%s:%d", script, []int{1, 3, 4}[i])
		if v["index"] != float64(i) || v["source"] != wantSrc || v["branch"] != "trial" {
			t.Errorf("line %d: %v", i, v)
		}
	}
	id := convIDOf(t, errs)
	s := openStore(t, db)
	c, _ := s.Conversation(context.Background(), id)
	b, err := s.Branch(context.Background(), id, "trial")
	if c == nil || c.Title != "Scripted" || err != nil || b.Length != 3 {
		t.Errorf("conversation %+v, branch %+v, %v", c, b, err)
	}
}

func TestRunInputErrors(t *testing.T) {
	db := runIsolated(t)
	badJSON := writeFile(t, "bad.jsonl", "{\"question\": \"a\"}\n{\"question\": \"b\",}\n")
	unknown := writeFile(t, "unknown.jsonl", "{\"question\": \"a\"}\n{\"text\": \"b\"}\n")
	notObj := writeFile(t, "list.jsonl", "[1, 2]\n")
	wrongType := writeFile(t, "type.jsonl", "{\"question\": 3}\n")
	empty := writeFile(t, "empty.jsonl", "\n\n")
	agentFile := writeFile(t, "broken.toml", "name = \"x\"\ninputs = [\"q\"]\nbogus = 1\n")
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--agent", "Nope", "--input", "q=1"}, 2, `no agent "Nope" (agents: SupportAgent,`},
		{[]string{"--agent", "SupportAgent", "--input", "q=1"}, 2, `unknown input field "q" (SupportAgent takes: question (str))`},
		{[]string{"--agent", "SupportAgent", "--input", "question=a", "--input", "question=b"}, 2, "--input question given twice"},
		{[]string{"--agent", "CorrectThenTranslate", "--input", "question=a"}, 2, `unknown input field "question" (CorrectThenTranslate takes: text (str))`},
		{[]string{"--agent", "SupportAgent"}, 2, "nothing to run"},
		{[]string{"--input", "question=a"}, 2, "--agent is required"},
		{[]string{"--agent", "SupportAgent", "--input", "question=a", "--script", badJSON}, 2, "either --input or --script"},
		{[]string{"--agent", "SupportAgent", "--input", "noequals"}, 2, "want NAME=VALUE"},
		{[]string{"--agent", "SupportAgent", "extra", "--input", "question=a"}, 2, `unexpected argument "extra"`},
		{[]string{"--agent", "SupportAgent", "--script", badJSON}, 2, badJSON + ":2: column 18: not valid JSON"},
		{[]string{"--agent", "SupportAgent", "--script", unknown}, 2, unknown + `:2: unknown input field "text"`},
		{[]string{"--agent", "SupportAgent", "--script", notObj}, 2, notObj + ":1: is a list, want a JSON object"},
		{[]string{"--agent", "SupportAgent", "--script", wrongType}, 2, wrongType + `:1: input "question" (str): is an int, want a string`},
		{[]string{"--agent", "SupportAgent", "--script", empty}, 2, "has no lines to run"},
		{[]string{"--agent", "SupportAgent", "--script", filepath.Join(t.TempDir(), "missing.jsonl")}, 2, "no such file"},
		{[]string{"--agent", agentFile, "--input", "q=1"}, 2, "unknown key"},
		{[]string{"--agent", "SupportAgent", "--input", "question=a", "--branch", " "}, 2, "--branch: branch name is empty"},
		{[]string{"--conversation", "nope", "--input", "question=a"}, 1, "no database at " + db},
	}
	for _, tc := range cases {
		args := append(append([]string{"run"}, tc.args...), "--db", db)
		code, _, errs := runMain(context.Background(), args...)
		if code != tc.code || !strings.Contains(errs, tc.msg) {
			t.Errorf("%v: exit %d, want %d with %q\nstderr: %s", tc.args, code, tc.code, tc.msg, errs)
		}
	}
	// None of the refused runs created the database.
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Fatalf("refused runs created %s: %v", db, err)
	}
	// With a database, an unknown conversation is not found, and nothing is written.
	s := openStore(t, db)
	code, _, errs := runMain(context.Background(), "run", "--conversation", "nope", "--input", "question=a", "--db", db)
	if code != 1 || !strings.Contains(errs, `conversation "nope": not found`) {
		t.Errorf("unknown conversation: exit %d %s", code, errs)
	}
	if list, err := s.ListConversations(context.Background()); err != nil || len(list) != 0 {
		t.Errorf("refused runs left conversations: %v %v", list, err)
	}
}

func TestRunContinueChecksAgentAndBranch(t *testing.T) {
	db := runIsolated(t)
	code, out, errs := runMain(context.Background(), "run", "--agent", "SupportAgent", "--input", "question=hi", "--db", db)
	if code != 0 {
		t.Fatal(errs)
	}
	id := convIDOf(t, out)
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--conversation", id, "--agent", "RAGAgent", "--input", "question=a"}, 2, `belongs to agent "SupportAgent", not "RAGAgent"`},
		{[]string{"--conversation", id, "--branch", "zz", "--input", "question=a"}, 1, `branch "zz" not found`},
		{[]string{"--conversation", id, "--input", "text=a"}, 2, `unknown input field "text"`},
	}
	for _, tc := range cases {
		args := append(append([]string{"run"}, tc.args...), "--db", db)
		code, _, errs := runMain(context.Background(), args...)
		if code != tc.code || !strings.Contains(errs, tc.msg) {
			t.Errorf("%v: exit %d, want %d with %q\nstderr: %s", tc.args, code, tc.code, tc.msg, errs)
		}
	}
}

// chatServer is an OpenAI-compatible server answering every completion request with
// answer(n), n counting them from 1, streamed or not as asked; other requests (the
// HEAD a run sends to open its connection early) are not found.
func chatServer(t *testing.T, answer func(n int64, w http.ResponseWriter, r *http.Request) (string, bool)) *httptest.Server {
	t.Helper()
	var n atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Stream bool `json:"stream"`
		}
		_ = json.Unmarshal(body, &req)
		text, ok := answer(n.Add(1), w, r)
		if !ok {
			return
		}
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"x","object":"chat.completion","model":"test-model","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`, text)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", text)
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5,\"total_tokens\":15}}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(s.Close)
	return s
}

// supportAnswer fills both SupportAgent signatures (extra sections are ignored).
const supportAnswer = "[[ ## intent ## ]]\ntechnical\n\n[[ ## reasoning ## ]]\nA login problem.\n\n[[ ## reply ## ]]\nTry a reset.\n\n[[ ## completed ## ]]"

func TestRunFailingTurnKeepsEarlierTurns(t *testing.T) {
	script := "{\"question\": \"one\"}\n{\"question\": \"two\"}\n{\"question\": \"three\"}\n"
	cases := []struct {
		name string
		fail func(w http.ResponseWriter) (string, bool)
		msg  string
	}{
		{"model error", func(w http.ResponseWriter) (string, bool) {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"message":"context length exceeded","type":"invalid_request_error"}}`)
			return "", false
		}, "context length exceeded"},
		{"parse error", func(w http.ResponseWriter) (string, bool) { return "I am not following the format", true }, "failed to parse"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := runIsolated(t)
			// Two calls per turn: requests 1-4 serve turns one and two, then the model fails
			// (turn three's classify call, request 5).
			srv := chatServer(t, func(n int64, w http.ResponseWriter, _ *http.Request) (string, bool) {
				if n <= 4 {
					return supportAnswer, true
				}
				return tc.fail(w)
			})
			path := writeFile(t, "s.jsonl", script)
			code, out, errs := runMain(context.Background(), "run", "--agent", "SupportAgent", "--script", path,
				"--base-url", srv.URL+"/v1", "--model", "test-model", "--json", "--db", db)
			if code != 1 {
				t.Fatalf("exit %d, want 1\nstdout %s\nstderr %s", code, out, errs)
			}
			if !strings.Contains(errs, "the turn from "+path+":3 failed in call c1 classify") || !strings.Contains(errs, tc.msg) ||
				!strings.Contains(errs, "2 earlier turns of this run stored") || !strings.Contains(errs, "sessionbench session retry ") {
				t.Errorf("stderr: %s", errs)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			var last runTurnJSON
			if len(lines) != 3 || json.Unmarshal([]byte(lines[2]), &last) != nil || last.Status != trace.StatusFailed ||
				last.FailedCall != "c1 classify" || !strings.Contains(last.Error, tc.msg) || last.Index != 2 {
				t.Fatalf("json lines: want 2 completed and the failed turn:\n%s", out)
			}
			s := openStore(t, db)
			id := convIDOf(t, errs)
			turns, err := s.LoadBranch(context.Background(), id, "main")
			if err != nil || len(turns) != 2 || turns[1].Inputs.String("question") != "two" {
				t.Fatalf("stored turns: %v %d", err, len(turns))
			}
			if turns[0].Calls[0].Usage.TotalTokens != 15 || turns[0].Calls[0].Completion != supportAnswer {
				t.Errorf("call record from the server: %+v", turns[0].Calls[0])
			}
			// The failed turn is kept beside the branch, with its failing call.
			failed, err := s.LoadTurn(context.Background(), last.Turn)
			if err != nil || failed.Status != trace.StatusFailed || len(failed.Calls) != 1 || failed.Calls[0].Error == "" ||
				failed.Calls[0].Messages.Len() == 0 || len(failed.Calls[0].Tries) == 0 {
				t.Fatalf("failed turn: %v %+v", err, failed)
			}
			if p, _ := s.PendingTurns(context.Background()); len(p) != 0 {
				t.Errorf("failed turn left in flight: %+v", p)
			}
		})
	}
}

// TestRunFirstTurnFailsKeepsIt: a new conversation whose first turn fails keeps that
// turn (inspectable, retryable), not an empty conversation.
func TestRunFirstTurnFailsKeepsIt(t *testing.T) {
	db := runIsolated(t)
	srv := chatServer(t, func(n int64, w http.ResponseWriter, _ *http.Request) (string, bool) {
		w.Header().Set("Retry-After-Ms", "1") // the client retries a 5xx; at once, please
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error":{"message":"upstream exploded","type":"server_error"}}`)
		return "", false
	})
	code, _, errs := runMain(context.Background(), "run", "--agent", "SupportAgent", "--input", "question=hi",
		"--base-url", srv.URL+"/v1", "--model", "m", "--db", db)
	if code != 1 || !strings.Contains(errs, "it is kept as failed turn ") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	s := openStore(t, db)
	list, err := s.ListConversations(context.Background())
	if err != nil || len(list) != 1 || list[0].Turns != 0 || list[0].Kept[trace.StatusFailed] != 1 {
		t.Fatalf("conversations: %v %+v", err, list)
	}
}

func TestRunCancelKeepsTheTurn(t *testing.T) {
	cases := []struct {
		name   string
		cancel func(context.CancelCauseFunc)
		code   int
		status trace.Status
		msg    string
	}{
		{"cancelled", func(c context.CancelCauseFunc) { c(nil) }, exitInterrupted, trace.StatusCancelled, "kept as cancelled turn"},
		{"SIGTERM", func(c context.CancelCauseFunc) { c(Interrupt{Signal: syscall.SIGTERM}) }, 143, trace.StatusInterrupted,
			"interrupted by SIGTERM during the turn from"},
		{"SIGHUP", func(c context.CancelCauseFunc) { c(Interrupt{Signal: syscall.SIGHUP}) }, 129, trace.StatusInterrupted, "it is left resumable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := runIsolated(t)
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			// Turn one completes; turn two's second call (respond) is cut off.
			srv := chatServer(t, func(n int64, w http.ResponseWriter, r *http.Request) (string, bool) {
				if n <= 3 {
					return supportAnswer, true
				}
				tc.cancel(cancel)
				<-r.Context().Done()
				return "", false
			})
			path := writeFile(t, "s.jsonl", "{\"question\": \"one\"}\n{\"question\": \"two\"}\n")
			code, _, errs := runMain(ctx, "run", "--agent", "SupportAgent", "--script", path, "--base-url", srv.URL+"/v1", "--model", "m", "--db", db)
			if code != tc.code || !strings.Contains(errs, tc.msg) {
				t.Fatalf("exit %d (want %d): %s", code, tc.code, errs)
			}
			s := openStore(t, db)
			id := convIDOf(t, errs)
			turns, err := s.LoadBranch(context.Background(), id, "main")
			if err != nil || len(turns) != 1 {
				t.Fatalf("stored: %v %d turns, want 1", err, len(turns))
			}
			kept, err := s.KeptTurns(context.Background(), id, "main")
			if err != nil || len(kept) != 1 || kept[0].Status != tc.status || kept[0].Calls != 2 {
				t.Fatalf("kept: %v %+v", err, kept)
			}
			ps, _ := s.PendingTurns(context.Background())
			if resumable := len(ps) == 1 && ps[0].Resumable(); resumable != (tc.status == trace.StatusInterrupted) {
				t.Errorf("pending: %+v", ps)
			}
		})
	}
}

// TestRunAgentFile runs an agent file given by path, then continues the conversation
// from another directory without --agent (the conversation remembers the file).
func TestRunAgentFile(t *testing.T) {
	db := runIsolated(t)
	data, err := demo.ExampleFile("support.toml")
	if err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, "my-support.toml", string(data))
	code, out, errs := runMain(context.Background(), "run", "--agent", path, "--input", "question=I can't log in", "--db", db)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	id := convIDOf(t, out)
	if !strings.Contains(out, "< reply: ") {
		t.Errorf("stdout: %s", out)
	}
	c, err := openStore(t, db).Conversation(context.Background(), id)
	if err != nil || c.Agent != path {
		t.Fatalf("conversation agent %q, want the file's absolute path %q (%v)", c.Agent, path, err)
	}
	t.Chdir(t.TempDir())
	code, out, errs = runMain(context.Background(), "run", "--conversation", id, "--input", "question=It says password expired", "--json", "--db", db)
	if code != 0 || !strings.Contains(out, `"index":1`) {
		t.Fatalf("continue: exit %d\n%s\n%s", code, out, errs)
	}
	code, _, errs = runMain(context.Background(), "run", "--conversation", id, "--agent", "SupportAgent", "--input", "question=x", "--db", db)
	if code != 2 || !strings.Contains(errs, "belongs to agent") {
		t.Errorf("other agent on a file agent's conversation: exit %d %s", code, errs)
	}
}

// An agent file that lists history among its inputs reads the session's history: run
// asks only for the other inputs (the history is injected, never typed) and refuses a
// typed one.
func TestRunHistoryInputIsInjected(t *testing.T) {
	db := runIsolated(t)
	path := writeFile(t, "remember.toml", "name = \"remember\"\ninputs = [\"question\", \"history\"]\noutputs = [\"seen\"]\n"+
		"[[steps]]\nname = \"look\"\nset = { seen = \"{history}\" }\n")
	code, out, errs := runMain(context.Background(), "run", "--agent", path, "--input", "question=first", "--db", db)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	id := convIDOf(t, out)
	code, out, errs = runMain(context.Background(), "run", "--conversation", id, "--input", "question=second", "--json", "--db", db)
	if code != 0 || !strings.Contains(out, `"seen":{"messages":[{"question":"first"`) {
		t.Fatalf("second turn: exit %d\n%s\n%s", code, out, errs)
	}
	code, _, errs = runMain(context.Background(), "run", "--conversation", id, "--input", "question=x", "--input", "history=typed", "--db", db)
	if code != 2 || !strings.Contains(errs, `unknown input field "history"`) {
		t.Errorf("a typed history: exit %d %s", code, errs)
	}
}

// TestRunFlagValue: --input text becomes a typed value only when it is valid JSON of the
// field's type; a str field always takes the text as typed.
func TestRunFlagValue(t *testing.T) {
	cases := []struct {
		typ, text string
		want      any
	}{
		{"str", "42", "42"},
		{"str", `"quoted"`, `"quoted"`},
		{"int", "42", int64(42)},
		{"int", "forty", "forty"},
		{"float", "2", 2.0},
		{"bool", "true", true},
		{"list[int]", "[1, 2]", []any{int64(1), int64(2)}},
		{"list[int]", `["a"]`, `["a"]`},
		{"dict[str, int]", `{"a": 1}`, sig.NewMap("a", int64(1))},
		{"Optional[int]", "null", nil},
	}
	for _, tc := range cases {
		got := runFlagValue(sig.MustType(tc.typ), tc.text)
		if !py.Same(got, tc.want) {
			t.Errorf("%s %q: got %#v, want %#v", tc.typ, tc.text, got, tc.want)
		}
	}
}

// TestRunNotesASupersededTurn: continuing a branch that an interrupted run left a turn
// in flight on says so (the new turn supersedes it); other branches' turns are not named.
func TestRunNotesASupersededTurn(t *testing.T) {
	db := runIsolated(t)
	code, out, errs := runMain(context.Background(), "run", "--agent", "SupportAgent", "--input", "question=hi", "--db", db)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	id := convIDOf(t, out)
	s := openStore(t, db)
	if _, err := s.Fork(context.Background(), id, storage.MainBranch, "side", 0); err != nil {
		t.Fatal(err)
	}
	sink := s.Sink(id, storage.MainBranch)
	key, err := sink.BeginTurn(context.Background(), sig.NewMap("question", "interrupted"))
	if err != nil {
		t.Fatal(err)
	}
	// While the turn runs (here, in this process) the branch is busy.
	code, _, errs = runMain(context.Background(), "run", "--conversation", id, "--input", "question=again", "--db", db)
	if want := fmt.Sprintf(`(id %s) is running in process %d on `, key, os.Getpid()); code != 1 || !strings.Contains(errs, want) {
		t.Fatalf("run beside a running turn: exit %d\n%s", code, errs)
	}
	if err := sink.AbortTurn(context.Background(), key, &trace.Turn{Status: trace.StatusInterrupted, Error: "terminated"}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		branch string
		note   bool
	}{{"side", false}, {storage.MainBranch, true}, {storage.MainBranch, false}}
	for _, c := range cases {
		code, _, errs := runMain(context.Background(), "run", "--conversation", id, "--branch", c.branch, "--input", "question=again", "--db", db)
		want := "note: turn " + key + " on main (started "
		if code != 0 || strings.Contains(errs, want) != c.note {
			t.Errorf("branch %s: exit %d, note expected %v:\n%s", c.branch, code, c.note, errs)
		}
	}
}

// TestRunLoadsTheTokenizerOnlyWhenNeeded: run and retry load the token counter's tables
// (needsTokenizer) unless the branch's calls were all counted by their server, as read
// from a real store after real runs.
func TestRunLoadsTheTokenizerOnlyWhenNeeded(t *testing.T) {
	noUsage := func(_ int64, w http.ResponseWriter, _ *http.Request) (string, bool) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n", supportAnswer)
		return "", false
	}
	withUsage := func(int64, http.ResponseWriter, *http.Request) (string, bool) { return supportAnswer, true }
	cases := []struct {
		name   string
		answer func(int64, http.ResponseWriter, *http.Request) (string, bool)
		model  string
		turns  bool // a turn was run first
		want   bool
	}{
		{"the server reports usage", withUsage, "test-model", true, false},
		{"the server reports none", noUsage, "test-model", true, true},
		{"no turn yet", withUsage, "test-model", false, true},
		{"the demo model", withUsage, llm.DemoName, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := runIsolated(t)
			srv := chatServer(t, c.answer)
			code, out, errs := runMain(context.Background(), "run", "--agent", "SupportAgent", "--input", "question=hi",
				"--base-url", srv.URL+"/v1", "--model", "test-model", "--db", db)
			if code != 0 {
				t.Fatalf("run: %d\n%s\n%s", code, out, errs)
			}
			conv := convIDOf(t, out+errs)
			s := openStore(t, db)
			branch := storage.MainBranch
			if !c.turns {
				if _, err := s.CreateBranch(context.Background(), conv, "empty"); err != nil {
					t.Fatal(err)
				}
				branch = "empty"
			}
			u, err := s.BranchUsageOf(context.Background(), conv, branch)
			if got := needsTokenizer(c.model, u, err); got != c.want {
				t.Errorf("needsTokenizer(%q, %+v, %v) = %v, want %v", c.model, u, err, got, c.want)
			}
		})
	}
	if !needsTokenizer("test-model", lm.Usage{TotalTokens: 9}, errors.New("no such branch")) {
		t.Error("a branch whose usage cannot be read must load the tables")
	}
}

// Continuing a conversation, run sends the turn's first request while it loads the
// conversation (sessions.Service.CallAhead), and the turn takes its answer: a server
// sees the same requests as with --no-call-ahead, one each, and the turn records the
// body it sent.
func TestRunContinuesWithTheFirstCallAhead(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(body))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", supportAnswer)
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	sent := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), bodies...)
	}
	db := runIsolated(t)
	model := []string{"--base-url", srv.URL + "/v1", "--model", "test-model", "--db", db}
	code, _, errs := runMain(context.Background(), append([]string{"run", "--agent", "SupportAgent", "--input", "question=I can't log in"}, model...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	id := convIDOf(t, errs)
	for i, flags := range [][]string{nil, {"--no-call-ahead"}, nil} {
		before := len(sent())
		q := fmt.Sprintf("question=It says password expired (%d)", i)
		code, _, errs := runMain(context.Background(), append(append([]string{"run", "--conversation", id, "--input", q}, flags...), model...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		got := sent()[before:]
		if len(got) != 2 {
			t.Fatalf("run %d %v: the server saw %d requests, want 2", i, flags, len(got))
		}
		s := openStore(t, db)
		turns, err := s.LoadBranch(context.Background(), id, "main")
		s.Close()
		if err != nil || len(turns) != i+2 {
			t.Fatalf("stored: %v, %d turns", err, len(turns))
		}
		for j, c := range turns[i+1].Calls {
			if c.RawRequest != got[j] {
				t.Errorf("run %d %v: call %s records another body than the server saw", i, flags, c.Path)
			}
		}
	}
}
