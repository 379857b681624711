package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/ui/uitest"
)

// These tests run sessionbench against @dwmkerr/mock-llm, an OpenAI-compatible server
// written by someone else (npm; version pinned in testdata/mockllm/package.json), with
// only OPENAI_BASE_URL and OPENAI_API_KEY set, as a user of a local server would.
// .ci/run installs it (npm ci --prefix ui/e2e/testdata/mockllm); elsewhere a missing
// node or package skips them, saying so. With CI=true they must run.

// mockRules scripts the server with its YAML rules (the last rule that matches answers).
// Every chat answer names the model it was asked for, so a test sees which one was used.
// The support agent's two predictors are told apart by their system message: only
// respond's names the output field `reply`.
func mockRules(chunkSize, intervalMs int, askAnswer string) string {
	answer := func(text string) string {
		return fmt.Sprintf(`'{"id":"c1","object":"chat.completion","model":"{{jmes request body.model}}","choices":[{"index":0,"message":{"role":"assistant","content":"%s"},"finish_reason":"stop"}]}'`, text)
	}
	return fmt.Sprintf(`streaming:
  chunkSize: %d
  chunkIntervalMs: %d
rules:
  - path: "/v1/models"
    method: "GET"
    response:
      status: 200
      content: '{"object":"list","data":[{"id":"text-embedding-3-small","object":"model"},{"id":"mock-chat-a","object":"model"},{"id":"mock-chat-b","object":"model"}]}'
  - path: "/v1/chat/completions"
    method: "POST"
    match: "@"
    response:
      status: 200
      content: %s
  - path: "/v1/chat/completions"
    method: "POST"
    match: "contains(body.messages[0].content, '`+"`reply`"+`')"
    response:
      status: 200
      content: %s
  - path: "/v1/chat/completions"
    method: "POST"
    match: "body.messages[-1].content == 'Say hello'"
    response:
      status: 200
      content: %s
`, chunkSize, intervalMs,
		answer(`[[ ## intent ## ]]\ntechnical\n\n[[ ## completed ## ]]`),
		answer(`[[ ## reasoning ## ]]\nA mail problem.\n\n[[ ## reply ## ]]\nCheck your spam folder (served by {{jmes request body.model}}).\n\n[[ ## completed ## ]]`),
		answer(askAnswer))
}

const askAnswer = "Hello from mock-llm, streamed to you in many small pieces."

// mockLLM is one running mock-llm server.
type mockLLM struct {
	url  string // base URL, ending in /v1
	root string // http://127.0.0.1:PORT
	cmd  *exec.Cmd
	out  *uitest.Buffer
	done chan struct{}
}

// needMockLLM finds node and the installed package, or skips (fails under CI=true).
func needMockLLM(t *testing.T) (node, main string) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end tests are skipped under -short")
	}
	missing := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format+" (CI=true: this test must run)", args...)
		}
		t.Skipf(format, args...)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node not found on PATH: the mock-llm end-to-end tests need Node.js")
	}
	dir, _ := filepath.Abs(filepath.Join("testdata", "mockllm"))
	main = filepath.Join(dir, "node_modules", "@dwmkerr", "mock-llm", "dist", "main.js")
	if _, err := os.Stat(main); err != nil {
		missing("@dwmkerr/mock-llm is not installed: run 'npm ci --prefix ui/e2e/testdata/mockllm' (.ci/run does)")
	}
	return node, main
}

