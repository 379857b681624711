package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
)

func ptr[T any](v T) *T { return &v }

func fastRetry(n int) *RetryPolicy {
	return &RetryPolicy{MaxRetries: n, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, MaxRetryAfter: time.Minute}
}

func newTestLM(t *testing.T, s *chatServer, mod func(o *OpenAIOptions)) *OpenAI {
	t.Helper()
	o := OpenAIOptions{Provider: "test", BaseURL: s.url(), APIKey: "sk-test", APIKeyEnv: "TEST_KEY", Model: "test-model",
		Retry: fastRetry(3), Timeouts: &Timeouts{Connect: 2 * time.Second, FirstToken: 5 * time.Second, Total: 20 * time.Second}}
	if mod != nil {
		mod(&o)
	}
	m, err := NewOpenAI(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var twoMessages = []lm.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Say hello"}}

func TestOpenAINonStreaming(t *testing.T) {
	s := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeCompletion(w, "Hello there", 4) })
	m := newTestLM(t, s, func(o *OpenAIOptions) {
		o.Headers = map[string]string{"X-Title": "sessionbench-test"}
		o.Temperature = ptr(0.5)
	})
	resp, err := m.Call(context.Background(), lm.Request{Messages: lm.ListOf(twoMessages),
		Params: lm.Params{Temperature: ptr(0.0), MaxTokens: ptr(64), Stop: []string{"\n\n"}, Seed: ptr(int64(7))}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "Hello there" || resp.FinishReason != "stop" || resp.Model != "test-model-0613" {
		t.Errorf("response = %+v", resp)
	}
	want := lm.Usage{PromptTokens: 11, CompletionTokens: 7, CachedTokens: 4, TotalTokens: 18}
	if resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
	if got := string(s.body(0)); got != string(resp.RequestBody) {
		t.Errorf("server received\n%s\nrecorded\n%s", got, resp.RequestBody)
	}
	var body map[string]any
	if err := json.Unmarshal(resp.RequestBody, &body); err != nil {
		t.Fatalf("recorded body is not JSON: %v\n%s", err, resp.RequestBody)
	}
	// A zero temperature from the request must reach the wire (go-openai would drop it).
	for k, v := range map[string]any{"model": "test-model", "temperature": 0.0, "max_tokens": 64.0, "seed": 7.0, "stream": false} {
		if body[k] != v {
			t.Errorf("body[%s] = %v, want %v", k, body[k], v)
		}
	}
	if stop, _ := body["stop"].([]any); len(stop) != 1 || stop[0] != "\n\n" {
		t.Errorf("body stop = %v", body["stop"])
	}
	if !strings.Contains(string(resp.ResponseBody), `"cached_tokens":4`) {
		t.Errorf("raw response not kept: %s", resp.ResponseBody)
	}
	h := s.headers[0]
	if h.Get("Authorization") != "Bearer sk-test" || h.Get("X-Title") != "sessionbench-test" {
		t.Errorf("headers = %v", h)
	}
	if len(resp.Tries) != 1 || resp.Tries[0].Status != 200 || resp.Tries[0].Err != "" {
		t.Errorf("tries = %+v", resp.Tries)
	}
}

func TestOpenAIStreaming(t *testing.T) {
	deltas := []string{"Hel", "lo, ", "world"}
	s := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int) { streamAll(w, deltas...) })
	m := newTestLM(t, s, nil)
	var got []string
	resp, err := m.Call(context.Background(), lm.Request{Messages: lm.ListOf(twoMessages), OnDelta: func(d string) { got = append(got, d) }})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != "Hel|lo, |world" || resp.Text != "Hello, world" {
		t.Errorf("deltas %q, text %q", got, resp.Text)
	}
	want := lm.Usage{PromptTokens: 20, CompletionTokens: 3, CachedTokens: 16, TotalTokens: 23}
	if resp.Usage != want || resp.FinishReason != "stop" {
		t.Errorf("usage %+v finish %q", resp.Usage, resp.FinishReason)
	}
	if string(s.body(0)) != string(resp.RequestBody) {
		t.Errorf("server received\n%s\nrecorded\n%s", s.body(0), resp.RequestBody)
	}
	if !strings.Contains(string(resp.RequestBody), `"stream":true`) || !strings.Contains(string(resp.RequestBody), `"include_usage":true`) {
		t.Errorf("stream request body = %s", resp.RequestBody)
	}
	if string(resp.ResponseBody) != transcript(deltas...) {
		t.Errorf("raw SSE\n%q\nwant\n%q", resp.ResponseBody, transcript(deltas...))
	}
}

