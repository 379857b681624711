package sessions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/savefile"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/llm"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/ui/cli"
	"github.com/sessionbench/sessionbench/ui/sessions"
)

// reviewAgent retries its review step up to four times until ok, keeping the best score.
const reviewAgent = `name = "review"
inputs = ["draft"]
outputs = ["verdict", "score", "tries", "best"]
[[predictors]]
name = "reviewer"
signature = "draft -> verdict, score: float, ok: bool"
[[steps]]
name = "review"
predictor = "reviewer"
max_retries = 4
retry_until = "ok"
best = "score"
counter = "tries"
best_attempt = "best"
`

// AttemptScenario runs seed 003's example through the real service on a temporary SQLite
// file: an agent file whose review step retries four times, scored 0.65, 0.78, 0.72 and
// 0.69 by the (offline, scripted) model, never accepted. It returns the service, the
// database path and the conversation.
func attemptScenario(t *testing.T) (*sessions.Service, *storage.Store, string, string) {
	t.Helper()
	dir := t.TempDir()
	agent := filepath.Join(dir, "review.toml")
	if err := os.WriteFile(agent, []byte(reviewAgent), 0o600); err != nil {
		t.Fatal(err)
	}
	scores := []float64{0.65, 0.78, 0.72, 0.69}
	var n atomic.Int64
	model := llm.NewDemo(llm.DemoOptions{Scripts: []llm.Script{llm.ScriptFunc(func(meta lm.Meta, _ []lm.Message) (*sig.Map, bool) {
		if meta.Path != "reviewer" {
			return nil, false
		}
		i := int(n.Add(1)-1) % len(scores)
		return sig.NewMap("verdict", []string{"thin", "solid", "wordy", "vague"}[i], "score", scores[i], "ok", false), true
	})}})
	db := filepath.Join(dir, "sb.db")
	st, err := storage.Open(context.Background(), db)
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
	return svc, st, db, c.ID
}

func runCLI(t *testing.T, args ...string) string {
	t.Helper()
	var out, errs bytes.Buffer
	if code := cli.Main(context.Background(), cli.Env{Args: args, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errs}); code != 0 {
		t.Fatalf("%q: exit %d\n%s%s", args, code, out.String(), errs.String())
	}
	return out.String()
}

// The attempts the workflow engine made are stored with the turn and come back from
// storage, `session show`, and every export that carries them, the best one marked.
func TestAttemptsAreStoredShownAndExported(t *testing.T) {
	svc, st, db, conv := attemptScenario(t)
	ctx := context.Background()

	page, err := svc.LoadTurns(ctx, conv, "main", 0, 10)
	if err != nil || len(page.Turns) != 1 {
		t.Fatalf("turns: %+v %v", page, err)
	}
	turn := page.Turns[0]
	if got := turn.Outputs.String("best"); got != "2" || turn.Outputs.String("score") != "0.78" || turn.Outputs.String("tries") != "4" {
		t.Fatalf("outputs = %v", turn.Outputs)
	}
	var got []string
	for _, a := range turn.Attempts {
		got = append(got, attemptLine(a))
	}
	want := []string{"review #1 0.65 [c1]", "review #2 0.78 best [c2]", "review #3 0.72 [c3]", "review #4 0.69 [c4]"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("stored attempts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if a := turn.Attempts[1]; a.Summary != "verdict=solid; score=0.78; ok=False" || a.Details.String("verdict") != "solid" || a.Time.IsZero() {
		t.Errorf("attempt 2 = %+v", a)
	}
	best, err := st.BestAttempt(ctx, conv, "")
	if err != nil || best == nil || best.N != 2 || best.Score != 0.78 || best.TurnKey != page.IDs[0] {
		t.Fatalf("conversation best: %+v %v", best, err)
	}

	show := runCLI(t, "session", "show", conv, "--db", db)
	for _, line := range []string{
		"best attempt: #2 of review in turn " + page.IDs[0] + ", score 0.78",
		"attempt #1 of review  score 0.65  verdict=thin; score=0.65; ok=False",
		"attempt #2 of review  score 0.78  best  verdict=solid; score=0.78; ok=False",
		"attempt #4 of review  score 0.69  verdict=vague",
	} {
		if !strings.Contains(show, line) {
			t.Errorf("session show lacks %q:\n%s", line, show)
		}
	}
	var shown struct {
		Attempts []*storage.Attempt `json:"attempts"`
	}
	if err := json.Unmarshal([]byte(runCLI(t, "session", "show", conv, "--json", "--db", db)), &shown); err != nil ||
		len(shown.Attempts) != 4 || !shown.Attempts[1].Best || shown.Attempts[1].Score != 0.78 {
		t.Errorf("session show --json attempts: %+v %v", shown.Attempts, err)
	}

	// The calls export says which attempt each call was made in.
	calls := strings.Split(strings.TrimSpace(runCLI(t, "export", conv, "--format", "calls", "--db", db)), "\n")
	if len(calls) != 4 {
		t.Fatalf("%d call lines", len(calls))
	}
	for i, line := range calls {
		var c struct {
			ID          string `json:"id"`
			StepAttempt *struct {
				Step  string  `json:"step"`
				N     int     `json:"attempt"`
				Score float64 `json:"quality_score"`
				Best  bool    `json:"best"`
			} `json:"step_attempt"`
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil || c.StepAttempt == nil || c.StepAttempt.N != i+1 ||
			c.StepAttempt.Step != "review" || c.StepAttempt.Best != (i == 1) || c.StepAttempt.Score != []float64{0.65, 0.78, 0.72, 0.69}[i] {
			t.Errorf("call line %d: %s (%v)", i, line, err)
		}
	}
	// The save file's extension carries them, and importing it stores them again.
	saved := filepath.Join(t.TempDir(), "s.json")
	runCLI(t, "export", conv, "--format", "session-json", "--out", saved, "--db", db)
	data, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	f, err := savefile.Decode(data)
	if err != nil || len(f.Turns) != 1 || len(f.Turns[0].Turn.Attempts) != 4 || !f.Turns[0].Turn.Attempts[1].Best {
		t.Fatalf("session-json attempts: %v", err)
	}
	runCLI(t, "import", saved, "--db", db)
	list, err := st.ListConversations(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("after import: %d conversations, %v", len(list), err)
	}
	for _, c := range list {
		if c.ID == conv {
			continue
		}
		turns, err := st.LoadBranch(ctx, c.ID, "main")
		if err != nil || len(turns) != 1 || jsonOf(t, turns[0].Attempts) != jsonOf(t, turn.Attempts) {
			t.Errorf("imported attempts differ: %v\n%s\n%s", err, jsonOf(t, turns[0].Attempts), jsonOf(t, turn.Attempts))
		}
	}
	md := runCLI(t, "export", conv, "--format", "markdown", "--db", db)
	if !strings.Contains(md, "- `review` #2, score 0.78 (best): verdict=solid; score=0.78; ok=False") {
		t.Errorf("markdown lacks the attempts:\n%s", md)
	}
}

func attemptLine(a *trace.Attempt) string {
	best := ""
	if a.Best {
		best = " best"
	}
	return fmt.Sprintf("%s #%d %v%s %v", a.Step, a.N, a.Score, best, a.Calls)
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
