package wirediff

import (
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
)

// FuzzDiff: the diff of any two message lists covers every line of both sides in order.
func FuzzDiff(f *testing.F) {
	f.Add("a\nb|user", "a\nc|assistant")
	f.Fuzz(func(t *testing.T, x, y string) {
		split := func(s string) []lm.Message {
			var out []lm.Message
			for _, part := range strings.Split(s, "|") {
				role := "user"
				if strings.HasPrefix(part, "a") {
					role = "assistant"
				}
				out = append(out, lm.Message{Role: role, Content: part})
			}
			return out
		}
		a, b := split(x), split(y)
		var gotA, gotB []string
		for _, d := range Diff(a, b) {
			var la, lb []string
			for _, l := range d.Lines {
				if l.Op != Added {
					la = append(la, l.Text)
				}
				if l.Op != Removed {
					lb = append(lb, l.Text)
				}
			}
			if d.A >= 0 {
				gotA = append(gotA, strings.Join(la, "\n"))
			}
			if d.B >= 0 {
				gotB = append(gotB, strings.Join(lb, "\n"))
			}
		}
		for i, m := range a {
			if gotA[i] != m.Content {
				t.Fatalf("side A message %d: %q != %q", i, gotA[i], m.Content)
			}
		}
		for i, m := range b {
			if gotB[i] != m.Content {
				t.Fatalf("side B message %d: %q != %q", i, gotB[i], m.Content)
			}
		}
		_ = Lint(Facts{Signature: classify, Adapter: adapter.Chat{}, History: &sig.History{Messages: []*sig.Map{sig.NewMap("x", x)}}, Messages: a})
	})
}

func TestLintEmpty(t *testing.T) {
	if ws := Lint(Facts{}); len(ws) != 0 {
		t.Errorf("empty facts: %v", ws)
	}
}
