package core

import (
	"fmt"
	"testing"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
)

// TestNextCallRequest: the request a session just built makes for the next turn's
// first call, from the history's messages as the session that ran the turns rendered
// them (NextCallHistory), is the request that session's next turn sends, message for
// message, after every turn, under the policies a first call can have: its own history
// (keep), the outer one (inherit), a window, and a flat session's. An adapter other
// than Chat and JSON, or a path with no predictor, gives nothing.
func TestNextCallRequest(t *testing.T) {
	single := func() Module { return MustPredict("question -> answer") }
	cases := []struct {
		name  string
		agent func() Module
		opts  Options
		path  string
		json  bool // the model answers in JSON
	}{
		{"keep", func() Module { return supportAgent(true) }, Options{Recursive: Predictors, NestedSessions: NestedKeep, InnerScope: CrossTurn}, "classify", false},
		{"inherit", func() Module { return supportAgent(true) }, Options{Recursive: Predictors, NestedSessions: NestedInherit}, "classify", false},
		{"keep, window 2", func() Module { return supportAgent(true) }, Options{Recursive: Predictors, NestedSessions: NestedKeep, InnerScope: CrossTurn, MaxTurns: Int(2)}, "classify", false},
		{"flat", single, Options{}, "", false},
		{"json adapter", func() Module {
			p := MustPredict("question -> answer")
			p.Adapter = adapter.JSON{}
			return p
		}, Options{}, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			model := &sentLM{LM: echoLM()}
			if c.json {
				model.LM = &lm.Scripted{Func: func(lm.Request) (string, bool, error) { return `{"answer": "a"}`, true, nil }}
			}
			ctx := ctxWith(model)
			s := MustSessionify(c.agent(), c.opts)
			for i := range 5 {
				fresh := MustSessionify(c.agent(), c.opts)
				hist, ok, err := s.NextCallHistory(c.path)
				if !ok || err != nil {
					t.Fatalf("turn %d: NextCallHistory: %v, %v", i, ok, err)
				}
				q := fmt.Sprintf("question %d", i)
				req, ok, err := fresh.NextCallRequest(c.path, hist, in("question", q))
				if !ok || err != nil {
					t.Fatalf("turn %d: NextCallRequest: %v, %v", i, ok, err)
				}
				sent := len(model.sent)
				mustRun(t, ctx, s, "question", q)
				if got := req.Messages.Slice(); !equalMessages(got, model.sent[sent]) {
					t.Errorf("turn %d: made ahead %d messages, sent %d:\n%v\n%v", i, len(got), len(model.sent[sent]), got, model.sent[sent])
				}
				if req.Meta.Path != c.path {
					t.Errorf("turn %d: path %q", i, req.Meta.Path)
				}
			}
		})
	}
	t.Run("nothing to make", func(t *testing.T) {
		tmpl := MustPredict("question -> answer")
		tmpl.Adapter = templateStub{}
		for _, c := range []struct {
			name string
			s    *Session
			path string
		}{
			{"template adapter", MustSessionify(tmpl, Options{}), ""},
			{"no such predictor", MustSessionify(supportAgent(true), Options{Recursive: Predictors}), "nope"},
		} {
			if _, ok, err := c.s.NextCallHistory(c.path); ok || err != nil {
				t.Errorf("%s: NextCallHistory ok %v, %v", c.name, ok, err)
			}
			if _, ok, err := c.s.NextCallRequest(c.path, lm.MessageList{}, in("question", "q")); ok || err != nil {
				t.Errorf("%s: NextCallRequest ok %v, %v", c.name, ok, err)
			}
		}
	})
}

// templateStub is an adapter that is neither Chat nor JSON.
type templateStub struct{ adapter.Chat }

func (templateStub) Name() string { return "template" }