// The second chunk is only sent after the client has seen the first: deltas are
// delivered as they arrive, not at the end.
func TestOpenAIStreamDeliversIncrementally(t *testing.T) {
	seen := make(chan struct{})
	s := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w)
		event(w, deltaChunk("first"))
		select {
		case <-seen:
		case <-time.After(5 * time.Second):
			return // the client never saw the first delta; the test fails below
		}
		event(w, deltaChunk(" second"))
		event(w, finishChunk())
		event(w, "[DONE]")
	})
	m := newTestLM(t, s, nil)
	var once sync.Once
	resp, err := m.Call(context.Background(), lm.Request{Messages: lm.ListOf(twoMessages), OnDelta: func(string) { once.Do(func() { close(seen) }) }})
	if err != nil || resp.Text != "first second" {
		t.Fatalf("text %q err %v", resp.Text, err)
	}
}

func TestOpenAIRetriesThenSucceeds(t *testing.T) {
	for _, tc := range []struct {
		status int
		stream bool
	}{{429, false}, {500, false}, {502, false}, {503, false}, {504, false}, {429, true}, {503, true}} {
		status := tc.status
		t.Run(fmt.Sprintf("%d stream=%v", status, tc.stream), func(t *testing.T) {
			s := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
				switch {
				case n < 2:
					writeError(w, status, "try later")
				case tc.stream:
					streamAll(w, "o", "k")
				default:
					writeCompletion(w, "ok", 0)
				}
			})
			m := newTestLM(t, s, nil)
			var seen []lm.Try
			req := lm.Request{Messages: lm.ListOf(twoMessages), OnTry: func(a lm.Try) { seen = append(seen, a) }}
			if tc.stream {
				req.OnDelta = func(string) {}
			}
			resp, err := m.Call(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != "ok" || len(resp.Tries) != 3 || len(seen) != 3 || s.requests() != 3 {
				t.Fatalf("text %q tries %+v seen %d requests %d", resp.Text, resp.Tries, len(seen), s.requests())
			}
			for i, a := range resp.Tries[:2] {
				if a.N != i+1 || a.Status != status || !a.Retrying || !strings.Contains(a.Err, "try later") {
					t.Errorf("try %d = %+v", i, a)
				}
			}
			if last := resp.Tries[2]; last.Retrying || last.Err != "" || last.Status != 200 {
				t.Errorf("last try = %+v", last)
			}
			// Every try sends the same body; the recorded one is what went out.
			if string(s.body(0)) != string(s.body(2)) || string(resp.RequestBody) != string(s.body(2)) {
				t.Error("request bodies differ between tries or from the recorded one")
			}
		})
	}
}

func TestOpenAIHonoursRetryAfter(t *testing.T) {
	s := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 0 {
			w.Header().Set("Retry-After", "1")
			writeError(w, 429, "Rate limit reached for requests")
			return
		}
		writeCompletion(w, "ok", 0)
	})
	m := newTestLM(t, s, nil)
	start := time.Now()
	resp, err := m.Call(context.Background(), lm.Request{Messages: lm.ListOf(twoMessages)})
	if err != nil {
		t.Fatal(err)
	}
	if a := resp.Tries[0]; a.Wait != time.Second || a.Status != 429 || !a.Retrying {
		t.Errorf("first try = %+v, want a 1s wait", a)
	}
	if time.Since(start) < time.Second {
		t.Error("the retry did not wait for Retry-After")
	}
}

