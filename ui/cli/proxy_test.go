package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/ui/uitest"

	openai "github.com/sashabaranov/go-openai"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/llm"
	"github.com/sessionbench/sessionbench/llm/proxy"
	"github.com/sessionbench/sessionbench/storage"
)

// startProxy runs `sessionbench proxy` in-process and returns its base URL, its
// standard error, and a stop function that interrupts it and returns its exit code.
func startProxy(t *testing.T, args ...string) (string, *uitest.Buffer, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	errs := &uitest.Buffer{}
	code := make(chan int, 1)
	go func() {
		code <- Main(ctx, Env{Args: append([]string{"proxy"}, args...), Stdin: strings.NewReader(""), Stdout: pw, Stderr: errs})
		pw.Close()
	}()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for first := true; sc.Scan(); first = false {
			if first {
				lines <- sc.Text()
			}
		}
		close(lines)
	}()
	var url string
	select {
	case url = <-lines:
	case c := <-code:
		t.Fatalf("proxy exited with %d: %s", c, errs.String())
	case <-time.After(30 * time.Second): // a hang guard, not a speed assertion
		t.Fatal("the proxy printed no URL")
	}
	if url == "" {
		t.Fatalf("no URL: %s", errs.String())
	}
	stop := func() int {
		cancel()
		select {
		case c := <-code:
			return c
		case <-time.After(60 * time.Second):
			t.Fatal("the proxy did not stop")
			return -1
		}
	}
	t.Cleanup(func() { cancel() })
	return url, errs, stop
}

// headerTransport adds the sessionbench grouping headers to every request.
type headerTransport struct{ session, turn string }

func (h *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(proxy.HeaderSession, h.session)
	r.Header.Set(proxy.HeaderTurn, h.turn)
	return http.DefaultTransport.RoundTrip(r)
}

func chatRequest(t *testing.T, ad adapter.Adapter, s *sig.Signature, in *sig.Map) ([]lm.Message, []openai.ChatCompletionMessage) {
	t.Helper()
	msgs, err := ad.Format(adapter.Request{Signature: s, Inputs: in})
	if err != nil {
		t.Fatal(err)
	}
	var oa []openai.ChatCompletionMessage
	for _, m := range msgs {
		oa = append(oa, openai.ChatCompletionMessage{Role: m.Role, Content: m.Content})
	}
	return msgs, oa
}

