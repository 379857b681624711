package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/adapter"
)

// TestUpstreamFailures: an upstream error reaches the caller unchanged (status, body),
// a dead upstream gives 502 and a slow one 504 with an OpenAI-shaped error; each is
// recorded as a failed call with its request.
func TestUpstreamFailures(t *testing.T) {
	msgs, _ := adapter.Chat{}.Format(requests[0].req)
	mj, _ := json.Marshal(msgs)
	body := `{"model":"m","messages":` + string(mj) + `}`

	t.Run("error status", func(t *testing.T) {
		f := newFixture(t, Upstream{})
		errBody := `{"error":{"message":"Rate limit reached for sk-ab***cd","type":"requests","code":"rate_limit_exceeded"}}`
		f.up.answer = func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			w.Header().Set("Retry-After", "7")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, errBody)
		}
		resp, got := f.chat(t, body)
		if resp.StatusCode != 429 || string(got) != errBody || resp.Header.Get("Retry-After") != "7" {
			t.Errorf("caller got %d %q retry-after %q", resp.StatusCode, got, resp.Header.Get("Retry-After"))
		}
		c := f.rec.last(t)
		if !strings.Contains(c.Error, "upstream answered 429 Too Many Requests: Rate limit reached") || c.Outputs != nil ||
			len(c.Tries) != 1 || c.Tries[0].Status != 429 || c.RawRequest != body || c.Messages.Len() != 2 {
			t.Errorf("record: error %q outputs %v tries %+v", c.Error, c.Outputs, c.Tries)
		}
		if f.wait(t, 1); !strings.Contains(f.log.String(), " 429 POST /v1/chat/completions") {
			t.Errorf("log: %s", f.log.String())
		}
	})
	t.Run("dead upstream", func(t *testing.T) {
		dead := httptest.NewServer(http.NotFoundHandler())
		url := dead.URL
		dead.Close()
		f := newFixture(t, Upstream{BaseURL: url + "/v1", Connect: 5 * time.Second})
		resp, got := f.chat(t, body)
		if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(got), `"sessionbench proxy: upstream 127.0.0.1:`) {
			t.Errorf("caller got %d %s", resp.StatusCode, got)
		}
		c := f.rec.last(t)
		if !strings.Contains(c.Error, "connect") || c.RawRequest != body || c.Tries[0].Status != http.StatusBadGateway {
			t.Errorf("record: error %q request %q", c.Error, c.RawRequest)
		}
	})
	t.Run("slow upstream", func(t *testing.T) {
		release := make(chan struct{})
		f := newFixture(t, Upstream{Total: 50 * time.Millisecond})
		f.up.answer = func(w http.ResponseWriter, r *http.Request, _ []byte) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		defer close(release)
		resp, got := f.chat(t, body)
		if resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(got), "no complete answer within 50ms") {
			t.Errorf("caller got %d %s", resp.StatusCode, got)
		}
		if c := f.rec.last(t); !strings.Contains(c.Error, "no complete answer within 50ms") {
			t.Errorf("record: error %q", c.Error)
		}
	})
	t.Run("no first byte", func(t *testing.T) {
		release := make(chan struct{})
		f := newFixture(t, Upstream{FirstByte: 50 * time.Millisecond, Stall: time.Hour})
		f.up.answer = func(w http.ResponseWriter, r *http.Request, _ []byte) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush() // headers, then nothing: a server loading its model
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		defer close(release)
		f.chat(t, body)
		if c := f.rec.last(t); !strings.Contains(c.Error, "no answer began within 50ms") {
			t.Errorf("record: error %q", c.Error)
		}
	})
	t.Run("stalled stream", func(t *testing.T) {
		release := make(chan struct{})
		// the first-byte clock is long: only the silence after the first bytes ends it
		f := newFixture(t, Upstream{FirstByte: time.Hour, Stall: 300 * time.Millisecond})
		f.up.answer = func(w http.ResponseWriter, r *http.Request, _ []byte) {
			w.Header().Set("Content-Type", "text/event-stream")
			for range 4 { // alive for longer than Stall in all, never silent for as long
				io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"[[ ## answer\"}}]}\n\n")
				w.(http.Flusher).Flush()
				time.Sleep(100 * time.Millisecond)
			}
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		defer close(release)
		resp, got := f.chat(t, body)
		if n := strings.Count(string(got), "data: "); resp.StatusCode != 200 || n != 4 {
			t.Errorf("caller got %d with %d events, want the 4 sent before the stall", resp.StatusCode, n)
		}
		if c := f.rec.last(t); !strings.Contains(c.Error, "the upstream stalled: nothing for 300ms") || !strings.HasPrefix(c.Completion, "[[ ## answer") {
			t.Errorf("record: error %q completion %q", c.Error, c.Completion)
		}
	})
	t.Run("stream broken off", func(t *testing.T) {
		f := newFixture(t, Upstream{})
		f.up.answer = func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"[[ ## answer\"}}]}\n\n")
		}
		f.chat(t, body)
		if c := f.rec.last(t); !strings.Contains(c.Error, "end marker") || c.Completion != "[[ ## answer" || c.Outputs != nil {
			t.Errorf("record: error %q completion %q", c.Error, c.Completion)
		}
	})
}

