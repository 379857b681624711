package cli

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// localServer is an OpenAI-compatible server listing the given models (GET /v1/models)
// and answering every chat request with "ok"; usage is reported only when withUsage.
func localServer(t *testing.T, withUsage bool, models ...string) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			data := make([]map[string]string, len(models))
			for i, m := range models {
				data[i] = map[string]string{"id": m, "object": "model"}
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
		case "/v1/chat/completions":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n")
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
			if withUsage {
				fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":1,\"total_tokens\":10}}\n\n")
			}
			fmt.Fprint(w, "data: [DONE]\n\n")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// refusedURL is a base URL nothing listens on.
func refusedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/v1"
}

func TestModelsListsWhatEachServerServes(t *testing.T) {
	dir := isolate(t)
	openai := localServer(t, true, "gpt-4o-mini", "gpt-4o", "text-embedding-3-small")
	empty := localServer(t, true)
	down := refusedURL(t)
	path := writeConfig(t, dir, `[default]
provider = "openai"
model = "gpt-4o-mini"

[[providers]]
name = "openai"
base_url = "`+openai.URL+`/v1"
api_key_env = "MY_OPENAI_KEY"
models = ["gpt-4o-mini", "gpt-4o"]

[[providers]]
name = "groq"
base_url = "`+empty.URL+`/v1"
api_key_env = "GROQ_API_KEY"
models = ["llama-3.1-8b-instant"]

[[providers]]
name = "ollama"
base_url = "`+down+`"
models = ["llama3.1:8b"]

[[providers]]
name = "vault"
base_url = "`+openai.URL+`/v1"
key_command = "echo never-run"
`)
	t.Setenv("MY_OPENAI_KEY", "sk-very-secret")
	t.Setenv("GROQ_API_KEY", "")
	code, out, errOut := run(t, "", "models")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"configuration: " + path, "$MY_OPENAI_KEY (set)", "$GROQ_API_KEY (not set)", "openai *",
		"configured: gpt-4o-mini *, gpt-4o\n", "server lists 3: gpt-4o-mini *, gpt-4o, text-embedding-3-small\n",
		"groq:\n  configured: llama-3.1-8b-instant\n  server: lists no models",
		"ollama:\n  configured: llama3.1:8b\n  server: unreachable or no list: GET " + down + "/models: connection refused",
		"vault:\n  server: unreachable or no list: not asked: the key comes from key_command",
		"demo:\n  models: demo", "default model: gpt-4o-mini via openai"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sk-very-secret") {
		t.Fatalf("models printed a key:\n%s", out)
	}
}

func TestModelsWithNothingConfigured(t *testing.T) {
	isolate(t)
	code, out, _ := run(t, "", "models")
	if code != 0 || !strings.Contains(out, "not found") || !strings.Contains(out, "default model: demo (offline)") || !strings.Contains(out, "demo *") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// The two variables alone: models and ask use the server's model and say how to pin it.
func TestTwoVariablesAlone(t *testing.T) {
	isolate(t)
	s := localServer(t, false, "text-embedding-3-small", "local-chat", "other-chat")
	t.Setenv("OPENAI_BASE_URL", s.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-local")
	code, out, errOut := run(t, "", "models")
	if code != 0 {
		t.Fatalf("models: exit %d %s", code, errOut)
	}
	for _, want := range []string{"default model: local-chat via env", "pin it with --model local-chat or SESSIONBENCH_MODEL=local-chat",
		"env *", "server lists 3: text-embedding-3-small, local-chat *, other-chat"} {
		if !strings.Contains(out, want) {
			t.Errorf("models output lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = run(t, "", "ask", "hello")
	if code != 0 || out != "ok\n" {
		t.Fatalf("ask: exit %d stdout %q stderr %s", code, out, errOut)
	}
	for _, want := range []string{"asking local-chat via env", "took local-chat", "SESSIONBENCH_MODEL=local-chat", "tokens (≈ estimated with tiktoken"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("ask stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, " 0 prompt") || strings.Contains(errOut, "0 tok") {
		t.Errorf("ask shows a zero count for a server that reports no usage:\n%s", errOut)
	}
}
