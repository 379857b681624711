package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/storage"
)

// requestLog records the messages of every request a model answers.
type requestLog struct {
	lm.LM
	mu   sync.Mutex
	reqs [][]lm.Message
}

func (r *requestLog) Call(ctx context.Context, req lm.Request) (lm.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req.Messages.Slice())
	r.mu.Unlock()
	return r.LM.Call(ctx, req)
}

// take returns the requests recorded since the last take, as JSON.
func (r *requestLog) take() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, _ := json.Marshal(r.reqs)
	r.reqs = nil
	return string(b)
}

// A windowed agent's session is restored from the branch's last turns only; every turn
// it runs sends exactly what a session restored from the whole branch sends, however the
// branch moved meanwhile: turns of this service or another writer, undos within the
// turns held and past them, a fork at an older turn, an agent file edited. Previews and
// dry runs of turns before those held match too.
func TestTailSessionSendsAsTheWholeBranch(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/support_window.toml")
	if err != nil {
		t.Fatal(err)
	}
	agentFile := filepath.Join(dir, "window.toml")
	if err := os.WriteFile(agentFile, src, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := storage.Open(ctx, filepath.Join(dir, "wb.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rec := &requestLog{LM: demoModel(0)}
	a := New(st, rec)
	a.SetAgentDirs()
	other := New(st, demoModel(0)) // another process on the same file
	other.SetAgentDirs()
	conv := mustConversation(t, a, agentFile)
	for i := range 40 {
		mustSend(t, other, conv, "main", question(fmt.Sprintf("question %d: why was I charged twice?", i)))
	}
	sends := 0
	// next sends one turn on a (whose cache holds what the steps before left) and the
	// same turn on a service restoring the whole branch, from the same tip, and compares
	// their requests; the branch is left with the second service's turn (another
	// writer's, for a's cache).
	next := func(step, branch string) {
		t.Helper()
		sends++
		q := question(fmt.Sprintf("%s: question %d", step, sends))
		mustSend(t, a, conv, branch, q)
		got := rec.take()
		if _, err := st.Undo(ctx, conv, branch, 1); err != nil {
			t.Fatal(err)
		}
		whole := &requestLog{LM: demoModel(0)}
		ref := New(st, whole)
		ref.SetAgentDirs()
		ag, err := ref.conversationAgent(ctx, conv, "")
		if err != nil {
			t.Fatal(err)
		}
		ref.tails[agentKey(ag)] = 0 // restore from every turn
		mustSend(t, ref, conv, branch, q)
		if want := whole.take(); got != want {
			t.Fatalf("%s: the session restored from the last turns sent\n%s\nthe whole branch's sends\n%s", step, got, want)
		}
		if _, err := st.Undo(ctx, conv, branch, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Redo(ctx, conv, branch, 1); err != nil {
			t.Fatal(err)
		}
	}
	held := func(branch string) int {
		t.Helper()
		_, p, l, err := a.liveState(ctx, conv, branch, false, false)
		if err != nil {
			t.Fatal(err)
		}
		if l.first == 0 || p.base == 0 {
			t.Fatalf("%s: restored from the whole branch (first %d, base %d)", branch, l.first, p.base)
		}
		return len(p.keys)
	}
	next("first send", "main")
	if n := held("main"); n != 4+undoRoom {
		t.Fatalf("holds %d turns, want %d", n, 4+undoRoom)
	}
	next("second send", "main")
	if _, err := a.Undo(ctx, conv, "main", 3); err != nil {
		t.Fatal(err)
	}
	next("undo within the turns held", "main")
	if _, err := other.Undo(ctx, conv, "main", 25); err != nil {
		t.Fatal(err)
	}
	next("undo past them, by another writer", "main")
	for i := range 3 {
		mustSend(t, other, conv, "main", question(fmt.Sprintf("from elsewhere %d", i)))
	}
	next("turns of another writer", "main")
	pg, err := a.LoadTurns(ctx, conv, "main", 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	fork, err := a.Fork(ctx, conv, pg.IDs[0], "")
	if err != nil {
		t.Fatal(err)
	}
	next("fork at an older turn", fork)
	next("main again", "main")
	edited := strings.Replace(string(src), "max_turns = 4", "max_turns = 2", 1)
	if edited == string(src) {
		t.Fatal("the agent file has no max_turns = 4")
	}
	if err := os.WriteFile(agentFile, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Minute)
	if err := os.Chtimes(agentFile, future, future); err != nil {
		t.Fatal(err)
	}
	next("agent file edited", "main")
	if n := held("main"); n < 2+undoRoom {
		t.Fatalf("holds %d turns after the edit, want at least %d", n, 2+undoRoom)
	}

	// Previews of a turn before those held, and of the last one, and a dry run, as a
	// service holding the whole branch renders them.
	ref := New(st, demoModel(0))
	ref.SetAgentDirs()
	page, err := a.LoadTurns(ctx, conv, "main", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{1, len(page.Turns) - 1} {
		for s := 0; s <= 5; s++ {
			req := PreviewRequest{Conv: conv, Branch: "main", Turn: page.IDs[i], Call: page.Turns[i].Calls[1].ID, Strategy: s}
			got, err := a.Preview(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ref.Preview(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			if string(g) != string(w) || got.Err != "" {
				t.Fatalf("turn %d, strategy %d: preview\n%s\nwant\n%s", i, s, g, w)
			}
		}
	}
	for s := 1; s <= 5; s++ {
		got, err := a.DryRun(ctx, conv, "main", question("dry"), s)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.DryRun(ctx, conv, "main", question("dry"), s)
		if err != nil {
			t.Fatal(err)
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if string(g) != string(w) {
			t.Fatalf("dry run, strategy %d:\n%s\nwant\n%s", s, g, w)
		}
	}
}