// startMockLLM runs the server on a free port of 127.0.0.1 with the rules, and waits
// until it answers its health check.
func startMockLLM(t *testing.T, rules string) *mockLLM {
	t.Helper()
	node, main := needMockLLM(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "mock-llm.yaml")
	if err := os.WriteFile(conf, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	m := &mockLLM{root: fmt.Sprintf("http://127.0.0.1:%d", port), out: &uitest.Buffer{}, done: make(chan struct{})}
	m.url = m.root + "/v1"
	m.cmd = exec.Command(node, main, "--config", conf)
	m.cmd.Dir = dir
	m.cmd.Env = append(os.Environ(), "HOST=127.0.0.1", fmt.Sprintf("PORT=%d", port))
	m.cmd.Stdout, m.cmd.Stderr = m.out, m.out
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("starting mock-llm: %v", err)
	}
	go func() { _ = m.cmd.Wait(); close(m.done) }()
	t.Cleanup(m.stop)
	deadline := time.Now().Add(waitLimit)
	for {
		resp, err := http.Get(m.root + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return m
			}
		}
		select {
		case <-m.done:
			t.Fatalf("mock-llm exited before it was ready:\n%s", m.out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("mock-llm did not answer /health within %s:\n%s", waitLimit, m.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop kills the server and waits for it to be gone.
func (m *mockLLM) stop() {
	select {
	case <-m.done:
		return
	default:
	}
	_ = m.cmd.Process.Kill()
	<-m.done
}

// startAsk starts `ask "Say hello"` in the workspace, its output piped to the test; it
// is killed if it runs longer than cmdLimit.
func startAsk(t *testing.T, ws *workspace) (*exec.Cmd, io.Reader, *uitest.Buffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdLimit)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, binary(t), "ask", "Say hello")
	cmd.Env = ws.env()
	stderr := &uitest.Buffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stdout, stderr
}

// serverWorkspace is a workspace with only the two variables pointing at the server.
func serverWorkspace(t *testing.T, m *mockLLM) *workspace {
	ws := newWorkspace(t)
	ws.model = ""
	ws.extraEnv = []string{"OPENAI_BASE_URL=" + m.url, "OPENAI_API_KEY=sk-mock-llm"}
	return ws
}

func TestMockLLMHeadless(t *testing.T) {
	m := startMockLLM(t, mockRules(8, 40, askAnswer))
	ws := serverWorkspace(t, m)

	t.Run("models", func(t *testing.T) {
		out, err := runBinary(t, ws, "models")
		if err != nil {
			t.Fatalf("models: %v\n%s", err, out)
		}
		for _, want := range []string{"default model: mock-chat-a via env (" + m.url, "pin it with --model mock-chat-a",
			"env *", "server lists 3: text-embedding-3-small, mock-chat-a *, mock-chat-b"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("models output lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("ask streams", func(t *testing.T) {
		cmd, stdout, stderr := startAsk(t, ws)
		first := make([]byte, 256)
		n, err := stdout.Read(first)
		if err != nil {
			t.Fatalf("no output: %v (stderr %s)", err, stderr.String())
		}
		// The server sends 8 characters every 40 ms: the first read is a piece.
		if n >= len(askAnswer) || !strings.HasPrefix(askAnswer, string(first[:n])) {
			t.Errorf("first read %q is not a streamed piece of %q", first[:n], askAnswer)
		}
		rest, _ := io.ReadAll(stdout)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("ask: %v\n%s", err, stderr.String())
		}
		if got := string(first[:n]) + string(rest); got != askAnswer+"\n" {
			t.Errorf("stdout = %q", got)
		}
		for _, want := range []string{"asking mock-chat-a via env", "took mock-chat-a, the first chat model of 3",
			"SESSIONBENCH_MODEL=mock-chat-a", "completion tokens (≈ estimated with tiktoken"} {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
			}
		}
	})

	t.Run("run SupportAgent commits a turn", func(t *testing.T) {
		out, err := runBinary(t, ws, "run", "--agent", "SupportAgent", "--input", "question=The reset email never arrives", "--db", ws.db, "--json")
		if err != nil {
			t.Fatalf("run: %v\n%s", err, out)
		}
		var turn struct {
			Conversation string         `json:"conversation"`
			Index        int            `json:"index"`
			Outputs      map[string]any `json:"outputs"`
			Calls        int            `json:"calls"`
		}
		line := lineWith(string(out), `"conversation"`)
		if err := json.Unmarshal([]byte(line), &turn); err != nil {
			t.Fatalf("run --json printed %q: %v\n%s", line, err, out)
		}
		if turn.Outputs["intent"] != "technical" || turn.Outputs["reply"] != "Check your spam folder (served by mock-chat-a)." || turn.Calls < 2 {
			t.Errorf("turn = %+v", turn)
		}
		if !strings.Contains(string(out), "took mock-chat-a") {
			t.Errorf("run does not say which model it took:\n%s", out)
		}
		show, err := runBinary(t, ws, "session", "show", turn.Conversation, "--db", ws.db, "--tree")
		if err != nil {
			t.Fatalf("session show: %v\n%s", err, show)
		}
		for _, want := range []string{"turns on main:", "The reset email never arrives", "classify (Predict)", "respond (ChainOfThought)", `intent="technical"`} {
			if !strings.Contains(string(show), want) {
				t.Errorf("session show lacks %q:\n%s", want, show)
			}
		}
	})
}

// The server dies while it streams: ask keeps what arrived, says the answer broke off
// and exits 1; nothing hangs.
func TestMockLLMStoppedMidStream(t *testing.T) {
	long := strings.Repeat("This answer is long and slow. ", 20)
	m := startMockLLM(t, mockRules(10, 150, long))
	ws := serverWorkspace(t, m)
	cmd, stdout, stderr := startAsk(t, ws)
	r := bufio.NewReader(stdout)
	first := make([]byte, 5)
	if _, err := io.ReadFull(r, first); err != nil {
		t.Fatalf("nothing streamed before the stop: %v\n%s", err, stderr.String())
	}
	m.stop()
	rest, _ := io.ReadAll(r)
	err := cmd.Wait()
	if errors.Is(err, context.DeadlineExceeded) || exitCode(err) == -1 {
		t.Fatalf("ask hung after the server stopped (%v):\n%s", err, stderr.String())
	}
	if exitCode(err) != 1 {
		t.Errorf("exit %d, want 1\n%s", exitCode(err), stderr.String())
	}
	got := string(first) + string(rest)
	if !strings.HasPrefix(long, strings.TrimSuffix(got, "\n")) || len(got) >= len(long) {
		t.Errorf("stdout %q is not the start of the answer", got)
	}
	if !strings.Contains(stderr.String(), "the answer broke off after") {
		t.Errorf("stderr does not say the answer broke off:\n%s", stderr.String())
	}
}

// The workbench with only the two variables: it opens on the model picker, the model
// picked answers a turn, and the turn's token count is marked as an estimate.
func TestMockLLMWorkbench(t *testing.T) {
	needTmux(t)
	m := startMockLLM(t, mockRules(16, 20, askAnswer))
	ws := serverWorkspace(t, m)
	tm := startTerm(t, ws, 100, 30)
	s := tm.waitFor("Choose a model", "lists 3", "▸ mock-chat-a", "mock-chat-b", "SESSIONBENCH_MODEL=NAME")
	if !strings.Contains(s, "model: mock-chat-a") {
		t.Errorf("the header does not name the model taken:\n%s", s)
	}
	tm.typeText("chat-b")
	tm.waitFor("▸ mock-chat-b")
	tm.waitGone("text-embedding-3-small")
	tm.press("Enter")
	tm.waitFor("model: mock-chat-b", "agent SupportAgent", "no turns yet", "pin it next time with --model mock-chat-b")
	tm.typeText("The reset email never arrives")
	tm.press("Enter")
	s = tm.waitFor("turn recorded on main", "served by mock-chat-b", "technical")
	if !strings.Contains(s, "≈") || strings.Contains(s, " 0 tok") {
		t.Errorf("the turn's tokens are not marked as an estimate:\n%s", s)
	}
	tm.press("C-c")
	if code := tm.waitExit(); code != 0 {
		t.Errorf("the workbench exited with %d", code)
	}
}
