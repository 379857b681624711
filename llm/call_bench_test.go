package llm

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
)

// BenchmarkCallOverhead is what a call costs the client beside the server's answer: a
// streamed call to a local server that answers at once with 40 words, for a request of
// a few messages (a windowed agent's) and of 2,001 (1,000 turns of history). Most of it
// is go-openai reading the stream: a regular expression and encoding/json for each
// event, 6 µs or so, which a served model's stream spreads over its answer.
func BenchmarkCallOverhead(b *testing.B) {
	words := strings.Fields(strings.Repeat("clear the cookies and reset the password again ", 5))
	for i := range words {
		words[i] += " "
	}
	s := newChatServer(b, func(w http.ResponseWriter, r *http.Request, n int) { streamAll(w, words...) })
	for _, n := range []int{9, 2001} {
		msgs := make([]lm.Message, n)
		for i := range msgs {
			msgs[i] = lm.Message{Role: "user", Content: fmt.Sprintf("[[ ## question ## ]]\nWhy was I charged twice (%d)? <order #1234>", i)}
		}
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			m, err := NewOpenAI(OpenAIOptions{Provider: "test", BaseURL: s.url(), APIKey: "sk-test", Model: "test-model"})
			if err != nil {
				b.Fatal(err)
			}
			req := lm.Request{Messages: lm.ListOf(msgs), OnDelta: func(string) {}}
			for b.Loop() {
				if _, err := m.Call(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
