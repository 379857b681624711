package llm

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
)

func TestTokenLimitField(t *testing.T) {
	tests := []struct {
		name    string
		baseURL string
		azure   bool
		model   string
		want    string // the member carrying the limit
	}{
		{"openai", DefaultBaseURL, false, "gpt-4o-mini", "max_completion_tokens"},
		{"azure flag", "https://corp.example/openai", true, "my-deployment", "max_completion_tokens"},
		{"azure host", "https://x.openai.azure.com/openai/deployments/d", false, "gpt-4o", "max_completion_tokens"},
		{"local server", "http://127.0.0.1:8080/v1", false, "llama3.1:8b", "max_tokens"},
		{"reasoning model on a gateway", "https://openrouter.ai/api/v1", false, "openai/o3-mini", "max_completion_tokens"},
		{"look-alike host", "https://api.openai.com.evil.example/v1", false, "gpt-4o", "max_tokens"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := "max_tokens"
			if usesMaxCompletionTokens(tc.baseURL, tc.azure, tc.model) {
				got = "max_completion_tokens"
			}
			if got != tc.want {
				t.Errorf("limit sent as %s, want %s", got, tc.want)
			}
		})
	}
}

// TestTokenLimitOnTheWire checks the body a server receives: exactly one of the two
// members, with the request's value.
func TestTokenLimitOnTheWire(t *testing.T) {
	for _, tc := range []struct{ model, want, absent string }{
		{"llama3.1:8b", "max_tokens", "max_completion_tokens"},
		{"o4-mini", "max_completion_tokens", "max_tokens"},
	} {
		t.Run(tc.model, func(t *testing.T) {
			s := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeCompletion(w, "ok", 0) })
			m := newTestLM(t, s, func(o *OpenAIOptions) { o.Model = tc.model })
			if _, err := m.Call(context.Background(), lm.Request{Messages: twoMessages, Params: lm.Params{MaxTokens: ptr(99)}}); err != nil {
				t.Fatal(err)
			}
			var body map[string]any
			if err := json.Unmarshal(s.body(0), &body); err != nil {
				t.Fatalf("body is not JSON: %v\n%s", err, s.body(0))
			}
			if body[tc.want] != 99.0 {
				t.Errorf("%s = %v, want 99 in %s", tc.want, body[tc.want], s.body(0))
			}
			if _, ok := body[tc.absent]; ok {
				t.Errorf("%s sent too: %s", tc.absent, s.body(0))
			}
		})
	}
}