// TestProxyCommand runs the proxy command against an upstream (the demo model served
// over HTTP), sends a program's calls through it with go-openai and plain HTTP, stops
// it, and checks the conversations, turns and calls it recorded and the exports.
func TestProxyCommand(t *testing.T) {
	isolate(t)
	up := httptest.NewServer(proxy.ModelServer(llm.NewDemo(llm.DemoOptions{})))
	defer up.Close()
	db := filepath.Join(t.TempDir(), "px.db")
	url, errs, stop := startProxy(t, "--port", "0", "--db", db, "--base-url", up.URL+"/v1", "--idle-gap", "1h", "--title", "my run")
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/v1") {
		t.Fatalf("URL %q", url)
	}

	classify := sig.New("", "Classify.", []sig.Field{{Name: "question"}}, []sig.Field{{Name: "intent"}})
	reply := sig.New("", "Reply.", []sig.Field{{Name: "question"}, {Name: "intent"}}, []sig.Field{{Name: "reply"}})
	ht := &headerTransport{session: "support-run"}
	cfg := openai.DefaultConfig("sk-test-000000")
	cfg.BaseURL, cfg.HTTPClient = url, &http.Client{Transport: ht}
	client := openai.NewClientWithConfig(cfg)
	ctx := context.Background()
	var sent [][]lm.Message
	for i, q := range []string{"I can't log in", "refund please"} {
		ht.turn = []string{"t1", "t2"}[i]
		m1, oa1 := chatRequest(t, adapter.Chat{}, classify, sig.NewMap("question", q))
		m2, oa2 := chatRequest(t, adapter.JSON{}, reply, sig.NewMap("question", q, "intent", "technical"))
		for _, oa := range [][]openai.ChatCompletionMessage{oa1, oa2} {
			if _, err := client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "gpt-4o-mini", Messages: oa}); err != nil {
				t.Fatal(err)
			}
		}
		sent = append(sent, m1, m2)
	}
	// Plain HTTP, no headers: the run's own conversation.
	resp, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hello"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if code := stop(); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	if n := strings.Count(errs.String(), " 200 POST /v1/chat/completions"); n != 5 {
		t.Errorf("%d call log lines, want 5:\n%s", n, errs.String())
	}
	if strings.Contains(errs.String(), "sk-test-000000") {
		t.Error("the key was logged")
	}

	s, err := storage.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	turns, err := s.LoadBranch(ctx, "p-support-run", storage.MainBranch)
	if err != nil || len(turns) != 2 {
		t.Fatalf("session conversation: %d turns %v", len(turns), err)
	}
	for i, tr := range turns {
		if len(tr.Calls) != 2 || tr.Calls[0].Path != "question -> intent" || tr.Calls[1].Path != "question, intent -> reply" ||
			tr.Calls[1].Adapter != "json" || tr.Calls[0].Recovered != "exact" || tr.Outputs.Len() != 1 {
			t.Errorf("turn %d: %d calls, outputs %s", i, len(tr.Calls), py.CompactJSON(tr.Outputs))
		}
	}
	convs, _ := s.ListConversations(ctx)
	titles := map[string]int{}
	for _, c := range convs {
		titles[c.Title] = c.Turns
	}
	if titles["support-run"] != 2 || titles["my run"] != 1 || len(convs) != 2 {
		t.Errorf("conversations %v", titles)
	}
	s.Close()

	// OpenAI fine-tuning JSONL is built from the exact requests.
	code, out, stderr := runStoreCmd(t, "export", "p-support-run", "--db", db, "--format", "openai-jsonl")
	if code != 0 {
		t.Fatalf("export: %s", stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d JSONL lines", len(lines))
	}
	for i, l := range lines {
		var ex struct{ Messages []lm.Message }
		if err := json.Unmarshal([]byte(l), &ex); err != nil {
			t.Fatal(err)
		}
		if n := len(ex.Messages); n != len(sent[i])+1 || ex.Messages[n-1].Role != "assistant" {
			t.Fatalf("line %d: %d messages", i, n)
		}
		for j, m := range sent[i] {
			if ex.Messages[j] != m {
				t.Errorf("line %d message %d differs from what the program sent", i, j)
			}
		}
	}
	if code, out, _ := runStoreCmd(t, "export", "p-support-run", "--db", db, "--format", "examples", "--path", "question -> intent"); code != 0 ||
		strings.Count(out, "\n") != 2 || !strings.Contains(out, `"question":"refund please"`) {
		t.Errorf("call-level examples: %d\n%s", code, out)
	}

	// OpenTelemetry: one trace per turn, a span per call.
	var mu sync.Mutex
	var spans, requests int
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &m); err != nil {
			t.Errorf("collector: %v", err)
		}
		mu.Lock()
		requests++
		for _, rs := range m.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans += len(ss.Spans)
			}
		}
		mu.Unlock()
		b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(b)
	}))
	defer rcv.Close()
	code, _, stderr = runStoreCmd(t, "export", "p-support-run", "--db", db, "--format", "otlp", "--otlp-endpoint", rcv.URL)
	if code != 0 || spans != 6 || !strings.Contains(stderr, "sent 2 turns as traces (6 spans)") {
		t.Errorf("otlp export: exit %d, %d spans in %d requests, stderr %s", code, spans, requests, stderr)
	}
}

// TestProxyLiveOTLP: with --otlp-endpoint, every turn the proxy commits is sent.
func TestProxyLiveOTLP(t *testing.T) {
	isolate(t)
	up := httptest.NewServer(proxy.ModelServer(llm.NewDemo(llm.DemoOptions{})))
	defer up.Close()
	got := make(chan int, 8)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m coltracepb.ExportTraceServiceRequest
		proto.Unmarshal(body, &m)
		n := 0
		for _, rs := range m.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				n += len(ss.Spans)
			}
		}
		got <- n
	}))
	defer rcv.Close()
	url, errs, stop := startProxy(t, "--port", "0", "--db", filepath.Join(t.TempDir(), "px.db"), "--base-url", up.URL,
		"--idle-gap", "1ms", "--otlp-endpoint", rcv.URL)
	resp, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hello"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	select {
	case n := <-got:
		if n != 2 {
			t.Errorf("%d spans for a turn of one call, want 2", n)
		}
	case <-time.After(30 * time.Second): // a hang guard, not a speed assertion
		t.Fatalf("no trace sent: %s", errs.String())
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
}

