package ui_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/demo"
	"github.com/sessionbench/sessionbench/llm"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/ui/sessions"
)

// flakyLM is the demo model whose respond calls fail while failing is set (a parse
// failure's text, as a model that ignores the format would send), counting requests.
type flakyLM struct {
	inner   lm.LM
	failing atomic.Bool
	asked   atomic.Int64
}

func (f *flakyLM) Name() string { return f.inner.Name() }
func (f *flakyLM) Call(ctx context.Context, req lm.Request) (lm.Response, error) {
	f.asked.Add(1)
	if f.failing.Load() && req.Meta.Path == "respond" {
		return lm.Response{}, errors.New("HTTP 502 from the gateway: upstream timed out")
	}
	return f.inner.Call(ctx, req)
}

// TestFailedTurnInTheWorkbench: a turn whose second call fails is kept beside the branch
// and shown as a turn of its own (✗, the reason, the failing call in the call tree, its
// request in the wire pane under every strategy); ctrl+r retries it paying only the
// failed call; a failed turn can be edited and retried, or deleted.
func TestFailedTurnInTheWorkbench(t *testing.T) {
	r, model := flaky(t)
	hs := newHarness(t, r, 140, 60)
	hs.press("enter")

	model.failing.Store(true)
	hs.typeText("The reset email never arrives")
	hs.press("enter")
	s := hs.screen()
	assertContains(t, s, "turn 1 failed in respond · kept: ctrl+r retries", "✗ failed · 2 calls kept", "failed call: respond",
		"HTTP 502 from the gateway", "failed turn 1 selected", "✗ error")
	if n := r.turns(t, "main"); n != 1 {
		t.Fatalf("the failed turn entered the branch: %d turns", n)
	}
	// the call tree shows the failing call; the wire pane its exact request, and the
	// request under every strategy
	hs.press("esc", "enter", "down") // the tree: respond
	assertContains(t, hs.screen(), "wire · actual", "actual · respond", "The reset email never arrives")
	for _, st := range core.Strategies {
		hs.press("s")
		label := fmt.Sprintf("%d %s", st.Number, st.Name)
		if sc := hs.screen(); !strings.Contains(sc, "wire · "+label) || strings.Contains(sc, "not on branch") {
			t.Fatalf("strategy %s: the failing request is not rendered:\n%s", label, sc)
		}
	}

	// ctrl+r (here from the editor): only the failed call is sent again
	hs.press("s", "esc") // back to actual, then the editor
	model.failing.Store(false)
	before := model.asked.Load()
	hs.send(tea.KeyPressMsg{Code: 'r', Mod: tea.ModCtrl})
	hs.settle()
	assertContains(t, hs.screen(), "retried: the turn is recorded on main")
	if paid := model.asked.Load() - before; paid != 1 {
		t.Errorf("the retry asked the model %d times, want 1 (classify is replayed from storage)", paid)
	}
	if n := r.turns(t, "main"); n != 2 {
		t.Fatalf("after the retry: %d turns, want 2", n)
	}
	// the failed turn stays, marked, before the turn that took its place
	assertContains(t, hs.screen(), "✗ failed #1 The reset email never arrives · ")

	// edit and retry: a new failure, its inputs changed in the editor, sent again
	model.failing.Store(true)
	hs.typeText("It says my password expired") // the editor still has the focus
	hs.press("enter")
	assertContains(t, hs.screen(), "turn 2 failed in respond")
	model.failing.Store(false)
	hs.press("tab", "e")
	assertContains(t, hs.screen(), "editing turn 2: enter retries it with these inputs")
	hs.typeText(" yesterday")
	hs.press("enter")
	assertContains(t, hs.screen(), "retried: the turn is recorded on main", "It says my password expired yesterday")
	if n := r.turns(t, "main"); n != 3 {
		t.Fatalf("after edit and retry: %d turns, want 3", n)
	}

	// delete: a third failure, deleted after confirming
	model.failing.Store(true)
	hs.typeText("Still nothing")
	hs.press("enter")
	hs.press("tab", "d")
	assertContains(t, hs.screen(), "Delete the failed turn 3 with its calls?")
	hs.press("y")
	assertContains(t, hs.screen(), "deleted the failed turn 3")
	kept, err := r.KeptTurns(context.Background(), r.conv, "main")
	if err != nil || len(kept) != 2 {
		t.Fatalf("kept after delete: %v %d, want the two retried failures", err, len(kept))
	}
	for _, k := range kept {
		if k.Status != trace.StatusFailed {
			t.Errorf("kept turn %s is %s", k.Key, k.Status)
		}
	}
}

