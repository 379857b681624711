package llm

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// modelsServer serves GET /v1/models with the given status and body, counting requests
// and keeping the last Authorization header.
type modelsServer struct {
	*httptest.Server
	hits atomic.Int32
	auth atomic.Value
}

func newModelsServer(t *testing.T, status int, contentType, body string) *modelsServer {
	t.Helper()
	s := &modelsServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		s.hits.Add(1)
		s.auth.Store(r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(s.Close)
	return s
}

const threeModels = `{"object":"list","data":[{"id":"text-embedding-3-small","object":"model"},{"id":"llama-3.1-8b","object":"model"},{"id":"qwen2.5-7b","object":"model"}]}`

func TestListModels(t *testing.T) {
	refused := func() string { // a port nothing listens on
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return "http://" + addr + "/v1"
	}()
	cases := []struct {
		name        string
		status      int
		contentType string
		body        string
		baseURL     string // overrides the test server
		want        []string
		wantErr     []string
	}{
		{name: "the server's order", status: 200, contentType: "application/json", body: threeModels,
			want: []string{"text-embedding-3-small", "llama-3.1-8b", "qwen2.5-7b"}},
		{name: "empty list", status: 200, contentType: "application/json", body: `{"object":"list","data":[]}`, want: []string{}},
		{name: "wrong key", status: 401, contentType: "application/json", body: `{"error":{"message":"Incorrect API key provided"}}`,
			wantErr: []string{"GET http", "/v1/models", "HTTP 401", "Incorrect API key provided", "wrong API key", "$TEST_KEY"}},
		{name: "no list at this server", status: 404, contentType: "text/plain", body: "404 page not found",
			wantErr: []string{"HTTP 404", "no model list at", "--model NAME"}},
		{name: "an html page", status: 200, contentType: "text/html", body: "<html><body>proxy login</body></html>",
			wantErr: []string{"not an OpenAI model list", `Content-Type "text/html"`, `"<html><body>proxy login`}},
		{name: "nothing listening", baseURL: refused, wantErr: []string{"connection refused", "is the server running?"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.baseURL
			var s *modelsServer
			if base == "" {
				s = newModelsServer(t, tc.status, tc.contentType, tc.body)
				base = s.URL + "/v1"
			}
			got, err := ListModels(context.Background(), Server{BaseURL: base, APIKey: "sk-test", KeyEnv: "TEST_KEY"})
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("accepted: %v", got)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil || strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("models %v err %v, want %v", got, err, tc.want)
			}
			if a, _ := s.auth.Load().(string); a != "Bearer sk-test" {
				t.Errorf("Authorization = %q", a)
			}
		})
	}
}