func TestOpenAIGivesUpAfterMaxRetries(t *testing.T) {
	s := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeError(w, 503, "overloaded") })
	m := newTestLM(t, s, func(o *OpenAIOptions) { o.Retry = fastRetry(2) })
	resp, err := m.Call(context.Background(), lm.Request{Messages: lm.ListOf(twoMessages)})
	if err == nil || !strings.Contains(err.Error(), "gave up after 3 tries") || !strings.Contains(err.Error(), "overloaded") {
		t.Fatalf("err = %v", err)
	}
	if s.requests() != 3 || len(resp.Tries) != 3 || resp.Tries[2].Retrying {
		t.Errorf("requests %d tries %+v", s.requests(), resp.Tries)
	}
	var e *Error
	if !errors.As(err, &e) || e.Status != 503 {
		t.Errorf("error %T %v is not an *Error with status 503", err, err)
	}
}

func TestOpenAINonRetryable(t *testing.T) {
	cases := []struct {
		status         int
		msg            string
		noKey          bool
		wantHint       string
		wantInErrorMsg string
	}{
		{401, "Incorrect API key provided: sk-test.", false, "wrong API key", "Incorrect API key"},
		{401, "Missing bearer token", true, "$TEST_KEY is not set", "Missing bearer"},
		{400, "max_tokens is too large", false, "rejected the request", "max_tokens is too large"},
		{404, "The model `test-model` does not exist", false, `unknown model "test-model"`, "does not exist"},
		{404, "page not found", false, "wrong base URL", "page not found"},
		{429, "You exceeded your current quota, please check your plan and billing details.", false, "no quota", "exceeded your current quota"},
	}
	for _, c := range cases {
		t.Run(c.msg, func(t *testing.T) {
			s := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeError(w, c.status, c.msg) })
			m := newTestLM(t, s, func(o *OpenAIOptions) {
				if c.noKey {
					o.APIKey = ""
				}
			})
			resp, err := m.Call(context.Background(), lm.Request{Messages: lm.ListOf(twoMessages), OnDelta: func(string) {}})
			if err == nil {
				t.Fatal("no error")
			}
			var e *Error
			if !errors.As(err, &e) || e.Status != c.status || !strings.Contains(e.Hint, c.wantHint) || !strings.Contains(err.Error(), c.wantInErrorMsg) {
				t.Errorf("err = %v (hint %q)", err, e.Hint)
			}
			if s.requests() != 1 || len(resp.Tries) != 1 {
				t.Errorf("retried a non-retryable error: %d requests", s.requests())
			}
			if !strings.Contains(string(resp.ResponseBody), c.msg[:5]) {
				t.Errorf("error body not kept: %s", resp.ResponseBody)
			}
		})
	}
}

func TestOpenAIConnectionResetIsRetried(t *testing.T) {
	s := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 0 {
			panic(http.ErrAbortHandler) // the server drops the connection without answering
		}
		streamAll(w, "fine")
	})
	m := newTestLM(t, s, nil)
	resp, err := m.Call(context.Background(), lm.Request{Messages: lm.ListOf(twoMessages), OnDelta: func(string) {}})
	if err != nil || resp.Text != "fine" || len(resp.Tries) != 2 {
		t.Fatalf("text %q err %v tries %+v", resp.Text, err, resp.Tries)
	}
	if !strings.Contains(resp.Tries[0].Err, "connection reset") {
		t.Errorf("first try = %+v", resp.Tries[0])
	}
}

func TestOpenAIMidStreamDisconnect(t *testing.T) {
	cases := map[string]func(w http.ResponseWriter){
		"dropped": func(w http.ResponseWriter) {
			sse(w)
			event(w, deltaChunk("Hello "))
			event(w, deltaChunk("wor"))
			panic(http.ErrAbortHandler)
		},
		"ended without [DONE]": func(w http.ResponseWriter) {
			sse(w)
			event(w, deltaChunk("Hello "))
			event(w, deltaChunk("wor"))
		},
	}
	for name, handler := range cases {
		t.Run(name, func(t *testing.T) {
			s := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int) { handler(w) })
			m := newTestLM(t, s, nil)
			var shown strings.Builder
			resp, err := m.Call(context.Background(), lm.Request{Messages: lm.ListOf(twoMessages), OnDelta: func(d string) { shown.WriteString(d) }})
			var pe *lm.PartialError
			if !errors.As(err, &pe) || pe.Partial != "Hello wor" {
				t.Fatalf("err = %T %v, want a PartialError with the text so far", err, err)
			}
			if resp.Text != "" || lm.IsCancelled(err) || shown.String() != "Hello wor" {
				t.Errorf("text %q shown %q cancelled %v", resp.Text, shown.String(), lm.IsCancelled(err))
			}
			if s.requests() != 1 {
				t.Errorf("a stream that delivered text was retried (%d requests)", s.requests())
			}
		})
	}
}

