package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/recognize"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// upstream is a real HTTP server speaking chat completions. It answers each request
// with the next reply set by the test, and keeps what it received.
type upstream struct {
	*httptest.Server
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
	paths   []string
	// answer writes the response; the default is a JSON completion of text.
	answer func(w http.ResponseWriter, r *http.Request, body []byte)
	text   string
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.bodies = append(u.bodies, body)
		u.headers = append(u.headers, r.Header.Clone())
		u.paths = append(u.paths, r.URL.RequestURI())
		answer, text := u.answer, u.text
		u.mu.Unlock()
		if answer != nil {
			answer(w, r, body)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req-123")
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"up-model-0613",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18,"prompt_tokens_details":{"cached_tokens":3}}}`, jsonText(text))
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) last() ([]byte, http.Header, string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := len(u.bodies) - 1
	return u.bodies[n], u.headers[n], u.paths[n]
}

func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// memRecorder keeps the calls the proxy records; the proxy records a call after the
// caller has its answer, so tests wait for it.
type memRecorder struct {
	mu     sync.Mutex
	calls  []*trace.Call
	routes [][2]string
	ch     chan *trace.Call
}

func newMemRecorder() *memRecorder { return &memRecorder{ch: make(chan *trace.Call, 64)} }

func (m *memRecorder) Begin(session, turn string, _ time.Time) func(context.Context, *trace.Call) error {
	return func(_ context.Context, c *trace.Call) error {
		m.mu.Lock()
		m.calls = append(m.calls, c)
		m.routes = append(m.routes, [2]string{session, turn})
		m.mu.Unlock()
		m.ch <- c
		return nil
	}
}

// last waits for the next recorded call.
func (m *memRecorder) last(t *testing.T) *trace.Call {
	t.Helper()
	select {
	case c := <-m.ch:
		return c
	case <-time.After(20 * time.Second): // a hang guard, not a speed assertion
		t.Fatal("no call recorded")
		return nil
	}
}

type fixture struct {
	up     *upstream
	rec    *memRecorder
	proxy  *httptest.Server
	log    *syncBuffer
	served chan struct{} // one per request the proxy finished (logged and recorded)
}

// wait blocks until the proxy finished n more requests.
func (f *fixture) wait(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case <-f.served:
		case <-time.After(20 * time.Second): // a hang guard, not a speed assertion
			t.Fatal("the proxy did not finish a request")
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// chat posts a chat completion body to the proxy and reads the whole answer: its
// response (body closed) and the bytes it carried.
func (f *fixture) chat(t *testing.T, body string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(f.proxy.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(got)
}

func newFixture(t *testing.T, up Upstream) *fixture {
	f := &fixture{up: newUpstream(t), rec: newMemRecorder(), log: &syncBuffer{}, served: make(chan struct{}, 64)}
	if up.BaseURL == "" {
		up.BaseURL = f.up.URL + "/v1"
	}
	srv, err := New(Options{Upstream: up, Recorder: f.rec, Log: f.log})
	if err != nil {
		t.Fatal(err)
	}
	f.proxy = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.ServeHTTP(w, r)
		f.served <- struct{}{}
	}))
	t.Cleanup(f.proxy.Close)
	return f
}

func field(name, typ, desc string) sig.Field {
	return sig.Field{Name: name, Type: sig.MustType(typ), Desc: desc}
}

// requests are DSPy requests written by our own adapters for varied signatures, with
// the outputs the upstream answers.
var requests = []struct {
	name    string
	ad      adapter.Adapter
	req     adapter.Request
	outputs *sig.Map
}{
	{"chat, plain", adapter.Chat{}, adapter.Request{
		Signature: sig.New("", "Answer briefly.", []sig.Field{field("question", "str", "")}, []sig.Field{field("answer", "str", "")}),
		Inputs:    sig.NewMap("question", "What is 2+2?")}, sig.NewMap("answer", "4")},
	{"chat, session history and demos", adapter.Chat{}, adapter.Request{
		Signature: sig.New("ClassifyIntent", "Classify the customer's intent.", []sig.Field{field("question", "str", "")},
			[]sig.Field{field("intent", "Literal['billing', 'technical', 'general']", "the intent")}).
			AppendInput(sig.Field{Name: "history", Type: sig.THistory, Desc: "Conversation history"}),
		Demos: []*sig.Map{sig.NewMap("question", "refund?", "intent", "billing")},
		Inputs: sig.NewMap("question", "The reset email never arrives", "history", sig.History{Messages: []*sig.Map{
			sig.NewMap("question", "I can't log in", "intent", "technical")}})}, sig.NewMap("intent", "technical")},
	{"json, typed fields", adapter.JSON{}, adapter.Request{
		Signature: sig.New("Score", "", []sig.Field{field("facts", "list[str]", "facts"), field("n", "int", "")},
			[]sig.Field{field("score", "float", ""), field("ok", "bool", ""), field("tags", "list[str]", "")}),
		Inputs: sig.NewMap("facts", []any{"a", "b"}, "n", int64(2))}, sig.NewMap("score", 0.5, "ok", true, "tags", []any{"x"})},
	{"chat, chain of thought", adapter.Chat{}, adapter.Request{
		Signature: sig.New("", "", []sig.Field{field("question", "str", "")}, []sig.Field{field("reasoning", "str", "${reasoning}"), field("answer", "int", "")}),
		Inputs:    sig.NewMap("question", "6*7?")}, sig.NewMap("reasoning", "six sevens", "answer", int64(42))},
}

func completionFor(ad adapter.Adapter, s *sig.Signature, out *sig.Map) string {
	if ad.Name() == "json" {
		return adapter.JSON{}.AssistantContent(s, out, nil)
	}
	return adapter.AssistantContent(s, out, nil)
}

// TestGoOpenAIThroughProxy sends each request with go-openai, streamed and not, and
// checks the upstream got the exact body, the client the exact answer, and the record
// recovers signature, inputs and outputs that format back to the same bytes.
func TestGoOpenAIThroughProxy(t *testing.T) {
	f := newFixture(t, Upstream{})
	cfg := openai.DefaultConfig("sk-caller-key-123456")
	cfg.BaseURL = f.proxy.URL + "/v1"
	client := openai.NewClientWithConfig(cfg)
	for _, rq := range requests {
		msgs, err := rq.ad.Format(rq.req)
		if err != nil {
			t.Fatal(err)
		}
		completion := completionFor(rq.ad, rq.req.Signature, rq.outputs)
		var oaMsgs []openai.ChatCompletionMessage
		for _, m := range msgs {
			oaMsgs = append(oaMsgs, openai.ChatCompletionMessage{Role: m.Role, Content: m.Content})
		}
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", rq.name, stream), func(t *testing.T) {
				f.up.mu.Lock()
				f.up.text = completion
				f.up.answer = nil
				if stream {
					f.up.answer = sseAnswer(completion, nil)
				}
				f.up.mu.Unlock()
				req := openai.ChatCompletionRequest{Model: "gpt-4o-mini", Messages: oaMsgs}
				var got string
				if stream {
					got = streamText(t, client, req)
				} else {
					resp, err := client.CreateChatCompletion(context.Background(), req)
					if err != nil {
						t.Fatal(err)
					}
					got = resp.Choices[0].Message.Content
				}
				if got != completion {
					t.Fatalf("client got %q, want %q", got, completion)
				}
				body, hdr, _ := f.up.last()
				if hdr.Get("Authorization") != "Bearer sk-caller-key-123456" {
					t.Errorf("upstream saw Authorization %q, want the caller's key", hdr.Get("Authorization"))
				}
				c := f.rec.last(t)
				f.wait(t, 1)
				if c.RawRequest != string(body) {
					t.Errorf("recorded request differs from what the upstream got")
				}
				if c.Error != "" || c.Recovered != trace.RecoveredExact || c.Adapter != rq.ad.Name() {
					t.Fatalf("call: error %q recovered %q adapter %q", c.Error, c.Recovered, c.Adapter)
				}
				if !c.Outputs.Equal(rq.outputs) {
					t.Errorf("outputs %s, want %s", py.CompactJSON(c.Outputs), py.CompactJSON(rq.outputs))
				}
				if c.Completion != completion || c.Usage.PromptTokens != 11 || c.Usage.CachedTokens != 3 || c.Model != "up-model-0613" {
					t.Errorf("completion %q usage %+v model %q", c.Completion, c.Usage, c.Model)
				}
				// The recovered call formats back to the recorded request, byte for byte.
				r := recognize.Parse(c.Messages.Slice())
				in := c.Inputs.Clone()
				if hf := r.Signature.HistoryField(); hf != "" {
					in.Set(hf, c.History)
				}
				again, err := rq.ad.Format(adapter.Request{Signature: r.Signature, Demos: r.Demos, Inputs: in})
				if err != nil || recognize.Compare(msgs, again) != "" {
					t.Errorf("re-formatting the record: %v %s", err, recognize.Compare(msgs, again))
				}
				if strings.Contains(c.RawRequest+c.RawResponse+f.log.String(), "sk-caller-key") {
					t.Errorf("the caller's key was recorded or logged")
				}
			})
		}
	}
	if n := strings.Count(f.log.String(), "\n"); n != 2*len(requests) {
		t.Errorf("%d log lines, want one per call (%d):\n%s", n, 2*len(requests), f.log.String())
	}
}

// sseAnswer streams text in small chunks, then usage and [DONE]. Each chunk is flushed;
// gate, when set, is waited on after the first chunk (the test proves the chunk got
// through before the upstream finished).
func sseAnswer(text string, gate chan struct{}) func(w http.ResponseWriter, r *http.Request, body []byte) {
	return func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for i, part := range splitN(text, 7) {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"model\":\"up-model-0613\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%s}}]}\n\n", jsonText(part))
			fl.Flush()
			if i == 0 && gate != nil {
				<-gate
			}
		}
		fmt.Fprint(w, "data: {\"id\":\"c\",\"model\":\"up-model-0613\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
		fmt.Fprint(w, "data: {\"id\":\"c\",\"model\":\"up-model-0613\",\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":7,\"total_tokens\":18,\"prompt_tokens_details\":{\"cached_tokens\":3}}}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
}

func splitN(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

// TestPlainHTTPByteForByte posts raw bodies (odd spacing, unknown members, a content
// list) and checks both directions byte for byte, streamed and not.
func TestPlainHTTPByteForByte(t *testing.T) {
	f := newFixture(t, Upstream{APIKey: "sk-configured-0000"})
	msgs, _ := adapter.Chat{}.Format(requests[0].req)
	mj, _ := json.Marshal(msgs)
	body := []byte(`{ "model":"m",  "messages":` + string(mj) + `, "x_unknown": {"keep": [1, 2.50]}, "temperature": 0 }`)
	completion := completionFor(adapter.Chat{}, requests[0].req.Signature, requests[0].outputs)

	gate := make(chan struct{})
	f.up.answer = sseAnswer(completion, gate)
	var resp *http.Response
	first := make([]byte, 20)
	read := make(chan error, 1)
	go func() {
		var err error
		if resp, err = http.Post(f.proxy.URL+"/v1/chat/completions?api-version=1", "application/json", bytes.NewReader(body)); err == nil {
			_, err = io.ReadFull(resp.Body, first)
		}
		read <- err
	}()
	select {
	case err := <-read:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second): // a hang guard, not a speed assertion
		close(gate)
		t.Fatal("the first chunk did not get through while the upstream was still streaming")
	}
	close(gate) // the first chunk arrived while the upstream was still streaming
	rest, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var want bytes.Buffer
	rec := httptest.NewRecorder()
	sseAnswer(completion, nil)(rec, nil, nil)
	want.Write(rec.Body.Bytes())
	if got := append(first, rest...); !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("stream changed on the way:\n got %q\nwant %q", got, want.Bytes())
	}
	upBody, hdr, path := f.up.last()
	if !bytes.Equal(upBody, body) {
		t.Errorf("upstream got %q, want %q", upBody, body)
	}
	if path != "/v1/chat/completions?api-version=1" {
		t.Errorf("upstream path %q", path)
	}
	if hdr.Get("Authorization") != "Bearer sk-configured-0000" {
		t.Errorf("no caller key: the configured one must be sent, got %q", hdr.Get("Authorization"))
	}
	c := f.rec.last(t)
	if c.RawResponse != want.String() || c.Completion != completion || c.Error != "" {
		t.Errorf("record: error %q completion %q", c.Error, c.Completion)
	}
	if c.Params.Temperature == nil || *c.Params.Temperature != 0 || c.Params.Model != "m" {
		t.Errorf("params %+v", c.Params)
	}

	// A content list: forwarded as is, recorded as plain messages.
	f.up.answer = nil
	f.up.text = "hello"
	odd := []byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"data:x"}}]}]}`)
	resp, err := http.Post(f.proxy.URL+"/v1/chat/completions", "application/json", bytes.NewReader(odd))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("X-Request-Id") != "req-123" || !strings.Contains(string(got), `"content":"hello"`) {
		t.Errorf("response %d %q headers %v", resp.StatusCode, got, resp.Header)
	}
	c = f.rec.last(t)
	if c.Recovered != trace.RecoveredNone || c.Adapter != "" || c.Outputs.String("assistant") != "hello" ||
		c.Inputs.String("user") != "hi\n\n"+`{"type":"image_url","image_url":{"url":"data:x"}}` {
		t.Errorf("plain call: recovered %q inputs %s outputs %s", c.Recovered, py.CompactJSON(c.Inputs), py.CompactJSON(c.Outputs))
	}
}

