package llm

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
)

// The key a server quotes back in a 401 (and a 500 retried) is in neither the error, the
// tries nor the recorded response body; the rest of the message stays.
func TestServerErrorsNeverCarryTheKey(t *testing.T) {
	const key = "a-local-key-0123456789"
	s := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		status := http.StatusInternalServerError
		if n > 0 {
			status = http.StatusUnauthorized
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error"}}`,
			strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	})
	m := newTestLM(t, s, func(o *OpenAIOptions) { o.APIKey = key })
	resp, err := m.Call(context.Background(), lm.Request{Messages: lm.ListOf(twoMessages)})
	if err == nil {
		t.Fatal("want an error")
	}
	texts := []string{err.Error(), string(resp.ResponseBody)}
	for _, tr := range resp.Tries {
		texts = append(texts, tr.Err)
	}
	if len(resp.Tries) != 2 {
		t.Errorf("%d tries, want 2 (a 500 retried, then the 401)", len(resp.Tries))
	}
	for _, s := range texts {
		if strings.Contains(s, key) {
			t.Errorf("the key is in %q", s)
		}
		if !strings.Contains(s, "Incorrect API key provided: [key redacted]") {
			t.Errorf("the message lost its text: %q", s)
		}
	}
}

// A server that never stops sending is cut off at maxResponse (lowered here from 64 MiB)
// with an error saying so; the partial answer is not echoed.
func TestEndlessResponseIsCutOff(t *testing.T) {
	defer func(n int64) { maxResponse = n }(maxResponse)
	maxResponse = 1 << 20
	s := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := []byte("data: " + deltaChunk(strings.Repeat("x", 4000)) + "\n\n")
		for i := 0; i < int(maxResponse)/len(chunk)+10; i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	m := newTestLM(t, s, nil)
	_, err := m.Call(context.Background(), lm.Request{Messages: lm.ListOf(twoMessages), OnDelta: func(string) {}})
	if err == nil || !strings.Contains(err.Error(), "the response is larger than 1 MiB") || len(err.Error()) > 1000 {
		t.Fatalf("got %.300v", err)
	}
}
