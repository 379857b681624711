package demo

import (
	"testing"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// For every built-in agent, a session rebuilt from the recorded turns of a conversation
// (as the workbench rebuilds one from storage after a restart) runs the last turn exactly
// as the live session did: same calls, same histories, same requests byte for byte.
func TestEveryAgentRestoredRunsLikeLive(t *testing.T) {
	for _, c := range conversations {
		t.Run(c.goName, func(t *testing.T) {
			a, _ := Lookup(c.goName)
			a = a.WithClock(fixedNow)
			_, live := runConversation(t, a, c.turns)
			n := len(live) - 1
			m, o, err := a.Build()
			if err != nil {
				t.Fatal(err)
			}
			s, err := core.Restore(m, o, live[:n])
			if err != nil {
				t.Fatal(err)
			}
			_, next, err := s.Run(demoCtx(a), sig.NewMap(a.Inputs[0], c.turns[n]))
			if err != nil {
				t.Fatal(err)
			}
			if g, w := stable(t, []*trace.Turn{next}), stable(t, live[n:]); g != w {
				t.Fatalf("restored run differs:\n--- restored\n%s\n--- live\n%s", g, w)
			}
		})
	}
}