func TestKeysAndHeaders(t *testing.T) {
	f := newFixture(t, Upstream{APIKey: "sk-configured-9999", ForceKey: true, Headers: map[string]string{"X-Title": "sb", "X-Keep": "provider"}})
	f.up.text = "echo sk-configured-9999 and sk-caller-5555"
	req, _ := http.NewRequest(http.MethodPost, f.proxy.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"sk-caller-5555"}]}`))
	req.Header.Set("Authorization", "Bearer sk-caller-5555")
	req.Header.Set(HeaderSession, "s1")
	req.Header.Set(HeaderTurn, "t1")
	req.Header.Set("X-Keep", "caller")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(got), "echo sk-configured-9999 and sk-caller-5555") {
		t.Errorf("the caller must get the upstream's bytes unchanged: %s", got)
	}
	_, hdr, _ := f.up.last()
	if hdr.Get("Authorization") != "Bearer sk-configured-9999" || hdr.Get("X-Title") != "sb" || hdr.Get("X-Keep") != "caller" ||
		hdr.Get(HeaderSession) != "" || hdr.Get(HeaderTurn) != "" {
		t.Errorf("upstream headers %v", hdr)
	}
	c := f.rec.last(t)
	all := c.RawRequest + c.RawResponse + c.Completion + py.CompactJSON(c.Inputs) + py.CompactJSON(c.Outputs) + c.Error + f.log.String()
	for _, m := range c.Messages.All() {
		all += m.Content
	}
	for _, k := range []string{"sk-configured-9999", "sk-caller-5555"} {
		if strings.Contains(all, k) {
			t.Errorf("key %s recorded or logged", k)
		}
	}
	if c.Completion != "echo [key redacted] and [key redacted]" {
		t.Errorf("completion %q", c.Completion)
	}
	if f.rec.routes[0] != [2]string{"s1", "t1"} {
		t.Errorf("route %v", f.rec.routes[0])
	}
}

func TestOtherEndpointsPassThrough(t *testing.T) {
	f := newFixture(t, Upstream{})
	f.up.answer = func(w http.ResponseWriter, r *http.Request, _ []byte) {
		io.WriteString(w, `{"data":[{"id":"m1"}]}`)
	}
	resp, err := http.Get(f.proxy.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_, _, path := f.up.last()
	if string(got) != `{"data":[{"id":"m1"}]}` || path != "/v1/models" {
		t.Errorf("got %q via %q", got, path)
	}
	if f.wait(t, 1); len(f.rec.calls) != 0 || !strings.Contains(f.log.String(), "GET /v1/models") || !strings.Contains(f.log.String(), "not recorded") {
		t.Errorf("calls %d log %q", len(f.rec.calls), f.log.String())
	}
}

func TestStreamReaderChunking(t *testing.T) {
	raw := "data: {\"model\":\"m1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ab\"}}]}\r\n\r\n" +
		": comment\n\ndata: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"ignored\"}},{\"index\":0,\"delta\":{\"content\":\"c\"},\"finish_reason\":\"length\"}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2,\"total_tokens\":7}}\n\ndata: [DONE]"
	for size := 1; size <= len(raw); size += 7 {
		s := newStreamReader(1 << 10)
		for _, p := range splitN(raw, size) {
			s.Write([]byte(p))
		}
		r := s.result()
		if r.text != "abc" || r.model != "m1" || r.finish != "length" || r.usage != (lm.Usage{PromptTokens: 5, CompletionTokens: 2, TotalTokens: 7}) || !s.done {
			t.Fatalf("chunks of %d: %+v done %v", size, r, s.done)
		}
	}
}

// streamText streams a request with go-openai and returns the text it got.
func streamText(t *testing.T, client *openai.Client, req openai.ChatCompletionRequest) string {
	t.Helper()
	st, err := client.CreateChatCompletionStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	text := ""
	for {
		r, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return text
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Choices) > 0 {
			text += r.Choices[0].Delta.Content
		}
	}
}

// TestPlainHTTPRecognised posts every request with plain HTTP (no client library): each
// is recognised exactly, and what was recovered formats back to the bytes sent.
func TestPlainHTTPRecognised(t *testing.T) {
	f := newFixture(t, Upstream{})
	for _, rq := range requests {
		msgs, _ := rq.ad.Format(rq.req)
		mj, _ := json.Marshal(msgs)
		f.up.mu.Lock()
		f.up.answer, f.up.text = nil, completionFor(rq.ad, rq.req.Signature, rq.outputs)
		f.up.mu.Unlock()
		f.chat(t, `{"model":"m","messages":`+string(mj)+`}`)
		c := f.rec.last(t)
		r := recognize.Parse(c.Messages.Slice())
		again, err := r.Formatter().Format(adapter.Request{Signature: r.Signature, Demos: r.Demos, Inputs: r.FormatInputs()})
		if c.Recovered != trace.RecoveredExact || err != nil || recognize.Compare(msgs, again) != "" || !c.Outputs.Equal(rq.outputs) {
			t.Errorf("%s: recovered %q, re-formatting %v %s, outputs %v", rq.name, c.Recovered, err, recognize.Compare(msgs, again), c.Outputs)
		}
	}
}