// The list is asked for once per server and key, however often it is needed; a failed
// answer is not kept.
func TestListModelsIsCached(t *testing.T) {
	s := newModelsServer(t, 200, "application/json", threeModels)
	srv := Server{BaseURL: s.URL + "/v1", APIKey: "k1"}
	for i := 0; i < 3; i++ {
		if _, err := ListModels(context.Background(), srv); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.hits.Load(); n != 1 {
		t.Errorf("%d requests for three listings, want 1", n)
	}
	if _, err := ListModels(context.Background(), Server{BaseURL: s.URL + "/v1", APIKey: "k2"}); err != nil || s.hits.Load() != 2 {
		t.Errorf("another key must ask again: %d requests, err %v", s.hits.Load(), err)
	}
	bad := newModelsServer(t, 503, "application/json", `{"error":{"message":"loading"}}`)
	for i := 0; i < 2; i++ {
		if _, err := ListModels(context.Background(), Server{BaseURL: bad.URL + "/v1"}); err == nil {
			t.Fatal("a 503 listed models")
		}
	}
	if n := bad.hits.Load(); n != 2 {
		t.Errorf("a failure was cached: %d requests, want 2", n)
	}
}

func TestChatModel(t *testing.T) {
	cases := []struct {
		models []string
		want   string
	}{
		{[]string{"text-embedding-3-small", "whisper-1", "gpt-4o-mini", "gpt-4o"}, "gpt-4o-mini"},
		{[]string{"llama3.1:8b"}, "llama3.1:8b"},
		{[]string{"nomic-embed-text", "bge-reranker"}, "nomic-embed-text"}, // nothing chat-like: the first
		{nil, ""},
	}
	for _, c := range cases {
		if got := ChatModel(c.models); got != c.want {
			t.Errorf("ChatModel(%v) = %q, want %q", c.models, got, c.want)
		}
	}
}

// OPENAI_BASE_URL and OPENAI_API_KEY alone: the model comes from the server's list, and
// the selection says which and how to pin it.
func TestResolveAsksTheServerForItsModels(t *testing.T) {
	one := newModelsServer(t, 200, "application/json", `{"data":[{"id":"gpt-5.2"}]}`)
	three := newModelsServer(t, 200, "application/json", threeModels)
	none := newModelsServer(t, 200, "application/json", `{"data":[]}`)
	down := newModelsServer(t, 500, "application/json", `{"error":{"message":"boom"}}`)
	cases := []struct {
		name     string
		base     string
		model    string // SESSIONBENCH_MODEL
		want     string
		choices  int
		note     []string
		wantErr  []string
		requests int32 // to the server's list
	}{
		{name: "one model", base: one.URL + "/v1", want: "gpt-5.2", choices: 1,
			note: []string{"took gpt-5.2, the only model of the models " + one.URL + "/v1 lists", "--model gpt-5.2", "SESSIONBENCH_MODEL=gpt-5.2"}},
		{name: "the first chat model", base: three.URL + "/v1", want: "llama-3.1-8b", choices: 3,
			note: []string{"took llama-3.1-8b, the first chat model of 3", "pin it with --model llama-3.1-8b"}},
		{name: "a pinned model is not looked up", base: down.URL + "/v1", model: "my-model", want: "my-model"},
		{name: "an empty list", base: none.URL + "/v1", wantErr: []string{"lists no models", "--model NAME"}},
		{name: "a failing list", base: down.URL + "/v1", wantErr: []string{"model list is unavailable", "HTTP 500", "boom", "SESSIONBENCH_MODEL=NAME"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := env(map[string]string{"OPENAI_BASE_URL": tc.base, "OPENAI_API_KEY": "sk-local", "SESSIONBENCH_MODEL": tc.model})
			sel, err := Resolve(context.Background(), Flags{ConfigPath: ""}, e)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("accepted: %+v", sel)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sel.Model != tc.want || sel.LM.Name() != tc.want || len(sel.Choices) != tc.choices || sel.Provider != "env" {
				t.Fatalf("selection = %+v", sel)
			}
			for _, w := range tc.note {
				if !strings.Contains(sel.Note, w) {
					t.Errorf("note %q lacks %q", sel.Note, w)
				}
			}
			if len(tc.note) == 0 && sel.Note != "" {
				t.Errorf("a named model needs no note: %q", sel.Note)
			}
		})
	}
	if n := down.hits.Load(); n != 1 {
		t.Errorf("the pinned model asked the server for its list (%d requests, want only the failing case's 1)", n)
	}
	sel, err := Resolve(context.Background(), Flags{}, env(map[string]string{"OPENAI_BASE_URL": three.URL + "/v1"}))
	if err != nil {
		t.Fatal(err)
	}
	other, err := sel.Choose("qwen2.5-7b")
	if err != nil || other.Model != "qwen2.5-7b" || other.LM.Name() != "qwen2.5-7b" || other.BaseURL != sel.BaseURL || other.Note != "" {
		t.Fatalf("Choose = %+v, %v", other, err)
	}
}

func TestStallTimeoutSetting(t *testing.T) {
	s := newModelsServer(t, 200, "application/json", `{"data":[{"id":"m"}]}`)
	cases := []struct {
		name, value string
		want        string // the stall bound, or the error
	}{
		{"default", "", "1m0s"},
		{"environment", "90s", "1m30s"},
		{"off", "0", "0s"},
		{"bad", "soon", `SESSIONBENCH_STALL_TIMEOUT="soon"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := Resolve(context.Background(), Flags{}, env(map[string]string{"OPENAI_BASE_URL": s.URL + "/v1", "SESSIONBENCH_STALL_TIMEOUT": tc.value}))
			if err != nil {
				if !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want %q", err, tc.want)
				}
				return
			}
			if got := sel.LM.(*OpenAI).Options().Timeouts.Stall.String(); got != tc.want {
				t.Errorf("stall = %s, want %s", got, tc.want)
			}
		})
	}
}
