package ui_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/demo"
	"github.com/sessionbench/sessionbench/llm"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/themes"
	"github.com/sessionbench/sessionbench/ui"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/uitest"
)

// updating reports -update, the flag the teatest golden package defines (sharing it keeps
// one switch for both kinds of golden file).
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// harness drives the root model the way the Bubble Tea runtime does: commands run in
// goroutines, their messages come back through Update, one at a time.
type harness struct {
	t    testing.TB
	m    *ui.Model
	msgs chan tea.Msg
	busy int // commands still running
}

func newHarness(t testing.TB, b ui.Backend, w, h int) *harness {
	t.Helper()
	th, _ := themes.Builtin("dark")
	m := ui.New(context.Background(), b, th, ui.DefaultKeys())
	hs := &harness{t: t, m: m, msgs: make(chan tea.Msg, 1024)}
	hs.send(tea.ColorProfileMsg{Profile: colorprofile.ASCII})
	hs.send(tea.WindowSizeMsg{Width: w, Height: h})
	hs.exec(m.Init())
	hs.settle()
	return hs
}

func (h *harness) exec(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	h.busy++
	go func() { h.msgs <- cmd() }()
}

// send delivers one message and starts the commands it returns.
func (h *harness) send(msg tea.Msg) {
	switch msg := msg.(type) {
	case nil:
		return
	case tea.BatchMsg:
		for _, c := range msg {
			h.exec(c)
		}
		return
	}
	if reflect.TypeOf(msg).String() == "tea.sequenceMsg" {
		// run a sequence's commands one after another
		v := reflect.ValueOf(msg)
		for i := 0; i < v.Len(); i++ {
			if c, ok := v.Index(i).Interface().(tea.Cmd); ok && c != nil {
				h.send(c())
			}
		}
		return
	}
	_, cmd := h.m.Update(msg)
	h.exec(cmd)
}

// settleLimit bounds a wait for the model to go quiet; it is no assertion about speed
// (a loaded machine can take long), only a way to fail instead of hanging.
const settleLimit = 30 * time.Second

// settle processes messages until no command is left running.
func (h *harness) settle() {
	h.t.Helper()
	deadline := time.After(settleLimit)
	for h.busy > 0 {
		select {
		case msg := <-h.msgs:
			h.busy--
			h.send(msg)
		case <-deadline:
			h.t.Fatalf("model did not settle; screen:\n%s", h.screen())
		}
	}
}

// pump processes messages for d without waiting for quiet (for runs in progress).
func (h *harness) pump(until func() bool) {
	h.t.Helper()
	deadline := time.After(settleLimit)
	for !until() {
		select {
		case msg := <-h.msgs:
			h.busy--
			h.send(msg)
		case <-deadline:
			h.t.Fatalf("condition not reached; screen:\n%s", h.screen())
		}
	}
}

func (h *harness) press(keys ...string) {
	for _, k := range keys {
		h.send(keyMsg(k))
	}
	h.settle()
}

func (h *harness) typeText(s string) {
	for _, r := range s {
		h.send(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	h.settle()
}

func keyMsg(k string) tea.KeyPressMsg {
	switch k {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "shift+tab":
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	case "ctrl+j":
		return tea.KeyPressMsg{Code: 'j', Mod: tea.ModCtrl}
	case "ctrl+p":
		return tea.KeyPressMsg{Code: 'p', Mod: tea.ModCtrl}
	}
	r := []rune(k)
	return tea.KeyPressMsg{Code: r[0], Text: k}
}

// screen is the frame without colours.
func (h *harness) screen() string { return ansi.Strip(h.m.View().Content) }

func (h *harness) raw() string { return h.m.View().Content }

// golden compares the screen with testdata/<name>.golden (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if updating() {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./ui -run %s -update to create it)", err, t.Name())
	}
	if string(want) != got {
		t.Errorf("screen %s differs from golden:\n--- want\n%s\n--- got\n%s", name, want, got)
	}
}

// open creates a conversation with n seeded turns and opens the workbench on it.
func open(t testing.TB, w, h, n int) (*harness, *uitest.Memory) {
	t.Helper()
	b := uitest.New()
	c, err := b.NewConversation(context.Background(), "support", "billing question")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Seed(c.ID, "main", n, 3); err != nil {
		t.Fatal(err)
	}
	hs := newHarness(t, b, w, h)
	// the list opens first when conversations exist
	hs.press("enter")
	return hs, b
}

func assertContains(t *testing.T, screen string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(screen, w) {
			t.Errorf("screen lacks %q:\n%s", w, screen)
		}
	}
}

func assertLacks(t *testing.T, screen string, nots ...string) {
	t.Helper()
	for _, w := range nots {
		if strings.Contains(screen, w) {
			t.Errorf("screen has %q:\n%s", w, screen)
		}
	}
}

func defaultKeysWith(t *testing.T, over map[string][]string) ui.KeyMap {
	t.Helper()
	k := ui.DefaultKeys()
	if err := k.Rebind(over); err != nil {
		t.Fatal(err)
	}
	return k
}

// real is the workbench's real backend over a SQLite file in a temporary folder, with the
// offline demo model (answering at once unless a test slows it) and the built-in agents.
type real struct {
	*sessions.Service
	store *storage.Store
	conv  string
}

// newReal opens the backend; rate is the demo model's tokens per second (0: at once).
func newReal(t testing.TB, rate float64) *real {
	t.Helper()
	st, err := storage.Open(context.Background(), filepath.Join(t.TempDir(), "wb.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc := sessions.New(st, llm.NewDemo(llm.DemoOptions{TokenRate: rate, Scripts: demo.Scripts()}))
	svc.SetAgentDirs() // no agent files: the built-in agents only
	return &real{Service: svc, store: st}
}

// converse starts a conversation with agent and runs the questions through the service.
func (r *real) converse(t testing.TB, agent, title string, questions ...string) string {
	t.Helper()
	ctx := context.Background()
	c, err := r.NewConversation(ctx, agent, title)
	if err != nil {
		t.Fatal(err)
	}
	r.conv = c.ID
	input := "question"
	for _, a := range r.Agents() {
		if a.Name == agent {
			input = a.Signature.Inputs[0].Name
		}
	}
	for _, q := range questions {
		if _, err := r.Send(ctx, sessions.SendRequest{Conv: c.ID, Branch: "main", Inputs: sig.NewMap(input, q)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	return c.ID
}

// turns is the number of turns on a branch of the conversation.
func (r *real) turns(t testing.TB, branch string) int {
	t.Helper()
	pg, err := r.LoadTurns(context.Background(), r.conv, branch, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return pg.Total
}

// openReal starts the workbench on a real backend holding one conversation with agent
// and the turns of questions, and opens it.
func openReal(t testing.TB, w, h int, agent string, questions ...string) (*harness, *real) {
	t.Helper()
	r := newReal(t, 0)
	r.converse(t, agent, "support chat", questions...)
	hs := newHarness(t, r, w, h)
	hs.press("enter") // the list opens first when conversations exist
	return hs, r
}
