package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
)

// hostile is model output that would act on a terminal if written raw: set the window
// title (OSC 2), clear the screen (CSI 2J), turn text red (SGR 31), set the clipboard
// (OSC 52).
const hostile = "\x1b]2;pwned\x07\x1b[2J\x1b[31mred text\x1b[0m \x1b]52;c;cHduZWQ=\x07end of reply"

// seedHostile stores, through the real storage package, a conversation whose one turn has
// hostile output and a nested call tree (a module call with two predictor calls inside),
// which none of the demo agents records.
func seedHostile(t *testing.T, ws *workspace) {
	t.Helper()
	ctx := context.Background()
	st, err := storage.Open(ctx, ws.db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := st.CreateConversation(ctx, storage.NewConversation{Title: "hostile \x1b]2;pwned\x07 output", Agent: "SupportAgent"})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 1, 15, 10, 0, 0, 0, time.UTC)
	q := "Why is my screen red?"
	predict := func(id, path string, out *sig.Map, completion string) *trace.Call {
		return &trace.Call{ID: id, Path: path, PredictorType: "Predict", Adapter: "chat", Model: "demo",
			Inputs: sig.NewMap("question", q), Outputs: out, Completion: completion, Started: at,
			Latency: 5 * time.Millisecond, Usage: lm.Usage{PromptTokens: 40, CompletionTokens: 10, TotalTokens: 50},
			Messages: lm.MessagesOf([]lm.Message{{Role: "system", Content: "Answer the customer."}, {Role: "user", Content: q}})}
	}
	turn := &trace.Turn{
		Inputs:  sig.NewMap("question", q),
		Outputs: sig.NewMap("reply", hostile, "intent", "technical"),
		Calls: []*trace.Call{{
			ID: "t1.c1", Path: "pipeline", PredictorType: "Module", Started: at, Latency: 10 * time.Millisecond,
			Inputs: sig.NewMap("question", q), Outputs: sig.NewMap("reply", hostile, "intent", "technical"),
			Children: []*trace.Call{
				predict("t1.c2", "pipeline.classify", sig.NewMap("intent", "technical"), "[[ ## intent ## ]]\ntechnical"),
				predict("t1.c3", "pipeline.respond", sig.NewMap("reply", hostile), "[[ ## reply ## ]]\n"+hostile),
			},
		}},
		Started: at, Ended: at.Add(10 * time.Millisecond),
	}
	if _, err := st.AppendTurn(ctx, c.ID, "main", turn); err != nil {
		t.Fatal(err)
	}
}

