package sessions

import (
	"context"
	"encoding/json"
	"testing"

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
	got, _ := json.Marshal(r.s.Turns())
	want, _ := json.Marshal(f.s.Turns())
	if r.s.Len() != wantLen || string(got) != string(want) {
		t.Fatalf("%s: cached session has %d turns, want %d:\n got %s\nwant %s", branch, r.s.Len(), wantLen, got, want)
	}
	for path, cs := range r.s.Children() {
		g, _ := json.Marshal(cs.Turns())
		w, _ := json.Marshal(f.s.Children()[path].Turns())
		if string(g) != string(w) {
			t.Fatalf("%s: child %s differs:\n got %s\nwant %s", branch, path, g, w)
		}
	}
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
