package core

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
)

// TestJSONFallback checks DSPy's ChatAdapter -> JSONAdapter retry: when it happens, what
// the call record keeps of the failed request, and when it must not happen.
func TestJSONFallback(t *testing.T) {
	netErr := errors.New("connection reset")
	cases := []struct {
		name       string
		adapter    adapter.Adapter
		noFallback bool
		answers    []string // answers in call order; "ERR" fails the model call
		wantErr    string   // "" = success
		wantCalls  int      // requests the model saw
		wantAd     string   // adapter of the recorded (final) request
		wantAnswer string
	}{
		{name: "chat parses, no fallback", answers: []string{chatAnswer("answer", "4")},
			wantCalls: 1, wantAd: "chat", wantAnswer: "4"},
		{name: "chat fails to parse, json answers", answers: []string{"just 4", `{"answer": "4"}`},
			wantCalls: 2, wantAd: "json", wantAnswer: "4"},
		{name: "both fail", answers: []string{"just 4", "still just 4"},
			wantErr: "JSON adapter fallback, which also failed", wantCalls: 2, wantAd: "json"},
		{name: "fallback disabled", noFallback: true, answers: []string{"just 4"},
			wantErr: "ChatAdapter", wantCalls: 1, wantAd: "chat"},
		{name: "json adapter has no fallback", adapter: adapter.JSON{}, answers: []string{"just 4"},
			wantErr: "JSONAdapter", wantCalls: 1, wantAd: "json"},
		{name: "model error is not retried with json", answers: []string{"ERR"},
			wantErr: "connection reset", wantCalls: 1, wantAd: "chat"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			m := &lm.Scripted{Func: func(req lm.Request) (string, bool, error) {
				a := tc.answers[min(n, len(tc.answers)-1)]
				n++
				if a == "ERR" {
					return "", true, netErr
				}
				return a, true, nil
			}}
			p := MustPredict("question -> answer")
			p.Adapter, p.NoJSONFallback = tc.adapter, tc.noFallback
			c, err := p.invoke(WithLM(context.Background(), m), p.Signature, in("question", "2+2?"), "qa", nil)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error = %v, want it to mention %q", err, tc.wantErr)
			}
			if len(m.Calls) != tc.wantCalls {
				t.Fatalf("model saw %d requests, want %d", len(m.Calls), tc.wantCalls)
			}
			if c.Adapter != tc.wantAd {
				t.Errorf("recorded adapter %q, want %q", c.Adapter, tc.wantAd)
			}
			last := m.Calls[len(m.Calls)-1]
			if last.Meta.Adapter != c.Adapter || !equalMessages(last.Messages.Slice(), c.Messages.Slice()) {
				t.Errorf("recorded request is not the last one sent (%s vs %s)", last.Meta.Adapter, c.Adapter)
			}
			if tc.wantAnswer != "" {
				if got, _ := c.Outputs.Get("answer"); got != tc.wantAnswer {
					t.Errorf("answer = %v, want %q", got, tc.wantAnswer)
				}
			}
			if tc.wantCalls == 2 {
				if len(c.Tries) != 2 {
					t.Fatalf("attempts = %+v, want the failed chat one and the json one", c.Tries)
				}
				first := c.Tries[0]
				if first.Adapter != "chat" || first.Completion != "just 4" || !first.Retrying || first.Err == "" ||
					!equalMessages(first.Messages, m.Calls[0].Messages.Slice()) {
					t.Errorf("failed chat attempt not kept: %+v", first)
				}
				if c.Tries[1].N != 2 {
					t.Errorf("json attempt numbered %d, want 2", c.Tries[1].N)
				}
			}
		})
	}
}

func equalMessages(a, b []lm.Message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
