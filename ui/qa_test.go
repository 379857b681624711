package ui_test

import (
	"context"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/themes"
	"github.com/sessionbench/sessionbench/ui"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/uitest"
)

// streamingBackend streams fixed events, then waits until the turn is cancelled.
type streamingBackend struct {
	*uitest.Memory
	events []sessions.Event
}

func (s *streamingBackend) Send(ctx context.Context, req sessions.SendRequest, events chan<- sessions.Event) (*trace.Turn, error) {
	for _, e := range s.events {
		select {
		case events <- e:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

func openStreaming(t *testing.T, events []sessions.Event) *harness {
	t.Helper()
	b := &streamingBackend{Memory: uitest.New(), events: events}
	if _, err := b.NewConversation(context.Background(), "support", "stream"); err != nil {
		t.Fatal(err)
	}
	hs := newHarness(t, b, 100, 30)
	hs.press("enter")
	return hs
}

// The pane shows the fields the backend reports, as it reports them (it never parses
// adapter markup), and the text of parallel calls does not wipe each other out.
func TestStreamShowsReportedFields(t *testing.T) {
	d := func(path, field string, out ...string) sessions.Event {
		e := sessions.Event{Kind: sessions.EventDelta, Path: path, Field: field}
		for i := 0; i+1 < len(out); i += 2 {
			e.Output = append(e.Output, adapter.FieldText{Name: out[i], Text: out[i+1]})
		}
		return e
	}
	hs := openStreaming(t, []sessions.Event{
		d("plan", ""),
		d("plan", "plan", "plan", "Step one, "),
		d("other", "note", "note", "parallel text"),
		d("plan", "reply", "plan", "Step one, step two.\n", "reply", "Hello there"),
		d("plan", "reply", "plan", "Step one, step two.\n", "reply", "Hello there.\n"),
	})
	hs.typeText("go")
	hs.send(keyMsg("enter"))
	hs.pump(func() bool { return strings.Contains(hs.screen(), "Hello there.") })
	s := hs.screen()
	assertContains(t, s, "plan:", "Step one, step two.", "reply:", "Hello there.", "writing reply", "● running · esc cancels")
	assertLacks(t, s, "note:", "parallel text", "running · esc cancels · running")
	hs.send(keyMsg("esc"))
	hs.settle()
	assertLacks(t, hs.screen(), "Hello there.")
}

// A call that fell back from the ChatAdapter to the JSON adapter keeps the failed chat
// request in its attempts; the call detail shows it.
func TestCallDetailShowsFallbackAttempt(t *testing.T) {
	b := uitest.New()
	c, err := b.NewConversation(context.Background(), "support", "fallback")
	if err != nil {
		t.Fatal(err)
	}
	call := &trace.Call{ID: "c1", Path: "respond", PredictorType: "Predict", Adapter: "json",
		Inputs: sig.NewMap("question", "q"), Outputs: sig.NewMap("reply", "ok"),
		Messages:   lm.MessagesOf([]lm.Message{{Role: "system", Content: "json system prompt"}}),
		Completion: `{"reply": "ok"}`,
		Tries: []lm.Try{
			{N: 1, Err: "Adapter ChatAdapter failed to parse the LM response", Adapter: "chat",
				Messages:   []lm.Message{{Role: "system", Content: "chat system prompt"}, {Role: "user", Content: "[[ ## question ## ]]\nq"}},
				Completion: "no headers at all"},
			{N: 2},
		}}
	if _, err := b.AddTurn(c.ID, "main", &trace.Turn{Inputs: sig.NewMap("question", "q"),
		Outputs: sig.NewMap("reply", "ok"), Calls: []*trace.Call{call}}); err != nil {
		t.Fatal(err)
	}
	hs := newHarness(t, b, 120, 60)
	hs.press("enter")                 // open
	hs.press("esc", "enter", "enter") // chat pane, tree, detail
	s := hs.screen()
	assertContains(t, s, "Tries", "chat adapter, given up", "request sent (2 messages, chat adapter)",
		"chat system prompt", "completion received:", "no headers at all", "json system prompt")
}

// A loop calls the same predictor again: the new call's text replaces the finished one's.
func TestStreamLoopRestartsText(t *testing.T) {
	hs := openStreaming(t, []sessions.Event{
		{Kind: sessions.EventDelta, Path: "planner", Output: []adapter.FieldText{{Name: "plan", Text: "first try\n"}}},
		{Kind: sessions.EventCall, Path: "planner"},
		{Kind: sessions.EventDelta, Path: "planner", Field: "plan", Output: []adapter.FieldText{{Name: "plan", Text: "second try"}}},
	})
	hs.typeText("go")
	hs.send(keyMsg("enter"))
	hs.pump(func() bool { return strings.Contains(hs.screen(), "second try") })
	assertContains(t, hs.screen(), "1 call done")
	assertLacks(t, hs.screen(), "first try")
	hs.send(keyMsg("esc"))
	hs.settle()
}

// Several output fields: short plain values sit beside their names, longer or markdown
// ones below.
func TestMultiFieldOutputsShortInline(t *testing.T) {
	b := uitest.New()
	c, err := b.NewConversation(context.Background(), "support", "fields")
	if err != nil {
		t.Fatal(err)
	}
	out := sig.NewMap("score", 0.9, "is_valid", true, "status", "completed",
		"plan", "1. Agree on the goal.\n2. Draft a schedule.", "note", "**bold** claim")
	if _, err := b.AddTurn(c.ID, "main", &trace.Turn{Inputs: sig.NewMap("question", "q"), Outputs: out}); err != nil {
		t.Fatal(err)
	}
	hs := newHarness(t, b, 100, 30)
	hs.press("enter")
	s := hs.screen()
	assertContains(t, s, "│   score: 0.9 ", "│   is_valid: True ", "│   status: completed ", "│   plan: ", "│   note: ", "bold")
	assertLacks(t, s, "plan: 1.", "note: **", "has no call")
	assertContains(t, s, "turn 0 made no model calls")
}

// Rebound keys show in the footers and the bottom help line, which follow the pane in use.
func TestReboundKeysShownWhereUsed(t *testing.T) {
	keys := defaultKeysWith(t, map[string][]string{"send": {"ctrl+s"}, "fork": {"F"}, "new": {"N"}, "cancel": {"ctrl+g"}})
	r := newReal(t, 0)
	r.converse(t, "SupportAgent", "keys", "I can't log in", "The reset email never arrives")
	th, _ := themes.Builtin("dark")
	hs := &harness{t: t, m: ui.New(context.Background(), r, th, keys), msgs: make(chan tea.Msg, 1024)}
	hs.send(tea.WindowSizeMsg{Width: 140, Height: 40})
	hs.exec(hs.m.Init())
	hs.settle()
	assertContains(t, hs.screen(), "ctrl+s open · N new", "ctrl+s open • N new")
	hs.send(tea.KeyPressMsg{Code: 's', Mod: tea.ModCtrl})
	hs.settle()
	assertContains(t, hs.screen(), "╰─ ctrl+s send · ctrl+j new line · ctrl+p history · ctrl+g leave editor", "ctrl+s send • ctrl+j new line")
	hs.send(tea.KeyPressMsg{Code: 'g', Mod: tea.ModCtrl})
	hs.settle()
	assertContains(t, hs.screen(), "F fork", "up previous turn")
	assertLacks(t, hs.screen(), "f fork", "enter ")
	hs.press("L")
	assertContains(t, hs.screen(), "ctrl+g back")
}

// The replay form says "unchanged" for settings left alone ("keep" is strategy 1's name)
// and its model field fits the frame.
func TestReplayFormLabels(t *testing.T) {
	hs, _ := openReal(t, 100, 30, "SupportAgent", "I can't log in", "The reset email never arrives")
	hs.press("esc", "R")
	s := hs.screen()
	assertContains(t, s, "strategy (tab):      unchanged", "agent (shift+tab):   unchanged (SupportAgent)", "model: > model (empty keeps")
	assertLacks(t, s, "(tab):      keep", "…│")
	hs.press("tab")
	assertContains(t, hs.screen(), "strategy (tab):      1 per-predictor")
}

// Before sending, the wire pane's dry run under strategy 0 is titled by what it shows
// (the request enter will send), not "actual", which means what was sent.
func TestDryRunTitle(t *testing.T) {
	hs, _ := openReal(t, 140, 40, "SupportAgent", "I can't log in")
	hs.typeText("draft")
	hs.pump(func() bool {
		return strings.Contains(hs.screen(), "[[ ## question ## ]]") && strings.Contains(hs.screen(), "draft")
	})
	assertContains(t, hs.screen(), "wire · dry run · as enter will send it")
	assertLacks(t, hs.screen(), "dry run · actual")
	hs.press("esc", "s", "esc") // leave the editor, next strategy, back
	hs.typeText("x")
	hs.pump(func() bool {
		return strings.Contains(hs.screen(), "draftx") && strings.Contains(hs.screen(), "dry run · 1 per-predictor")
	})
	assertContains(t, hs.screen(), "wire · dry run · 1 per-predictor")
}

// A module record (a nested session around several predictors) sends nothing itself: the
// tree shows what its inner calls cost and the wire pane says to pick one of them.
func TestModuleRecordInTreeAndWire(t *testing.T) {
	b := uitest.New()
	c, err := b.NewConversation(context.Background(), "support", "nested")
	if err != nil {
		t.Fatal(err)
	}
	inner := func(id, path string, tok int) *trace.Call {
		return &trace.Call{ID: id, Path: path, PredictorType: "Predict", Adapter: "chat",
			Inputs: sig.NewMap("q", "x"), Outputs: sig.NewMap("a", "y"), Usage: lm.Usage{TotalTokens: tok},
			Messages: lm.MessagesOf([]lm.Message{{Role: "user", Content: "hi"}})}
	}
	mod := &trace.Call{ID: "c1", Path: "research", PredictorType: "Research", Inputs: sig.NewMap("q", "x"),
		Children: []*trace.Call{inner("c1.c2", "research.query", 1200), inner("c1.c3", "research.summarize", 300)}}
	if _, err := b.AddTurn(c.ID, "main", &trace.Turn{Inputs: sig.NewMap("question", "q"), Outputs: sig.NewMap("reply", "r"),
		Calls: []*trace.Call{mod}}); err != nil {
		t.Fatal(err)
	}
	hs := newHarness(t, b, 140, 36)
	hs.press("enter")
	s := hs.screen()
	assertContains(t, s, "research  Research", "1.5k tok", "research is a module: it sends no request itself")
	assertLacks(t, s, "has no call")
}

// Typing on a branch readies its next turn once per turn (the backend restores the
// session and opens the model's connection while the user types, so enter waits for
// neither); an empty editor asks nothing.
func TestTypingPrefetchesTheBranchOnce(t *testing.T) {
	hs, b := open(t, 120, 36, 3)
	hs.settle()
	if p := b.Prefetched(); len(p) != 0 {
		t.Fatalf("prefetched before any typing: %v", p)
	}
	hs.typeText("why")
	hs.typeText(" was I charged")
	if p := b.Prefetched(); len(p) != 1 || !strings.HasSuffix(p[0], "/main") {
		t.Fatalf("prefetched %v, want main once", p)
	}
	hs.press("enter")
	hs.settle()
	if p := b.Prefetched(); len(p) != 1 {
		t.Fatalf("prefetched %v after the send, before any typing; want main once", p)
	}
	hs.typeText("and again")
	hs.typeText("?")
	if p := b.Prefetched(); len(p) != 2 || !strings.HasSuffix(p[1], "/main") {
		t.Fatalf("prefetched %v, want main again once for the next turn", p)
	}
}