// TestStreamMemoryBounded streams far more than MaxRecord through the proxy: the caller
// gets every byte, the record keeps at most the bound and says it was cut.
func TestStreamMemoryBounded(t *testing.T) {
	up := newUpstream(t)
	rec := newMemRecorder()
	srv, _ := New(Options{Upstream: Upstream{BaseURL: up.URL}, Recorder: rec, MaxRecord: 4096})
	px := httptest.NewServer(srv)
	defer px.Close()
	chunk := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + strings.Repeat("x", 1000) + "\"}}]}\n\n"
	up.answer = func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < 1000; i++ {
			io.WriteString(w, chunk)
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}
	resp, err := http.Post(px.URL+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"go"}],"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if want := int64(1000*len(chunk) + len("data: [DONE]\n\n")); n != want {
		t.Errorf("caller got %d bytes, want %d", n, want)
	}
	c := rec.last(t)
	if len(c.RawResponse) > 4096+100 || !strings.Contains(c.RawResponse, "[sessionbench: recording cut at 4096 of") ||
		len(c.Completion) > 4096 || !strings.Contains(c.Error, "longer than the 4096 bytes recorded") {
		t.Errorf("record: %d raw bytes, %d completion bytes, error %q", len(c.RawResponse), len(c.Completion), c.Error)
	}
}

// TestUsageEstimatedWhenNotReported: a stream without a usage chunk is counted here and
// marked estimated; reported usage is kept as reported.
func TestUsageEstimatedWhenNotReported(t *testing.T) {
	f := newFixture(t, Upstream{})
	f.up.answer = func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"four words of reply\"}}]}\n\ndata: [DONE]\n\n")
	}
	resp, err := http.Post(f.proxy.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"count these prompt tokens"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if c := f.rec.last(t); !c.Usage.Estimated || c.Usage.PromptTokens == 0 || c.Usage.CompletionTokens != 4 || c.Error != "" {
		t.Errorf("usage %+v error %q", c.Usage, c.Error)
	}
	f.up.answer, f.up.text = nil, "x"
	resp, err = http.Post(f.proxy.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"q"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if c := f.rec.last(t); c.Usage.Estimated || c.Usage.PromptTokens != 11 {
		t.Errorf("reported usage %+v", c.Usage)
	}
}

// TestRequestTooLarge: a body over the proxy's bound is refused with 413 and never sent.
func TestRequestTooLarge(t *testing.T) {
	up := newUpstream(t)
	sent := false
	up.answer = func(w http.ResponseWriter, _ *http.Request, _ []byte) { sent = true }
	srv, _ := New(Options{Upstream: Upstream{BaseURL: up.URL}, Recorder: newMemRecorder()})
	px := httptest.NewServer(srv)
	defer px.Close()
	resp, err := http.Post(px.URL+"/chat/completions", "application/json", io.LimitReader(zeros{}, maxRequest+1))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "larger than 64 MiB") || sent {
		t.Fatalf("status %d, body %s, sent upstream: %v", resp.StatusCode, b, sent)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}