// A failed turn the branch went on past (retried: the retry took its place) is a line
// before that turn; up and down stop on it like on a turn, and selected it opens like
// one: its calls in the call tree, the failing one marked, its request in the wire pane.
func TestKeptLineBeforeATurnIsSelectable(t *testing.T) {
	r, _ := failedThenRetried(t)
	hs := newHarness(t, r, 140, 50)
	hs.press("enter")
	hs.press("esc") // the transcript: the last turn (the retry) is selected
	assertContains(t, hs.screen(), "✗ failed #1 The reset email never arrives")
	hs.press("up")
	s := hs.screen()
	assertContains(t, s, "failed turn 1 selected (kept)", "calls · turn 1")
	assertFailedRespond(t, s)
	if row := lineWith(s, "✗ failed #1"); !strings.Contains(row, "▌") {
		t.Errorf("the selected line has no gutter mark: %q", row)
	}
	if row := lineWith(s, "#1 you"); strings.Contains(row, "▌") {
		t.Errorf("the turn after the line is marked too: %q", row)
	}
	hs.press("enter", "down") // its failing call, in the wire pane
	assertContains(t, hs.screen(), "actual · respond", "The reset email never arrives")
	hs.press("shift+tab") // back to the transcript, the line still selected
	assertContains(t, hs.screen(), "failed turn 1 selected (kept")
	hs.press("up")
	assertContains(t, hs.screen(), "2 turns · turn 0 selected")
	hs.press("down")
	assertContains(t, hs.screen(), "failed turn 1 selected (kept")
	hs.press("down")
	assertContains(t, hs.screen(), "2 turns · turn 1 selected")
	assertLacks(t, hs.screen(), "✗ error")
	// a click on the line selects it too
	for y, l := range strings.Split(hs.screen(), "\n") {
		if strings.Contains(l, "✗ failed #1") {
			hs.send(tea.MouseClickMsg{Button: tea.MouseLeft, X: 5, Y: y})
			hs.settle()
		}
	}
	assertContains(t, hs.screen(), "failed turn 1 selected (kept", "✗ error")
}

// A kept turn the branch went on past is retried from its line on a new branch forked
// where it began: the branch opens with the retried turn, only the failed call is paid
// for again, and the original branch is left as it was.
func TestRetryKeptLineOnANewBranch(t *testing.T) {
	r, model := failedThenRetried(t)
	hs := newHarness(t, r, 140, 50)
	hs.press("enter")
	hs.press("esc", "up") // the line of the failed turn 1
	assertContains(t, hs.screen(), "failed turn 1 selected (kept) · ctrl+r retries on a new branch")
	before := model.asked.Load()
	hs.send(tea.KeyPressMsg{Code: 'r', Mod: tea.ModCtrl})
	hs.settle()
	s := hs.screen()
	assertContains(t, s, "retried: the turn is recorded on retry-1", "retry-1 · ")
	if paid := model.asked.Load() - before; paid != 1 {
		t.Errorf("the retry asked the model %d times, want 1 (classify is replayed from storage)", paid)
	}
	if n := r.turns(t, "retry-1"); n != 2 {
		t.Errorf("retry-1 has %d turns, want 2 (turn 0, then the retried turn 1)", n)
	}
	if n := r.turns(t, "main"); n != 2 {
		t.Errorf("main has %d turns after the retry elsewhere, want its 2", n)
	}
}

