package llm

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
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
			if _, err := m.Call(context.Background(), lm.Request{Messages: lm.ListOf(twoMessages), Params: lm.Params{MaxTokens: ptr(99)}}); err != nil {
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

// TestPreEncodedBody checks that a body whose messages preEncode wrote is the body
// go-openai writes (its marshalling, then captureDoer's members), byte for byte: plain
// messages with every character encoding/json escapes, streamed or not, with the
// members go-openai cannot express; and that messages preEncode leaves to go-openai (a
// name, an empty content) are sent as before.
func TestPreEncodedBody(t *testing.T) {
	tricky := []lm.Message{
		{Role: "system", Content: "Your input fields are:\n1. `question` (str)\t<tab> & \"quotes\" \\ back"},
		{Role: "user", Content: "unicode é 日本 🎉 \u2028\u2029 \x00\x1f\x7f and invalid \xff\xfe"},
		{Role: "assistant", Content: "[[ ## reply ## ]]\n<b>bold</b>\n\n[[ ## completed ## ]]"},
	}
	cases := []struct {
		name    string
		msgs    []lm.Message
		params  lm.Params
		stream  bool
		encoded bool // preEncode writes the messages
	}{
		{"plain", twoMessages, lm.Params{}, false, true},
		{"every escape, streamed", tricky, lm.Params{}, true, true},
		{"members go-openai cannot express", tricky, lm.Params{Temperature: ptr(0.0), TopP: ptr(0.0), MaxTokens: ptr(50), Stop: []string{"\n\n"}, Seed: ptr(int64(7))}, true, true},
		{"float params", twoMessages, lm.Params{Temperature: ptr(0.7), TopP: ptr(0.9)}, false, true},
		{"a name", []lm.Message{{Role: "user", Content: "hi", Extra: `{"name":"ann"}`}}, lm.Params{}, false, false},
		{"an empty content", []lm.Message{{Role: "system", Content: "s"}, {Role: "user", Content: ""}}, lm.Params{}, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newChatServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
				if tc.stream {
					streamAll(w, "ok")
				} else {
					writeCompletion(w, "ok", 0)
				}
			})
			m := newTestLM(t, s, nil)
			req := lm.Request{Messages: lm.ListOf(tc.msgs), Params: tc.params}
			if tc.stream {
				req.OnDelta = func(string) {}
			}
			r, extra := m.buildRequest(m.Name(), req)
			r.Messages = chatMessages(req.Messages)
			if enc := preEncode(req.Messages) != nil; enc != tc.encoded {
				t.Fatalf("preEncode wrote the messages: %v, want %v", enc, tc.encoded)
			}
			if _, err := m.Call(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			// go-openai's way: encoding/json over the request, which CreateChatCompletionStream
			// marks as streamed, then captureDoer's edits
			plain, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			want := appendMembers(plain, extra)
			if slices.ContainsFunc(tc.msgs, func(m lm.Message) bool { return m.Content == "" }) {
				want = fillEmptyContent(want) // as client sets captureDoer.fillContent
			}
			if got := s.body(0); string(got) != string(want) {
				t.Errorf("body differs from go-openai's:\n got %s\nwant %s", got, want)
			}
		})
	}
}
