package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
)

// renderedJSON is a rendering's messages, token counts and warnings as JSON.
func renderedJSON(t *testing.T, r Rendering) string {
	t.Helper()
	b, err := json.Marshal(struct {
		M      []RenderedMessage
		Tokens int
		W      []Lint
		Err    string
	}{r.Messages, r.Tokens, r.Warnings, r.Err})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// previewsAsFresh previews every leaf call of every turn of branch under all five
// strategies through a (whose caches have seen earlier states of the store) and through
// a Service that has seen nothing: they must be the same, and strategy 1 (keep: the
// agent's own policy) must be the recorded request unless the agent changed since. It
// returns the renderings of the branch's last turn.
func previewsAsFresh(t *testing.T, a *Service, conv, branch string, recorded bool) []Rendering {
	t.Helper()
	ctx := context.Background()
	fresh := New(a.store, demoModel(0))
	fresh.SetAgentDirs()
	pg := pageOf(t, a, conv, branch)
	var last []Rendering
	for i, tr := range pg.Turns {
		last = nil
		for _, c := range leafCalls(tr) {
			for s := 1; s <= 5; s++ {
				req := PreviewRequest{Conv: conv, Branch: branch, Turn: pg.IDs[i], Call: c.ID, Strategy: s}
				got, err := a.Preview(ctx, req)
				if err != nil || got.Err != "" {
					t.Fatalf("%s turn %d %s strategy %d: %v %s", branch, i, c.Path, s, err, got.Err)
				}
				want, err := fresh.Preview(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				if g, w := renderedJSON(t, got), renderedJSON(t, want); g != w {
					t.Fatalf("%s turn %d %s strategy %d differs from a fresh service's:\n got %s\nwant %s", branch, i, c.Path, s, g, w)
				}
				if s == 1 && recorded {
					msgs := make([]lm.Message, len(got.Messages))
					for k, m := range got.Messages {
						msgs[k] = m.Message
					}
					g, _ := json.Marshal(msgs)
					w, _ := json.Marshal(c.Messages)
					if string(g) != string(w) {
						t.Fatalf("%s turn %d %s: keep is not the recorded request:\n got %s\nwant %s", branch, i, c.Path, g, w)
					}
				}
				last = append(last, got)
			}
		}
	}
	return last
}

// The histories previews keep (by turn and call, and the stored lists they extend) never
// serve what the store no longer says: after an undo, a fork, another process's turns on
// the branch, a branch deleted and its turn ids reused, and an edited agent file, every
// preview equals a fresh service's.
func TestPreviewCachesFollowTheStore(t *testing.T) {
	ctx := context.Background()
	a, st, _, _ := newWorkbench(t)
	other := New(st, demoModel(0)) // another process on the same file
	other.SetAgentDirs()
	src, err := os.ReadFile("testdata/support_window.toml")
	if err != nil {
		t.Fatal(err)
	}
	// the agent without its window: every call's history extends the one before
	agentFile := filepath.Join(t.TempDir(), "support.toml")
	text := strings.Replace(string(src), "[session]\nmax_turns = 4\n", "", 1)
	if text == string(src) {
		t.Fatal("testdata/support_window.toml has no window to take out")
	}
	if err := os.WriteFile(agentFile, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := a.NewConversation(ctx, agentFile, "")
	if err != nil {
		t.Fatal(err)
	}
	conv := c.ID
	for i := range 4 {
		mustSend(t, a, conv, "main", question(fmt.Sprintf("question %d: %s", i, questions[i%len(questions)])))
	}
	var fork string
	steps := []struct {
		name string
		do   func()
	}{
		{"sent", func() {}},
		{"undo 2, then a new turn", func() {
			if _, err := a.Undo(ctx, conv, "main", 2); err != nil {
				t.Fatal(err)
			}
			previewsAsFresh(t, a, conv, "main", true)
			mustSend(t, a, conv, "main", question("instead of the two undone"))
		}},
		{"another process undoes and sends", func() {
			if _, err := other.Undo(ctx, conv, "main", 1); err != nil {
				t.Fatal(err)
			}
			mustSend(t, other, conv, "main", question("from another process"))
			mustSend(t, other, conv, "main", question("and one more"))
		}},
		{"fork and send on it", func() {
			pg := pageOf(t, a, conv, "main")
			if fork, err = a.Fork(ctx, conv, pg.IDs[1], ""); err != nil {
				t.Fatal(err)
			}
			mustSend(t, a, conv, fork, question("on the fork"))
			previewsAsFresh(t, a, conv, fork, true)
		}},
		{"fork deleted and made again", func() {
			before := pageOf(t, a, conv, fork).IDs
			if _, err := st.DeleteBranch(ctx, conv, fork, false); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Fork(ctx, conv, "main", fork, 0); err != nil { // same name, shorter history
				t.Fatal(err)
			}
			mustSend(t, other, conv, fork, question("new turn, new id"))
			// Turn ids are never reused (storage's id counter), so nothing cached under
			// a deleted turn's id can be taken for the new turn's.
			after := pageOf(t, a, conv, fork).IDs
			if slices.Contains(before, after[len(after)-1]) {
				t.Fatalf("a deleted turn's id was reused (%v, then %v)", before, after)
			}
			previewsAsFresh(t, a, conv, fork, true)
		}},
	}
	for _, s := range steps {
		s.do()
		previewsAsFresh(t, a, conv, "main", true)
	}
	// An edited agent file changes the renderings (not the recorded histories).
	edited := strings.Replace(text, "Generate a helpful support reply.", "Answer like a patient pirate.", 1)
	if err := os.WriteFile(agentFile, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	last := previewsAsFresh(t, a, conv, "main", false)
	pirate := 0
	for _, r := range last {
		if strings.Contains(renderedJSON(t, r), "patient pirate") {
			pirate++
		}
	}
	if pirate == 0 {
		t.Fatal("no rendering shows the edited instructions")
	}
}