func TestOpenAIErrorInsideStream(t *testing.T) {
	s := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w)
		event(w, `{"error":{"message":"context length exceeded","type":"invalid_request_error"}}`)
	})
	m := newTestLM(t, s, nil)
	_, err := m.Call(context.Background(), lm.Request{Messages: lm.ListOf(twoMessages), OnDelta: func(string) {}})
	if err == nil || !strings.Contains(err.Error(), "context length exceeded") || s.requests() != 1 {
		t.Fatalf("err = %v, requests %d", err, s.requests())
	}
}

func TestOpenAIFirstTokenTimeout(t *testing.T) {
	s := newChatServer(t, nil)
	s.handle = func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w) // headers and the role chunk arrive at once, then nothing
		s.waitGone(r, n)
	}
	m := newTestLM(t, s, func(o *OpenAIOptions) {
		o.Retry = fastRetry(1)
		o.Timeouts.FirstToken = 100 * time.Millisecond
	})
	resp, err := m.Call(context.Background(), lm.Request{Messages: lm.ListOf(twoMessages), OnDelta: func(string) {}})
	if err == nil || !strings.Contains(err.Error(), "no first token within 100ms") || lm.IsCancelled(err) {
		t.Fatalf("err = %v", err)
	}
	if len(resp.Tries) != 2 || !resp.Tries[0].Retrying {
		t.Errorf("tries = %+v, want one retry", resp.Tries)
	}
	for i := 0; i < 2; i++ {
		select {
		case <-s.gone:
		case <-time.After(5 * time.Second):
			t.Fatal("the server never saw the timed-out connection close")
		}
	}
}

func TestOpenAITotalTimeout(t *testing.T) {
	s := newChatServer(t, nil)
	s.handle = func(w http.ResponseWriter, r *http.Request, n int) { s.waitGone(r, n) }
	m := newTestLM(t, s, func(o *OpenAIOptions) { o.Timeouts.Total = 150 * time.Millisecond })
	resp, err := m.Call(context.Background(), lm.Request{Messages: lm.ListOf(twoMessages)})
	if err == nil || !strings.Contains(err.Error(), "total timeout of 150ms") || len(resp.Tries) != 1 {
		t.Fatalf("err = %v tries %+v", err, resp.Tries)
	}
	select {
	case <-s.gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the connection close")
	}
}

func TestOpenAICancelMidStream(t *testing.T) {
	s := newChatServer(t, nil)
	s.handle = func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w)
		event(w, deltaChunk("partial"))
		s.waitGone(r, n)
	}
	m := newTestLM(t, s, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := m.Call(ctx, lm.Request{Messages: lm.ListOf(twoMessages), OnDelta: func(string) { cancel() }})
	if !lm.IsCancelled(err) {
		t.Fatalf("err = %v, want cancelled", err)
	}
	var pe *lm.PartialError
	if resp.Text != "" || !errors.As(err, &pe) || pe.Partial != "partial" {
		t.Errorf("text %q err %v", resp.Text, err)
	}
	select {
	case <-s.gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the connection close")
	}
	if s.requests() != 1 {
		t.Errorf("a cancelled call was retried")
	}
}

func TestOpenAICancelDuringBackoff(t *testing.T) {
	s := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Retry-After", "30")
		writeError(w, 429, "slow down")
	})
	m := newTestLM(t, s, func(o *OpenAIOptions) { o.Timeouts.Total = time.Minute })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := m.Call(ctx, lm.Request{Messages: lm.ListOf(twoMessages), OnTry: func(a lm.Try) {
		if a.Retrying && a.Wait == 30*time.Second {
			cancel()
		}
	}})
	if !lm.IsCancelled(err) || s.requests() != 1 {
		t.Fatalf("err = %v requests %d", err, s.requests())
	}
}

