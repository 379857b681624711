package llm

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
)

// A 200 that is not what was asked for says what came instead and is not retried;
// a stream labelled wrongly but speaking SSE is accepted.
func TestOpenAIAnswersOfTheWrongKind(t *testing.T) {
	html := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("<!DOCTYPE html><html><body>Sign in to the corporate proxy</body></html>"))
	}
	cases := []struct {
		name    string
		stream  bool
		handler func(w http.ResponseWriter)
		want    []string // in the error; nil means success with text "ok"
	}{
		{"html page for a stream", true, html,
			[]string{"not as an OpenAI-compatible API", "Content-Type text/html; charset=utf-8", "not an event stream", `"<!DOCTYPE html><html><body>Sign in`, "/v1"}},
		{"html page for a completion", false, html, []string{"Content-Type text/html; charset=utf-8", "not JSON", "<!DOCTYPE html>"}},
		{"no content type, plain text", true, func(w http.ResponseWriter) {
			w.Header()["Content-Type"] = nil
			_, _ = w.Write([]byte("upstream connect error"))
		}, []string{"no Content-Type is not an event stream", `"upstream connect error"`}},
		{"event stream labelled text/plain", true, func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusOK)
			event(w, deltaChunk("ok"))
			event(w, finishChunk())
			event(w, "[DONE]")
		}, nil},
		{"stream of empty choices", true, func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			event(w, `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[]}`)
			event(w, "[DONE]")
		}, []string{`the server returned no choices (an empty "choices" list)`}},
		{"completion without choices", false, func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"id":"x","object":"chat.completion","model":"m","choices":[]}`))
		}, []string{`the server returned no choices (an empty "choices" list)`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int) { tc.handler(w) })
			m := newTestLM(t, s, nil)
			req := lm.Request{Messages: lm.ListOf(twoMessages)}
			if tc.stream {
				req.OnDelta = func(string) {}
			}
			resp, err := m.Call(context.Background(), req)
			if tc.want == nil {
				if err != nil || resp.Text != "ok" {
					t.Fatalf("text %q err %v", resp.Text, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted: %+v", resp)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "connection reset") || s.requests() != 1 || len(resp.Tries) != 1 {
				t.Errorf("retried as a transport failure: %d requests, tries %+v, err %v", s.requests(), resp.Tries, err)
			}
		})
	}
}

// A stream that falls silent after text arrived ends with the stall timeout, keeping
// the text; it is told apart from the first-token and total timeouts.
func TestOpenAIStallTimeout(t *testing.T) {
	s := newChatServer(t, nil)
	s.handle = func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w)
		event(w, deltaChunk("Hello "))
		s.waitGone(r, n)
	}
	m := newTestLM(t, s, func(o *OpenAIOptions) {
		o.Timeouts.Stall = 150 * time.Millisecond
		o.Timeouts.FirstToken = 10 * time.Second
	})
	resp, err := m.Call(context.Background(), lm.Request{Messages: lm.ListOf(twoMessages), OnDelta: func(string) {}})
	var pe *lm.PartialError
	if !errors.As(err, &pe) || pe.Partial != "Hello " {
		t.Fatalf("err = %T %v, want a PartialError keeping the text", err, err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "the stream stalled: nothing from the server for 150ms") || strings.Contains(msg, "total timeout") ||
		strings.Contains(msg, "first token") || lm.IsCancelled(err) {
		t.Errorf("error = %q", msg)
	}
	if s.requests() != 1 || len(resp.Tries) != 1 {
		t.Errorf("a stream with text was retried: %d requests", s.requests())
	}
	select {
	case <-s.gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the stalled connection close")
	}
}

// A server that streams steadily, each gap shorter than the stall bound, is not cut
// off however long the whole answer takes.
func TestOpenAISlowButSteadyStreamIsNotAStall(t *testing.T) {
	s := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w)
		for _, d := range []string{"one ", "two ", "three ", "four ", "five"} {
			time.Sleep(50 * time.Millisecond)
			event(w, deltaChunk(d))
		}
		event(w, finishChunk())
		event(w, "[DONE]")
	})
	m := newTestLM(t, s, func(o *OpenAIOptions) { o.Timeouts.Stall = 120 * time.Millisecond })
	resp, err := m.Call(context.Background(), lm.Request{Messages: lm.ListOf(twoMessages), OnDelta: func(string) {}})
	if err != nil || resp.Text != "one two three four five" {
		t.Fatalf("text %q err %v", resp.Text, err)
	}
}

// Usage the server reports is taken as is; none reported is counted here and marked.
func TestOpenAIUsageEstimate(t *testing.T) {
	cases := []struct {
		name      string
		stream    bool
		handler   func(w http.ResponseWriter)
		estimated bool
	}{
		{"stream with usage", true, func(w http.ResponseWriter) { streamAll(w, "Hello", " there") }, false},
		{"stream without usage", true, func(w http.ResponseWriter) {
			sse(w)
			event(w, deltaChunk("Hello there"))
			event(w, finishChunk())
			event(w, "[DONE]")
		}, true},
		{"completion with usage", false, func(w http.ResponseWriter) { writeCompletion(w, "Hello there", 0) }, false},
		{"completion without usage", false, func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there"},"finish_reason":"stop"}]}`))
		}, true},
	}
	_, prompt, err := CountTokens("test-model", twoMessages)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int) { tc.handler(w) })
			m := newTestLM(t, s, nil)
			req := lm.Request{Messages: lm.ListOf(twoMessages)}
			if tc.stream {
				req.OnDelta = func(string) {}
			}
			resp, err := m.Call(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			u := resp.Usage
			if u.Estimated != tc.estimated || u.TotalTokens == 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
				t.Fatalf("usage = %+v, want estimated=%v and a non-zero total", u, tc.estimated)
			}
			if tc.estimated && (u.PromptTokens != prompt || u.CompletionTokens != 2) {
				t.Errorf("estimate = %+v, want %d prompt tokens (CountTokens) and 2 for %q", u, prompt, "Hello there")
			}
		})
	}
}
