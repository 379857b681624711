package ui_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/lm"
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
