package ui_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/llm"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/ui/sessions"
)

// The call tree hangs each scored attempt's calls under a row of the attempt, the best
// marked; an attempt folds like a call and opens its own detail (RetryAgent: the first
// plan scores 0.3 and is rejected, the second scores 0.9).
func TestCallTreeShowsAttempts(t *testing.T) {
	hs, _ := openReal(t, 120, 40, "RetryAgent", "Plan a team offsite for 12 people")
	hs.press("esc", "enter") // focus the tree of the selected (last) turn
	screen := hs.screen()
	assertContains(t, screen, "▾ attempt 1 · attempt  score 0.3", "▾ attempt 2 · attempt  score 0.9  ★ best", "4 calls · 2 attempts")
	assertLacks(t, screen, "score 0.3  ★ best")
	// each attempt holds its planner and validator, one level down
	rows := treeRows(screen, "attempt 1 ·", 3)
	if !strings.Contains(rows[1], "│   ├──   planner") || !strings.Contains(rows[2], "│   └──   validator") {
		t.Fatalf("attempt 1's calls:\n%s", strings.Join(rows, "\n"))
	}
	hs.press("g", "left") // fold attempt 1
	if rows := treeRows(hs.screen(), "attempt 1 ·", 2); !strings.Contains(rows[0], "▸ attempt 1") || !strings.Contains(rows[1], "attempt 2") {
		t.Fatalf("folded:\n%s", strings.Join(rows, "\n"))
	}
	hs.press("down", "enter") // attempt 2's detail
	assertContains(t, hs.screen(), "attempt 2 of attempt", "★ best of its run", "score: 0.9", "calls: c3, c4", "is_valid: True")
	hs.press("esc")
	hs.press("down") // its planner: the wire pane shows a request again
	assertContains(t, hs.screen(), "planner")
}

// treeRows returns n screen lines starting at the one containing first.
func treeRows(screen, first string, n int) []string {
	lines := strings.Split(screen, "\n")
	for i, l := range lines {
		if strings.Contains(l, first) {
			return append(lines[i:min(i+n, len(lines))], make([]string, max(0, i+n-len(lines)))...)
		}
	}
	return make([]string, n)
}

// seed003Agent's review step retries four times until ok, keeping the best score.
const seed003Agent = `name = "review"
inputs = ["draft"]
outputs = ["verdict", "score", "best"]
[[predictors]]
name = "reviewer"
signature = "draft -> verdict, score: float, ok: bool"
[[steps]]
name = "review"
predictor = "reviewer"
max_retries = 4
retry_until = "ok"
best = "score"
best_attempt = "best"
`

// Seed 003's example through the real service on SQLite, reopened in the workbench: four
// attempts scored 0.65, 0.78, 0.72, 0.69, the second marked best.
func TestCallTreeSeed003Attempts(t *testing.T) {
	dir := t.TempDir()
	agent := filepath.Join(dir, "review.toml")
	if err := os.WriteFile(agent, []byte(seed003Agent), 0o600); err != nil {
		t.Fatal(err)
	}
	scores := []float64{0.65, 0.78, 0.72, 0.69}
	var n atomic.Int64
	model := llm.NewDemo(llm.DemoOptions{Scripts: []llm.Script{llm.ScriptFunc(func(meta lm.Meta, _ []lm.Message) (*sig.Map, bool) {
		i := int(n.Add(1)-1) % len(scores)
		return sig.NewMap("verdict", "ok so far", "score", scores[i], "ok", false), meta.Path == "reviewer"
	})}})
	st, err := storage.Open(context.Background(), filepath.Join(dir, "wb.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc := sessions.New(st, model)
	svc.SetAgentDirs()
	ctx := context.Background()
	c, err := svc.NewConversation(ctx, agent, "seed 003")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Send(ctx, sessions.SendRequest{Conv: c.ID, Branch: "main", Inputs: sig.NewMap("draft", "a plan")}, nil); err != nil {
		t.Fatal(err)
	}
	hs := newHarness(t, &real{Service: svc, store: st}, 120, 40)
	hs.press("enter", "esc", "enter") // open it, focus the tree
	screen := hs.screen()
	assertContains(t, screen, "attempt 1 · review  score 0.65", "attempt 2 · review  score 0.78  ★ best",
		"attempt 3 · review  score 0.72", "attempt 4 · review  score 0.69", "4 calls · 4 attempts")
	if strings.Count(screen, "★ best") != 1 {
		t.Fatalf("one best attempt expected:\n%s", screen)
	}
}

// toolAgent's compute step runs a tool (no model call) until its result is truthy: 1-1
// never is, so it makes three attempts, none with a call; then a predictor answers.
const toolAgent = `name = "tools"
inputs = ["question"]
outputs = ["answer", "result"]
[[predictors]]
name = "answerer"
signature = "question, result -> answer"
[[steps]]
name = "compute"
tool = "calculator"
inputs = { expression = "1-1" }
max_retries = 3
retry_until = "result"
[[steps]]
name = "answer"
predictor = "answerer"
`

// Attempts of a retrying step that made no model call (a tool step) are rows of the call
// tree too, before the call that followed them; selected, the wire pane says nothing was
// sent.
func TestCallTreeShowsToolOnlyAttempts(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tools.toml"), []byte(toolAgent), 0o600); err != nil {
		t.Fatal(err)
	}
	r := newReal(t, 0)
	r.SetAgentDirs(dir)
	r.converse(t, "tools", "tool attempts", "what is 1-1?")
	hs := newHarness(t, r, 120, 40)
	hs.press("enter")        // open it
	hs.press("esc", "enter") // focus the tree
	screen := hs.screen()
	assertContains(t, screen, "1 call · 3 attempts")
	rows := treeRows(screen, "attempt 1 · compute", 4)
	for i, want := range []string{"├──   attempt 1 · compute  score 0  ★ best", "├──   attempt 2 · compute  score 0",
		"├──   attempt 3 · compute  score 0", "└──   answerer"} {
		if !strings.Contains(rows[i], want) {
			t.Fatalf("row %d lacks %q:\n%s", i, want, strings.Join(rows, "\n"))
		}
	}
	hs.press("g") // attempt 1
	assertContains(t, hs.screen(), "attempt 1 of compute made no model calls", "nothing was sent")
	hs.press("enter")
	assertContains(t, hs.screen(), "attempt 1 of compute", "★ best of its run", "result: 0")
}
