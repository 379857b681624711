package core

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

// chatAnswer renders outputs as a ChatAdapter completion.
func chatAnswer(kv ...any) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, "[[ ## %s ## ]]\n%s\n\n", kv[i], py.Text(sig.Normalize(kv[i+1])))
	}
	b.WriteString("[[ ## completed ## ]]")
	return b.String()
}

// echoLM answers every output field of the request's signature with "<field>:<first input>",
// so tests can tell calls apart without scripting each one.
func echoLM() *lm.Scripted {
	return &lm.Scripted{Func: func(req lm.Request) (string, bool, error) {
		var first string
		if req.Meta.Inputs.Len() > 0 {
			first = req.Meta.Inputs.String(req.Meta.Inputs.Keys()[0])
		}
		var kv []any
		for _, f := range req.Meta.Signature.Outputs {
			switch f.Type.Kind {
			case sig.KindBool:
				kv = append(kv, f.Name, true)
			default:
				kv = append(kv, f.Name, f.Name+":"+first)
			}
		}
		return chatAnswer(kv...), true, nil
	}}
}

func ctxWith(m lm.LM) context.Context { return WithLM(context.Background(), m) }

func in(kv ...any) *sig.Map { return sig.NewMap(kv...) }

func mustRun(t *testing.T, ctx context.Context, s *Session, kv ...any) *Prediction {
	t.Helper()
	p, err := s.Forward(ctx, in(kv...))
	if err != nil {
		t.Fatalf("forward %v: %v", kv, err)
	}
	return p
}

func histLens(s *Session) []int {
	var out []int
	for _, t := range s.Turns() {
		out = append(out, len(t.History.Messages))
	}
	return out
}

// saved is the session's save file.
func saved(t *testing.T, s *Session) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := s.Save(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
