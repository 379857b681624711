package sessions

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
)

// sameAsFresh checks that a's session for branch, restored through its cache, is the
// session a Service without a cache restores from the store: same turns, same histories.
func sameAsFresh(t *testing.T, a *Service, st *storage.Store, conv, branch string, wantLen int) {
	t.Helper()
	ctx := context.Background()
	r, err := a.session(ctx, conv, branch, "")
	if err != nil {
		t.Fatal(err)
	}
	fresh := New(st, demoModel(0))
	fresh.SetAgentDirs()
	f, err := fresh.session(ctx, conv, branch, "")
	if err != nil {
		t.Fatal(err)
	}
	got, want := turnsJSON(r.s.Turns(), false), turnsJSON(f.s.Turns(), false)
	if r.s.Len() != wantLen || string(got) != string(want) {
		t.Fatalf("%s: cached session has %d turns, want %d:\n got %s\nwant %s", branch, r.s.Len(), wantLen, got, want)
	}
	for path, cs := range r.s.Children() {
		g, w := turnsJSON(cs.Turns(), true), turnsJSON(f.s.Children()[path].Turns(), true)
		if string(g) != string(w) {
			t.Fatalf("%s: child %s differs:\n got %s\nwant %s", branch, path, g, w)
		}
	}
}

// turnsJSON is a session's turns as JSON without what their calls saw (for a child's
// turns, their history is their call's) and their calls' usage, params, attempts and
// score: a session is restored from its branch without them, which the store keeps
// (sessionRead), while one that ran its turns has them.
func turnsJSON(ts []*trace.Turn, child bool) string {
	out := make([]*trace.Turn, len(ts))
	for i, t := range ts {
		c := t.Clone()
		if child {
			c.History = sig.History{}
		}
		trace.WalkCalls(c.Calls, func(call *trace.Call, _ int) {
			call.History, call.Usage, call.Params, call.Tries, call.Score = sig.History{}, lm.Usage{}, lm.Params{}, nil, nil
		})
		out[i] = c
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// The cache never serves a path other than the store's: every way the tip moves, through
// this Service or another writer, is seen on the next session.
func TestSessionCacheFollowsTheStore(t *testing.T) {
	ctx := context.Background()
	a, st, _, _ := newWorkbench(t)
	other := New(st, demoModel(0)) // another process on the same file
	other.SetAgentDirs()
	conv := mustConversation(t, a, "SupportAgent")
	for _, q := range questions {
		mustSend(t, a, conv, "main", question(q))
	}
	sameAsFresh(t, a, st, conv, "main", 3)
	mustSend(t, a, conv, "main", question("a fourth"))
	sameAsFresh(t, a, st, conv, "main", 4) // one new turn: read alone

	if _, err := a.Undo(ctx, conv, "main", 2); err != nil {
		t.Fatal(err)
	}
	sameAsFresh(t, a, st, conv, "main", 2)
	if _, err := a.Redo(ctx, conv, "main", 2); err != nil {
		t.Fatal(err)
	}
	sameAsFresh(t, a, st, conv, "main", 4)
	if _, err := other.Undo(ctx, conv, "main", 1); err != nil {
		t.Fatal(err)
	}
	mustSend(t, other, conv, "main", question("replaced by another writer"))
	sameAsFresh(t, a, st, conv, "main", 4)

	pg := pageOf(t, a, conv, "main")
	fork, err := a.Fork(ctx, conv, pg.IDs[1], "")
	if err != nil {
		t.Fatal(err)
	}
	sameAsFresh(t, a, st, conv, fork, 2)
	mustSend(t, a, conv, fork, question("on the fork"))
	sameAsFresh(t, a, st, conv, fork, 3)
	sameAsFresh(t, a, st, conv, "main", 4)

	// Turn ids can be reused once a branch's turns are deleted: a cached path whose tip
	// id comes back on different turns must not be served.
	mustSend(t, a, conv, fork, question("the last turn of the database"))
	sameAsFresh(t, a, st, conv, fork, 4)
	before := pageOf(t, a, conv, fork).IDs
	if _, err := st.DeleteBranch(ctx, conv, fork, false); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Fork(ctx, conv, "main", fork, 1); err != nil {
		t.Fatal(err)
	}
	mustSend(t, other, conv, fork, question("new turn, old id?"))
	mustSend(t, other, conv, fork, question("and another"))
	after := pageOf(t, a, conv, fork).IDs
	if after[3] != before[3] {
		t.Logf("ids not reused (%v then %v): the reuse case is not exercised", before, after)
	}
	sameAsFresh(t, a, st, conv, fork, 4)
}

// liveSame checks the session a keeps for branch against a fresh restore from the store
// and returns it (it stays a's: peeked at, not taken).
func liveSame(t *testing.T, a *Service, st *storage.Store, conv, branch string, wantLen int) *liveSession {
	t.Helper()
	ctx := context.Background()
	_, _, l, err := a.liveState(ctx, conv, branch, false, false)
	if err != nil {
		t.Fatal(err)
	}
	fresh := New(st, demoModel(0))
	fresh.SetAgentDirs()
	f, err := fresh.restore(ctx, conv, branch, "", 0, mustPath(t, fresh, conv, branch))
	if err != nil {
		t.Fatal(err)
	}
	got, want := turnsJSON(l.run.s.Turns(), false), turnsJSON(f.s.Turns(), false)
	if l.run.s.Len() != wantLen || string(got) != string(want) {
		t.Fatalf("%s: kept session has %d turns, want %d:\n got %s\nwant %s", branch, l.run.s.Len(), wantLen, got, want)
	}
	for path, cs := range l.run.s.Children() {
		g, w := turnsJSON(cs.Turns(), true), turnsJSON(f.s.Children()[path].Turns(), true)
		if string(g) != string(w) {
			t.Fatalf("%s: child %s differs:\n got %s\nwant %s", branch, path, g, w)
		}
	}
	if g, w := l.run.s.History(), f.s.History(); !py.Same(g, w) {
		t.Fatalf("%s: next history %v, want %v", branch, g, w)
	}
	return l
}

func mustPath(t *testing.T, a *Service, conv, branch string) []*trace.Turn {
	t.Helper()
	p, err := a.branchPath(context.Background(), conv, branch)
	if err != nil {
		t.Fatal(err)
	}
	return p.turns
}

// The session kept for a branch is the one turns run on and the one undo and redo move:
// it is never restored again while the branch only moves that way, and it always equals
// a session restored from the store.
func TestLiveSessionMovesWithTheBranch(t *testing.T) {
	ctx := context.Background()
	a, st, _, _ := newWorkbench(t)
	other := New(st, demoModel(0))
	other.SetAgentDirs()
	conv := mustConversation(t, a, "SupportAgent")
	for _, q := range questions {
		mustSend(t, a, conv, "main", question(q))
	}
	l := liveSame(t, a, st, conv, "main", 3)
	steps := []struct {
		name string
		do   func()
		n    int
		same bool // the same session, moved, not restored again
	}{
		{"send", func() { mustSend(t, a, conv, "main", question("a fourth")) }, 4, true},
		{"undo 2", func() {
			if _, err := a.Undo(ctx, conv, "main", 2); err != nil {
				t.Fatal(err)
			}
		}, 2, true},
		{"redo 1", func() {
			if _, err := a.Redo(ctx, conv, "main", 1); err != nil {
				t.Fatal(err)
			}
		}, 3, true},
		{"redo by another process", func() {
			if _, err := other.Redo(ctx, conv, "main", 1); err != nil {
				t.Fatal(err)
			}
		}, 4, true},
		{"undo, then a new turn", func() {
			if _, err := a.Undo(ctx, conv, "main", 1); err != nil {
				t.Fatal(err)
			}
			mustSend(t, a, conv, "main", question("instead"))
		}, 4, true},
		{"a turn by another process", func() { mustSend(t, other, conv, "main", question("from elsewhere")) }, 5, false},
		{"a failed turn", func() {
			if _, err := a.Send(ctx, SendRequest{Conv: conv, Branch: "main", Inputs: sig.NewMap("nothing", "x")}, nil); err == nil {
				t.Fatal("a turn without its input succeeded")
			}
		}, 5, true},
	}
	for _, s := range steps {
		s.do()
		nl := liveSame(t, a, st, conv, "main", s.n)
		if (nl == l) != s.same {
			t.Fatalf("%s: kept the same session: %v, want %v", s.name, nl == l, s.same)
		}
		l = nl
	}
	// A preview and a dry run read the kept session; they neither take nor change it.
	pg := pageOf(t, a, conv, "main")
	if _, err := a.Preview(ctx, PreviewRequest{Conv: conv, Branch: "main", Turn: pg.IDs[3], Strategy: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.DryRun(ctx, conv, "main", question("next?"), 1); err != nil {
		t.Fatal(err)
	}
	if liveSame(t, a, st, conv, "main", 5) != l {
		t.Fatal("a preview or dry run replaced the kept session")
	}
}

// A session built from an agent file (found in the agent directories) is not reused once
// the file changed.
func TestLiveSessionFollowsTheAgentFile(t *testing.T) {
	ctx := context.Background()
	a, _, _, _ := newWorkbench(t)
	src, err := os.ReadFile("testdata/support_window.toml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "agent.toml")
	if err := os.WriteFile(file, src, 0o600); err != nil {
		t.Fatal(err)
	}
	a.SetAgentDirs(dir)
	conv := mustConversation(t, a, "support-window")
	mustSend(t, a, conv, "main", question("one"))
	_, _, l, err := a.liveState(ctx, conv, "main", false, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, again, _ := a.liveState(ctx, conv, "main", false, false); again != l {
		t.Fatal("an unchanged agent file's session was not kept")
	}
	changed := strings.Replace(string(src), "max_turns = 4", "max_turns = 2", 1)
	if err := os.WriteFile(file, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Second)
	if err := os.Chtimes(file, later, later); err != nil {
		t.Fatal(err)
	}
	_, _, nl, err := a.liveState(ctx, conv, "main", false, false)
	if err != nil {
		t.Fatal(err)
	}
	if nl == l || *nl.run.s.Options().MaxTurns != 2 {
		t.Fatalf("the changed agent file's session was reused (max_turns %v)", *nl.run.s.Options().MaxTurns)
	}
}

// Prefetch restores and keeps the branch's session, so the next Send takes it instead
// of restoring one; whatever moved the tip meanwhile (another writer's turn) is still
// seen, and the turn sent is the one a fresh Service sends.
func TestPrefetchKeepsTheSessionForTheSend(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		moved bool // another writer adds a turn between the prefetch and the Send
	}{{"tip unchanged", false}, {"tip moved meanwhile", true}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, st, _, _ := newWorkbench(t)
			conv := mustConversation(t, a, "SupportAgent")
			for _, q := range questions {
				mustSend(t, a, conv, "main", question(q))
			}
			b := New(st, demoModel(0)) // a fresh process
			b.SetAgentDirs()
			b.Prefetch(ctx, conv, "main")
			kept := b.cache.state(conv + "\x00main").live
			if kept == nil {
				t.Fatal("Prefetch kept no session")
			}
			if tc.moved {
				mustSend(t, a, conv, "main", question("from the other process"))
			}
			mustSend(t, b, conv, "main", question("and now?"))
			want := 4
			if tc.moved {
				want = 5
			}
			if now := b.cache.state(conv + "\x00main").live; !tc.moved && (now == nil || now.run != kept.run) {
				t.Error("the Send did not run on the prefetched session")
			}
			sameAsFresh(t, b, st, conv, "main", want)
		})
	}
}
