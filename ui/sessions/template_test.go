package sessions

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
)

// metaLM records the request metadata the engine sends.
type metaLM struct {
	inner lm.LM
	mu    sync.Mutex
	metas []lm.Meta
}

func (m *metaLM) Name() string { return m.inner.Name() }
func (m *metaLM) Call(ctx context.Context, req lm.Request) (lm.Response, error) {
	m.mu.Lock()
	m.metas = append(m.metas, req.Meta)
	m.mu.Unlock()
	return m.inner.Call(ctx, req)
}

// TestTemplateAgent runs an agent-file predictor with a message template in each parse
// mode: the model is told the parse mode (Meta.ParseMode), the call is recorded with its
// path and adapter, and streamed deltas name the field the template's format is writing.
func TestTemplateAgent(t *testing.T) {
	for _, mode := range []string{"json", "xml", "chat", "full_text"} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			a, _, _, _ := newWorkbench(t)
			meta := &metaLM{inner: demoModel(0)}
			a.model = meta
			dir := t.TempDir()
			file := `name = "templated"
inputs = ["question"]
outputs = ["reply"]

[[predictors]]
name = "respond"
signature = "question -> reply"
adapter = "template"

[predictors.template]
parse_mode = "` + mode + `"

[[predictors.template.messages]]
role = "system"
content = "Answer briefly."

[[predictors.template.messages]]
role = "user"
content = "{question}"

[[steps]]
name = "answer"
predictor = "respond"
`
			if err := os.WriteFile(filepath.Join(dir, "templated.toml"), []byte(file), 0o600); err != nil {
				t.Fatal(err)
			}
			a.SetAgentDirs(dir)
			if errs := a.AgentErrors(); len(errs) > 0 {
				t.Fatal(errs)
			}
			conv := mustConversation(t, a, "templated")
			ev := collect()
			tr, err := a.Send(ctx, SendRequest{Conv: conv, Branch: "main", Inputs: question("What is two plus two?")}, ev.ch)
			all := ev.stop()
			if err != nil {
				t.Fatal(err)
			}
			if len(meta.metas) != 1 || meta.metas[0].ParseMode != mode || meta.metas[0].Path != "respond" {
				t.Fatalf("request metadata %+v, want parse mode %s at path respond", meta.metas, mode)
			}
			calls := leafCalls(tr)
			if len(calls) != 1 || calls[0].Path != "respond" || calls[0].Adapter != "template" || calls[0].Error != "" {
				t.Fatalf("calls %+v", calls)
			}
			// the last delta labelled reply holds the reply (split by field in the chat
			// parse mode, the raw text otherwise)
			streamed := ""
			for _, e := range all {
				if e.Kind == EventDelta && e.Field == "reply" {
					streamed = ""
					for _, f := range e.Output {
						if f.Name == "reply" || f.Name == "" {
							streamed += f.Text
						}
					}
				}
			}
			if reply := tr.Outputs.String("reply"); reply == "" || !strings.Contains(streamed, reply) {
				t.Errorf("deltas labelled reply: %q; the reply is %q", streamed, reply)
			}
		})
	}
}
