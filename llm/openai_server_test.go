package llm

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// chatServer is a real HTTP server speaking the chat-completions protocol. Each request
// is handled by handle(w, r, n) with n the 0-based request number; the bodies received
// and the moments the server saw a client hang up are recorded.
type chatServer struct {
	*httptest.Server
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
	gone    chan int // request numbers whose client went away while the handler waited
	handle  func(w http.ResponseWriter, r *http.Request, n int)
}

func newChatServer(t testing.TB, handle func(w http.ResponseWriter, r *http.Request, n int)) *chatServer {
	t.Helper()
	s := &chatServer{handle: handle, gone: make(chan int, 16)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			http.Error(w, `{"error":{"message":"no route for `+r.Method+" "+r.URL.Path+`","type":"invalid_request_error"}}`, http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		n := len(s.bodies)
		s.bodies = append(s.bodies, body)
		s.headers = append(s.headers, r.Header.Clone())
		s.mu.Unlock()
		s.handle(w, r, n)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *chatServer) url() string { return s.URL + "/v1" }

func (s *chatServer) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

func (s *chatServer) body(n int) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies[n]
}

// waitGone blocks until the client of request n hangs up, and reports it.
func (s *chatServer) waitGone(r *http.Request, n int) {
	<-r.Context().Done()
	s.gone <- n
}

func writeCompletion(w http.ResponseWriter, text string, cached int) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"test-model-0613",`+
		`"choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],`+
		`"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18,"prompt_tokens_details":{"cached_tokens":%d}}}`,
		jsonString(text), cached)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"message":%s,"type":"invalid_request_error","param":null,"code":null}}`, jsonString(msg))
}

// sse writes the stream prologue: headers and the role chunk.
func sse(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	event(w, `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"test-model-0613","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`)
}

func event(w http.ResponseWriter, data string) {
	fmt.Fprintf(w, "data: %s\n\n", data)
	w.(http.Flusher).Flush()
}

func deltaChunk(text string) string {
	return `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"test-model-0613","choices":[{"index":0,"delta":{"content":` +
		jsonString(text) + `},"finish_reason":null}]}`
}

func finishChunk() string {
	return `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"test-model-0613","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
}

func usageChunk() string {
	return `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"test-model-0613","choices":[],` +
		`"usage":{"prompt_tokens":20,"completion_tokens":3,"total_tokens":23,"prompt_tokens_details":{"cached_tokens":16}}}`
}

// streamAll writes a complete stream of the given deltas.
func streamAll(w http.ResponseWriter, deltas ...string) {
	sse(w)
	for _, d := range deltas {
		event(w, deltaChunk(d))
	}
	event(w, finishChunk())
	event(w, usageChunk())
	event(w, "[DONE]")
}

// transcript is the SSE text streamAll writes, for comparing with the recorded response.
func transcript(deltas ...string) string {
	var b strings.Builder
	write := func(s string) { b.WriteString("data: " + s + "\n\n") }
	write(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"test-model-0613","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`)
	for _, d := range deltas {
		write(deltaChunk(d))
	}
	write(finishChunk())
	write(usageChunk())
	write("[DONE]")
	return b.String()
}
