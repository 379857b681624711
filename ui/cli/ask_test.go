package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// isolate gives the test an empty configuration directory and no model environment.
func isolate(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	for _, k := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "SESSIONBENCH_MODEL"} {
		t.Setenv(k, "")
	}
	return dir
}

func writeConfig(t *testing.T, dir, text string) string {
	t.Helper()
	path := filepath.Join(dir, "sessionbench", "config.toml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), Env{Args: args, Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

// openAIServer streams a fixed answer and records the chat request it got.
func openAIServer(t *testing.T, status int, got *map[string]any) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, got)
		if status != 200 {
			w.WriteHeader(status)
			fmt.Fprint(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, d := range []string{"Hi", " from", " the server"} {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", d)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3,\"total_tokens\":12}}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(s.Close)
	return s
}

func TestAskWithoutConfigurationUsesTheDemoModel(t *testing.T) {
	dir := isolate(t)
	writeConfig(t, dir, "[demo]\ntoken_rate = 0\n")
	code, out, errOut := run(t, "", "ask", "how do I reset my password?")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	if !strings.Contains(errOut, "offline demo model") || !strings.Contains(errOut, "nothing is configured") {
		t.Errorf("stderr does not say the demo model is used: %s", errOut)
	}
	if !strings.Contains(out, "demo model") || !strings.Contains(out, "password") {
		t.Errorf("stdout = %q", out)
	}
}

func TestAskStreamsFromAServer(t *testing.T) {
	isolate(t)
	var got map[string]any
	s := openAIServer(t, 200, &got)
	t.Setenv("LOCAL_KEY", "k-123")
	code, out, errOut := run(t, "", "ask", "--base-url", s.URL+"/v1", "--api-key-env", "LOCAL_KEY", "--model", "tiny",
		"--system", "Be brief.", "--temperature", "0", "say", "hi")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	if out != "Hi from the server\n" {
		t.Errorf("stdout = %q", out)
	}
	msgs, _ := got["messages"].([]any)
	if got["model"] != "tiny" || got["stream"] != true || got["temperature"] != 0.0 || len(msgs) != 2 {
		t.Fatalf("request = %v", got)
	}
	if m := msgs[1].(map[string]any); m["role"] != "user" || m["content"] != "say hi" {
		t.Errorf("user message = %v", m)
	}
	if !strings.Contains(errOut, "tiny via flags") || !strings.Contains(errOut, "9 prompt + 3 completion") || strings.Contains(errOut, "k-123") {
		t.Errorf("stderr = %s", errOut)
	}
}

func TestAskReportsServerErrorsWithAHint(t *testing.T) {
	isolate(t)
	var got map[string]any
	s := openAIServer(t, 401, &got)
	code, _, errOut := run(t, "", "ask", "--base-url", s.URL+"/v1", "--model", "tiny", "hello")
	if code != askFailed || !strings.Contains(errOut, "Incorrect API key provided") || !strings.Contains(errOut, "$OPENAI_API_KEY is not set") {
		t.Errorf("exit %d stderr %s", code, errOut)
	}
}

func TestAskUsageErrors(t *testing.T) {
	dir := isolate(t)
	if code, _, errOut := run(t, "", "ask"); code != askUsage || !strings.Contains(errOut, "nothing to ask") {
		t.Errorf("no text: exit %d %s", code, errOut)
	}
	if code, _, errOut := run(t, "", "ask", "--model", "mystery", "hi"); code != askUsage || !strings.Contains(errOut, `model "mystery"`) {
		t.Errorf("unknown model: exit %d %s", code, errOut)
	}
	path := writeConfig(t, dir, "[[providers]]\nname = \"x\"\nbase_url = \"localhost\"\n")
	if code, _, errOut := run(t, "", "ask", "hi"); code != askUsage || !strings.Contains(errOut, path+":3: providers[1].base_url") {
		t.Errorf("bad config: exit %d %s", code, errOut)
	}
}

func TestAskAndModelsFlagsAndJSON(t *testing.T) {
	dir := isolate(t)
	var got map[string]any
	s := openAIServer(t, 200, &got)
	t.Setenv("LOCAL_KEY", "k-123")
	checkCLI(t, []cliCase{
		{args: []string{"ask", "--help"}, stdout: []string{"usage:\n  sessionbench ask", "TEXT '-' reads standard input", "-model", "-json", "-no-stream"}, quietErrs: true},
		{args: []string{"ask", "--bogus", "hi"}, code: askUsage, quietOut: true, stderr: []string{"sessionbench ask: flag provided but not defined: -bogus (see 'sessionbench ask --help')"}},
		{args: []string{"ask", "--temperature", "hot", "hi"}, code: askUsage, stderr: []string{`sessionbench ask: invalid value "hot" for flag -temperature: "hot" is not a number`}},
		{args: []string{"models", "--help"}, stdout: []string{"usage:\n  sessionbench models", "-config", "-json"}, quietErrs: true},
		{args: []string{"models", "--bogus"}, code: 2, quietOut: true, stderr: []string{"sessionbench models: flag provided but not defined: -bogus"}},
		{args: []string{"models", "extra"}, code: 2, stderr: []string{`unexpected argument "extra"`}},
		{args: []string{"models", "--json"}, stdout: []string{`"config_exists": false`, `"name": "demo"`, `"default": true`}},
	})
	code, out, errOut := run(t, "", "ask", "--json", "--base-url", s.URL+"/v1", "--api-key-env", "LOCAL_KEY", "--model", "tiny", "say", "hi")
	var a askOut
	if err := json.Unmarshal([]byte(out), &a); err != nil || code != 0 || a.Text != "Hi from the server" || a.Model != "tiny" ||
		a.Usage.Prompt != 9 || a.Usage.Completion != 3 || a.Usage.Estimated || a.Tries != 1 || !strings.Contains(out, `"attempts": 1`) {
		t.Errorf("ask --json: exit %d %v\nstdout: %s\nstderr: %s", code, err, out, errOut)
	}
	path := writeConfig(t, dir, "[default]\nprovider = \"local\"\n\n[[providers]]\nname = \"local\"\nbase_url = \"http://localhost:1/v1\"\napi_key_env = \"LOCAL_KEY\"\nmodels = [\"m1\", \"m2\"]\n")
	code, out, errOut = run(t, "", "models", "--json")
	var m modelsOut
	if err := json.Unmarshal([]byte(out), &m); err != nil || code != 0 || m.Config != path || !m.ConfigExists || m.Default == nil ||
		m.Default.Provider != "local" || m.Default.Model != "m1" || len(m.Providers) != 2 || m.Providers[1].APIKey != "$LOCAL_KEY (set)" ||
		!m.Providers[1].Default || m.Providers[0].Default || strings.Contains(out, "k-123") ||
		m.Providers[1].ServerModels != nil || !strings.Contains(m.Providers[1].ServerError, "connection refused") || m.Providers[0].ServerError != "" {
		t.Errorf("models --json: exit %d %v\nstdout: %s\nstderr: %s", code, err, out, errOut)
	}
	writeConfig(t, dir, "[[providers]]\nname = \"x\"\nbase_url = \"http://h/v1\"\nmodelz = [\"a\"]\n")
	checkCLI(t, []cliCase{
		{args: []string{"models", "--json"}, code: 2, quietOut: true, stderr: []string{path + ":4: providers.modelz: unknown key"}},
		{args: []string{"ask", "--json", "hi"}, code: askUsage, quietOut: true, stderr: []string{path + ":4: providers.modelz"}},
	})
}
