package adapter

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/sig"
)

func fuzzSig() *sig.Signature {
	return sig.New("S", "x", []sig.Field{field("q", "str", "")}, []sig.Field{
		field("a", "str", ""), field("n", "int", ""), field("tags", "list[str]", ""),
		field("ok", "Optional[bool]", ""), field("lvl", "Literal['lo', 'hi']", ""), field("m", "dict[str, Any]", ""),
	})
}

// FuzzParse: ChatAdapter.Parse (and the JSON adapter's parse, which shares the value
// conversion and json_repair) must never panic, and a success must hold every output.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"[[ ## a ## ]]\nx\n[[ ## n ## ]]\n1\n[[ ## tags ## ]]\n['a']\n[[ ## lvl ## ]]\nhi\n[[ ## m ## ]]\n{'k': [1, {'z': None}]}\n[[ ## completed ## ]]",
		"   [[ ## a ## ]] x\r\n[[ ## n ## ]]\n1e400", "[[ ## tags ## ]]\n[[[[[[", "{\"a\": \"x\", \"n\": 1,", "[[ ## m ## ]]\n{'a': '''x",
		"[[ ## n ## ]]\n-0x10", "\u2028[[ ## a ## ]]\u3000x",
	} {
		f.Add(seed)
	}
	s := fuzzSig()
	f.Fuzz(func(t *testing.T, completion string) {
		for _, a := range []Adapter{Chat{}, JSON{}} {
			out, err := a.Parse(s, completion)
			if err == nil && out.Len() != len(s.Outputs) {
				t.Fatalf("%s: success with %d of %d outputs", a.Name(), out.Len(), len(s.Outputs))
			}
		}
		_ = (Chat{}).StreamField(s, completion)
		_ = (JSON{}).StreamField(s, completion)
	})
}

func benchSig() *sig.Signature {
	return sig.New("ClassifyIntent", "Classify the customer's intent.",
		[]sig.Field{field("question", "str", "")},
		[]sig.Field{field("intent", "str", "One of: billing, technical, general"), field("confidence", "float", "")}).
		AppendInput(sig.Field{Name: "history", Type: sig.THistory, Desc: "Conversation history"})
}

func benchHistory(n int) sig.History {
	h := sig.History{Messages: make([]*sig.Map, n)}
	for i := range h.Messages {
		h.Messages[i] = sig.NewMap("question", fmt.Sprintf("Question number %d: my login does not work after the reset.", i),
			"intent", "technical", "confidence", 0.9)
	}
	return h
}

func BenchmarkChatFormat(b *testing.B) {
	s := benchSig()
	for _, n := range []int{0, 10, 1000} {
		in := sig.NewMap("question", "The reset email never arrives", "history", benchHistory(n))
		b.Run(fmt.Sprintf("turns=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := (Chat{}).Format(Request{Signature: s, Inputs: in}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkChatParse parses a completion whose reply quotes n history turns' worth of text
// (parsing does not see the history itself; this scales the completion the same way), the
// way ParseChat does and line by line as DSPy does (what every completion took before
// the scan, and what unusual ones still take). Issue 19's bar is turns=0 under 0.15 µs.
func BenchmarkChatParse(b *testing.B) {
	s := benchSig()
	for _, n := range []int{0, 10, 1000} {
		var sb strings.Builder
		sb.WriteString("[[ ## intent ## ]]\ntechnical")
		for i := range n {
			fmt.Fprintf(&sb, "\nQuestion number %d: my login does not work after the reset.", i)
		}
		sb.WriteString("\n\n[[ ## confidence ## ]]\n0.9\n\n[[ ## completed ## ]]\n")
		completion := sb.String()
		for _, p := range []struct {
			name  string
			parse func(*sig.Signature, string) (*sig.Map, error)
		}{{"", ParseChat}, {"/by-lines", parseChatLines}} {
			b.Run(fmt.Sprintf("turns=%d%s", n, p.name), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(completion)))
				c0, k := cpuTime(), 0
				for b.Loop() {
					if _, err := p.parse(s, completion); err != nil {
						b.Fatal(err)
					}
					k++
				}
				if c := cpuTime() - c0; c > 0 {
					b.ReportMetric(float64(c.Nanoseconds())/float64(k), "cpu-ns/op")
				}
			})
		}
	}
}
