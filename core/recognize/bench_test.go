package recognize

import (
	"fmt"
	"testing"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/sig"
)

// benchRequest is a session predictor's request with n history turns.
func benchRequest(n int) adapter.Request {
	s := signatures["session"]
	var h sig.History
	for i := 0; i < n; i++ {
		h.Messages = append(h.Messages, sig.NewMap("question", fmt.Sprintf("question %d, with a few words of text", i), "intent", "technical"))
	}
	return adapter.Request{Signature: s, Inputs: sig.NewMap("question", "The reset email never arrives", "history", h)}
}

// BenchmarkParse recognises (and re-formats, to check) a request with 50 history turns;
// BenchmarkFormat50 formats it, for the ratio.
func BenchmarkParse50(b *testing.B) {
	msgs, _ := adapter.Chat{}.Format(benchRequest(50))
	b.ReportAllocs()
	for b.Loop() {
		if r := Parse(msgs); !r.Exact {
			b.Fatal(r.Mismatch)
		}
	}
}

func BenchmarkFormat50(b *testing.B) {
	req := benchRequest(50)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (adapter.Chat{}).Format(req); err != nil {
			b.Fatal(err)
		}
	}
}
