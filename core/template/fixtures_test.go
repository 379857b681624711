package template

import (
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
)

// withHistory appends the history field a session appends (last, "Conversation history").
func withHistory(s *sig.Signature) *sig.Signature {
	return s.AppendInput(sig.Field{Name: "history", Type: sig.THistory, Desc: "Conversation history"})
}

func hist(msgs ...*sig.Map) sig.History { return sig.History{Messages: msgs} }

func u(c string) lm.Message { return lm.Message{Role: "user", Content: c} }
func a(c string) lm.Message { return lm.Message{Role: "assistant", Content: c} }
func sy(c string) lm.Message {
	return lm.Message{Role: "system", Content: c}
}

func checkMessages(t *testing.T, got, want []lm.Message) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d messages, want %d:\n%s", len(got), len(want), dump(got))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("message %d:\n got %s %q\nwant %s %q\nall:\n%s", i, got[i].Role, got[i].Content, want[i].Role, want[i].Content, dump(got))
		}
	}
}

func dump(ms []lm.Message) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString("[" + m.Role + "] " + m.Content + "\n")
	}
	return b.String()
}