// TestHostileOutputAndNestedCalls: escape sequences in stored model output are shown as
// visible pictures and never reach the terminal (tmux would have taken the title, the
// clipboard and the colour), and a nested call tree folds and unfolds.
func TestHostileOutputAndNestedCalls(t *testing.T) {
	t.Parallel()
	needTmux(t)
	ws := newWorkspace(t)
	seedHostile(t, ws)
	tm := startTerm(t, ws, 140, 40)
	// the title is shown with its escape made visible
	tm.waitFor("conversations (1)", "hostile ␛]2;pwned␇ output")
	tm.press("Enter")
	s := tm.waitFor("agent SupportAgent", "╰─ 1 turn ", "end of reply", "calls · turn 0")
	for _, want := range []string{"␛]2;pwned␇", "␛[31mred text", "␛]52;c;cHduZWQ=␇"} {
		if !strings.Contains(s, want) {
			t.Errorf("the reply does not show %q as visible text:\n%s", want, s)
		}
	}
	if got := tm.paneTitle(); got != "sessionbench" {
		t.Errorf("the pane title is %q: model output set the terminal title", got)
	}
	if bufs := strings.TrimSpace(tm.must("list-buffers")); bufs != "" {
		t.Errorf("model output reached the clipboard (OSC 52): tmux buffers %q", bufs)
	}
	// NO_COLOR: the workbench draws no colour, so a red cell came from the output
	if styled := tm.must("capture-pane", "-p", "-e", "-t", tm.target); strings.Contains(styled, "\x1b[31m") {
		t.Errorf("model output turned the terminal red:\n%q", styled)
	}

	// The call tree: the module call with its two inner calls, unfolded.
	tm.waitFor("▾ pipeline", "pipeline.classify", "pipeline.respond", "1/3 · 3 calls")
	tm.press("Tab", "Enter") // transcript, then the tree
	tm.press("h")            // collapse the selected module call
	s = tm.waitFor("▸ pipeline", "1/1 · 3 calls")
	if strings.Contains(s, "pipeline.classify") {
		t.Errorf("inner calls still shown after collapsing:\n%s", s)
	}
	tm.press("l") // expand
	tm.waitFor("▾ pipeline", "pipeline.classify", "pipeline.respond", "1/3 · 3 calls")
	tm.press("-") // collapse all
	tm.waitFor("▸ pipeline", "1/1 · 3 calls")
	tm.press("+") // expand all, then open the inner respond call
	tm.waitFor("▾ pipeline", "1/3 · 3 calls")
	tm.press("j", "j")
	tm.waitFor("3/3 · 3 calls")
	tm.press("Enter")
	s = tm.waitFor("call pipeline.respond", "Raw completion")
	if !strings.Contains(s, "␛[31mred text") {
		t.Errorf("the call detail does not show the raw completion's escapes as text:\n%s", s)
	}
	if got := tm.paneTitle(); got != "sessionbench" {
		t.Errorf("the pane title is %q after the call detail", got)
	}
	tm.press("C-c")
	if code := tm.waitExit(); code != 0 {
		t.Fatalf("exit status %d", code)
	}
}

// TestHostileOutputOfHeadlessCommands: on a real terminal, what session show, export
// --format markdown and an error naming a hostile file print shows the escapes as
// visible pictures: the title, the clipboard and the colours stay untouched.
func TestHostileOutputOfHeadlessCommands(t *testing.T) {
	t.Parallel()
	needTmux(t)
	ws := newWorkspace(t)
	seedHostile(t, ws)
	out, err := runBinary(t, ws, "session", "ls", "--json", "--db", ws.db)
	if err != nil {
		t.Fatalf("session ls: %v\n%s", err, out)
	}
	id := regexp.MustCompile(`"id": "([^"]+)"`).FindStringSubmatch(string(out))
	if id == nil {
		t.Fatalf("no conversation in %s", out)
	}
	bin := binary(t)
	bad := filepath.Join(ws.dir, "evil \x1b]2;pwned\x07.json") // an error names it
	if err := os.WriteFile(bad, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"session", "show", id[1], "--tree"},
		{"export", id[1], "--format", "markdown"},
		{"import", bad, "--db", filepath.Join(ws.dir, "other.db")},
	} {
		// tmux drops a dead pane's first line: an empty one goes first
		cmd := append([]string{"sh", "-c", `echo; exec "$0" "$@"`, bin}, append(args, "--db", ws.db)...)
		tm := startCommand(t, ws, 160, 50, cmd)
		tm.waitExit()
		os.Remove(tm.status) // the next command's run writes the same file
		s := tm.screen()
		if !strings.Contains(s, "␛]2;pwned␇") {
			t.Errorf("%s: the escape is not shown as visible text:\n%s", args[0], s)
		}
		if got := tm.paneTitle(); strings.Contains(got, "pwned") {
			t.Errorf("%s: the output set the terminal title to %q", args[0], got)
		}
		if bufs := strings.TrimSpace(tm.must("list-buffers")); bufs != "" {
			t.Errorf("%s: the output reached the clipboard (OSC 52): tmux buffers %q", args[0], bufs)
		}
		if styled := tm.must("capture-pane", "-p", "-e", "-t", tm.target); strings.Contains(styled, "\x1b[31m") {
			t.Errorf("%s: the output turned the terminal red:\n%q", args[0], styled)
		}
	}
}