func TestProxyFlags(t *testing.T) {
	isolate(t)
	checkCLI(t, []cliCase{
		{args: []string{"proxy", "--help"}, stdout: []string{"-port", "-open", "-otlp-endpoint", "-idle-gap", "-key", "-base-url"}, quietErrs: true},
		{args: []string{"proxy", "--port", "-1"}, code: 2, quietOut: true, stderr: []string{"--port -1: want 0 to 65535"}},
		{args: []string{"proxy", "--idle-gap", "0s"}, code: 2, quietOut: true, stderr: []string{"--idle-gap 0s"}},
		{args: []string{"proxy", "--key", "mine"}, code: 2, quietOut: true, stderr: []string{`--key "mine"`}},
		{args: []string{"proxy", "--open"}, code: 2, quietOut: true, stderr: []string{"--open: this build has no workbench"}},
		{args: []string{"proxy", "--provider", "nobody"}, code: 2, quietOut: true, stderr: []string{"--provider nobody: no such provider"}},
		{args: []string{"proxy", "--model", "demo", "--key", "config", "--port", "0"}, code: 2, quietOut: true, stderr: []string{"--key config"}},
		{args: []string{"proxy", "stray"}, code: 2, quietOut: true, stderr: []string{`unexpected argument "stray"`}},
		{args: []string{"export", "x", "--format", "otlp"}, code: 2, quietOut: true, stderr: []string{"give --otlp-endpoint URL"}},
		{args: []string{"export", "x", "--format", "otlp", "--otlp-endpoint", "localhost:4318"}, code: 2, quietOut: true, stderr: []string{"must be an http:// or https:// URL"}},
		{args: []string{"export", "x", "--format", "markdown", "--otlp-endpoint", "http://x"}, code: 2, quietOut: true, stderr: []string{"--otlp-endpoint goes with --format otlp"}},
	})
}

func TestSameEndpoint(t *testing.T) {
	cases := []struct {
		up, listen string
		same       bool
	}{
		{"127.0.0.1:8321", "127.0.0.1:8321", true},
		{"localhost:8321", "127.0.0.1:8321", true},
		{"[::1]:8321", "127.0.0.1:8321", true},
		{"127.0.0.1:8321", "0.0.0.0:8321", true},
		{"127.0.0.1:8322", "127.0.0.1:8321", false},
		{"api.openai.com:443", "127.0.0.1:443", false},
		{"api.openai.com", "127.0.0.1:8321", false},
	}
	for _, c := range cases {
		if got := sameEndpoint(c.up, c.listen); got != c.same {
			t.Errorf("%s vs %s: %v", c.up, c.listen, got)
		}
	}
}

// TestProxyOpen: --open runs the workbench on the proxy's database, its run's
// conversation already there, while the proxy forwards and records; quitting the
// workbench stops the proxy.
func TestProxyOpen(t *testing.T) {
	isolate(t)
	db := filepath.Join(t.TempDir(), "px.db")
	var seen []string
	var errs uitest.Buffer
	pr, pw := io.Pipe()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		if sc.Scan() {
			urls <- sc.Text()
		}
		io.Copy(io.Discard, pr)
	}()
	wb := func(ctx context.Context, gotDB, _ string) error {
		s, err := storage.Open(ctx, gotDB)
		if err != nil {
			return err
		}
		defer s.Close()
		cs, _ := s.ListConversations(ctx)
		for _, c := range cs {
			seen = append(seen, c.Title)
		}
		resp, err := http.Post(<-urls+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil // the user quits
	}
	code := Main(context.Background(), Env{Args: []string{"proxy", "--open", "--port", "0", "--db", db, "--model", "demo", "--title", "live"},
		Stdin: strings.NewReader(""), Stdout: pw, Stderr: &errs, Workbench: wb})
	pw.Close()
	if code != 0 || len(seen) != 1 || seen[0] != "live" {
		t.Fatalf("exit %d, the workbench saw %v: %s", code, seen, errs.String())
	}
	if strings.Contains(errs.String(), "POST /v1/chat/completions") {
		t.Errorf("the call log went to the terminal the workbench owns: %s", errs.String())
	}
	s, _ := storage.Open(context.Background(), db)
	defer s.Close()
	cs, _ := s.ListConversations(context.Background())
	if len(cs) != 1 || cs[0].Turns != 1 {
		t.Errorf("conversations %+v", cs)
	}
}