func TestOpenAIRetryAfterTooLong(t *testing.T) {
	s := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Retry-After", "3600")
		writeError(w, 429, "rate limited")
	})
	m := newTestLM(t, s, nil)
	_, err := m.Call(context.Background(), lm.Request{Messages: lm.ListOf(twoMessages)})
	if err == nil || !strings.Contains(err.Error(), "asks to wait 1h0m0s") || s.requests() != 1 {
		t.Fatalf("err = %v requests %d", err, s.requests())
	}
}

func TestOpenAIConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	m, err := NewOpenAI(OpenAIOptions{BaseURL: "http://" + addr + "/v1", Model: "m", Retry: fastRetry(3)})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Call(context.Background(), lm.Request{Messages: lm.ListOf(twoMessages)})
	if err == nil || !strings.Contains(err.Error(), "is the server running") || len(resp.Tries) != 1 {
		t.Fatalf("err = %v tries %d", err, len(resp.Tries))
	}
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name, value string
		want        time.Duration
		ok          bool
	}{
		{"Retry-After", "2", 2 * time.Second, true},
		{"Retry-After", "0.5", 500 * time.Millisecond, true},
		{"Retry-After", now.Add(3 * time.Second).Format(http.TimeFormat), 3 * time.Second, true},
		{"Retry-After", "soon", 0, false},
		{"Retry-After-Ms", "250", 250 * time.Millisecond, true},
	}
	for _, c := range cases {
		h := http.Header{}
		h.Set(c.name, c.value)
		got, ok := retryAfter(h, now)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: %s -> %v %v, want %v %v", c.name, c.value, got, ok, c.want, c.ok)
		}
	}
}

func TestBackoffGrowsWithJitter(t *testing.T) {
	p := RetryPolicy{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	for n, full := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond, 6: time.Second} {
		for i := 0; i < 20; i++ {
			if d := p.backoff(n); d < full/2 || d > full {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", n, d, full/2, full)
			}
		}
	}
}

func TestAppendMembers(t *testing.T) {
	cases := map[string]string{
		`{"a":1}`:     `{"a":1,"temperature":0}`,
		`{}`:          `{"temperature":0}`,
		"{\"a\":1}\n": `{"a":1,"temperature":0}`,
		`[1]`:         `[1]`,
	}
	for in, want := range cases {
		if got := string(appendMembers([]byte(in), []string{`"temperature":0`})); got != want {
			t.Errorf("%q -> %q, want %q", in, got, want)
		}
	}
}

// go-openai drops empty message content; the body on the wire must still carry it.
func TestOpenAIEmptyContentIsSent(t *testing.T) {
	s := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeCompletion(w, "ok", 0) })
	m := newTestLM(t, s, nil)
	msgs := []lm.Message{{Role: "system", Content: ""}, {Role: "user", Content: "<b>&</b> é"}}
	resp, err := m.Call(context.Background(), lm.Request{Messages: lm.ListOf(msgs), Params: lm.Params{Temperature: ptr(0.7)}})
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages    []map[string]any `json:"messages"`
		Temperature float64          `json:"temperature"`
	}
	if err := json.Unmarshal(s.body(0), &body); err != nil {
		t.Fatalf("%v: %s", err, s.body(0))
	}
	if c, ok := body.Messages[0]["content"]; !ok || c != "" || body.Messages[1]["content"] != "<b>&</b> é" || body.Temperature != 0.7 {
		t.Errorf("body = %s", s.body(0))
	}
	if string(resp.RequestBody) != string(s.body(0)) {
		t.Errorf("recorded body differs from the one received")
	}
}

func TestOpenAIAzureAddressing(t *testing.T) {
	var path, query, key, auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, query, key, auth = r.URL.Path, r.URL.RawQuery, r.Header.Get("api-key"), r.Header.Get("Authorization")
		writeCompletion(w, "ok", 0)
	}))
	defer srv.Close()
	m, err := NewOpenAI(OpenAIOptions{BaseURL: srv.URL, APIKey: "az-key", Model: "my-deployment", Azure: true, APIVersion: "2024-06-01"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Call(context.Background(), lm.Request{Messages: lm.ListOf(twoMessages)}); err != nil {
		t.Fatal(err)
	}
	if path != "/openai/deployments/my-deployment/chat/completions" || query != "api-version=2024-06-01" || key != "az-key" || auth != "" {
		t.Errorf("path %q query %q api-key %q auth %q", path, query, key, auth)
	}
}