// failedThenRetried is a real backend whose SupportAgent conversation has turn 0, a turn
// 1 that failed in respond (kept) and its retry, which took its place.
func failedThenRetried(t *testing.T) (*real, *flakyLM) {
	t.Helper()
	r, model := flaky(t)
	model.failing.Store(true)
	if _, err := r.Send(context.Background(), sessions.SendRequest{Conv: r.conv, Branch: "main",
		Inputs: sig.NewMap("question", "The reset email never arrives")}, nil); err == nil {
		t.Fatal("the turn did not fail")
	}
	model.failing.Store(false)
	kept, _ := r.KeptTurns(context.Background(), r.conv, "main")
	if len(kept) != 1 {
		t.Fatalf("kept %d", len(kept))
	}
	if _, _, err := r.Retry(context.Background(), sessions.RetryRequest{Key: kept[0].Key}, nil); err != nil {
		t.Fatal(err)
	}
	return r, model
}

// flaky is a real backend on the flaky demo model with a SupportAgent conversation of
// one turn.
func flaky(t *testing.T) (*real, *flakyLM) {
	t.Helper()
	st, err := storage.Open(context.Background(), filepath.Join(t.TempDir(), "wb.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	model := &flakyLM{inner: llm.NewDemo(llm.DemoOptions{Scripts: demo.Scripts()})}
	svc := sessions.New(st, model)
	svc.SetAgentDirs()
	r := &real{Service: svc, store: st}
	r.converse(t, "SupportAgent", "failures", "I can't log in")
	return r, model
}

// The branch navigator shows the turns kept beside the branches with their mark, under
// the turn they followed; enter on one shows it in its branch's pane, selected (its
// calls in the call tree), whether the branch went on past it or it is the last.
func TestNavigatorShowsKeptTurns(t *testing.T) {
	r, model := failedThenRetried(t)
	model.failing.Store(true) // and a last turn that fails: kept after main's tip
	if _, err := r.Send(context.Background(), sessions.SendRequest{Conv: r.conv, Branch: "main",
		Inputs: sig.NewMap("question", "Still nothing")}, nil); err == nil {
		t.Fatal("the last turn did not fail")
	}
	model.failing.Store(false)
	hs := newHarness(t, r, 140, 40)
	hs.press("enter")
	hs.press("esc", "b")
	s := hs.screen()
	rows := treeRows(s, "• #0 ", 4)
	for i, want := range []string{"#0 ", "│ ✗ failed #1 The reset email never arrives · ", "#1 ", "│ ✗ failed #2 Still nothing · "} {
		if !strings.Contains(rows[i], want) {
			t.Fatalf("navigator row %d lacks %q:\n%s", i, want, s)
		}
	}
	if !strings.Contains(rows[2], "[main]") || !strings.Contains(rows[2], "active tip") {
		t.Errorf("the retried turn is not main's tip:\n%s", s)
	}
	// the failed turn the retry replaced: shown in main, as the line before turn 1
	hs.press("g", "down")
	hs.press("f")
	assertContains(t, hs.screen(), "a failed turn is on no branch, so it cannot be forked from")
	hs.press("enter")
	s = hs.screen()
	assertContains(t, s, "failed turn 1 selected (kept)", "calls · turn 1")
	assertFailedRespond(t, s)
	assertLacks(t, s, "branches · turn tree")
	// the failed last turn: shown after main's tip
	hs.press("b")
	hs.press("G", "enter")
	assertContains(t, hs.screen(), "failed turn 2 selected", "calls · turn 2")
}

// assertFailedRespond checks that the tree of the kept turn on screen s shows its failed
// respond call. Its latency is the real time the failing gateway took: 0 ms, more on a
// loaded machine.
func assertFailedRespond(t *testing.T, s string) {
	t.Helper()
	if !regexp.MustCompile(`respond  ChainOfThought  \d+ms  0 tok  ✗ error`).MatchString(s) {
		t.Errorf("the kept turn's failed call is not in its tree:\n%s", s)
	}
}
