package sessions

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
)

// meddlingLM is the demo model, which runs meddle once, at the first request after it
// was set: what another process does while a turn is in flight.
type meddlingLM struct {
	inner  lm.LM
	mu     sync.Mutex
	meddle func()
}

func (m *meddlingLM) Name() string { return m.inner.Name() }
func (m *meddlingLM) Call(ctx context.Context, req lm.Request) (lm.Response, error) {
	m.mu.Lock()
	f := m.meddle
	m.meddle = nil
	m.mu.Unlock()
	if f != nil {
		f()
	}
	return m.inner.Call(ctx, req)
}

// A Send whose turn's transaction fails (another process moved the branch, or the
// database took no write) has returned as committed: the transaction runs beside it
// (storage/commitlater.go). The next Send on the branch reports the failure and begins
// nothing; the turn is kept (beside the branch as failed, or, its journal let go, put
// on the branch by the first reader once the database takes writes again, as it was
// returned); and the Send after follows the branch as the store has it, with the
// history of its turns only.
func TestSendWhoseCommitFails(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name         string
		meddle, mend func(t *testing.T, db *sql.DB, other *storage.Store, conv string)
		status       trace.Status // of the turn whose commit failed
		says         string       // in the Send's error
		next         int          // the index of the next Send's turn
	}{
		{"branch moved", func(t *testing.T, db *sql.DB, other *storage.Store, conv string) {
			// Undo refuses while the turn is in flight; a version of this program that took
			// no journal lock could move the tip all the same.
			if _, err := other.Undo(ctx, conv, storage.MainBranch, 1); !errors.Is(err, storage.ErrBusy) {
				t.Errorf("undo under the turn in flight: %v, want it refused as busy", err)
			}
			if _, err := db.ExecContext(ctx, `UPDATE branches SET tip_id = (SELECT parent_id FROM turns WHERE id = tip_id)
				WHERE conv_id = ? AND name = 'main'`, conv); err != nil {
				t.Error(err)
			}
		}, func(*testing.T, *sql.DB, *storage.Store, string) {}, trace.StatusFailed, "moved while turn", 1},
		{"not writable", func(t *testing.T, db *sql.DB, _ *storage.Store, _ string) {
			if _, err := db.ExecContext(ctx, `CREATE TRIGGER no_turns BEFORE INSERT ON turns BEGIN SELECT RAISE(ABORT, 'disk full (test)'); END`); err != nil {
				t.Error(err)
			}
		}, func(t *testing.T, db *sql.DB, _ *storage.Store, _ string) {
			if _, err := db.ExecContext(ctx, `DROP TRIGGER no_turns`); err != nil {
				t.Error(err)
			}
		}, trace.StatusCompleted, "disk full (test)", 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, _, _, path := newWorkbench(t)
			model := &meddlingLM{inner: demoModel(0)}
			a.model = model
			c, err := a.NewConversation(ctx, "SupportAgent", "commit fails")
			if err != nil {
				t.Fatal(err)
			}
			send := func(q string) (*trace.Turn, error) {
				return a.Send(ctx, SendRequest{Conv: c.ID, Branch: storage.MainBranch, Inputs: question(q)}, nil)
			}
			for _, q := range []string{"I was charged twice", "Still waiting"} {
				if _, err := send(q); err != nil {
					t.Fatal(err)
				}
			}
			other, err := storage.Open(ctx, path) // another process
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			// another process's plain connection; it waits for the write lock as any
			// would (the Service warms the store up as the model call begins)
			db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			model.meddle = func() { tc.meddle(t, db, other, c.ID) }

			if _, err := send("Any news?"); err != nil {
				t.Fatalf("Send = %v; want it returned as committed", err)
			}
			// a read waits for the turn's transaction (which the workbench's refresh after
			// a Send does): the database is mended after it failed
			if _, err := a.store.BranchRow(ctx, c.ID, storage.MainBranch); err != nil {
				t.Fatal(err)
			}
			tc.mend(t, db, other, c.ID)
			_, err = send("Hello again")
			if err == nil || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "this turn was not begun") {
				t.Fatalf("the next Send = %v; want the failure reported, saying %q, and nothing begun", err, tc.says)
			}
			// kept with its calls (out of the branch's path, or, let go, on it by the
			// first reader)
			tree, err := a.store.TurnTree(ctx, c.ID)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(tree, func(n *storage.TurnNode) bool { return n.Index == 2 })
			if i < 0 || tree[i].Status != tc.status || tree[i].Calls != 2 {
				t.Fatalf("the turn whose transaction failed: %+v; want it %s with its 2 calls", tree, tc.status)
			}
			turn, err := send("Hello again") // the failure was reported once
			if err != nil {
				t.Fatalf("the Send after: %v", err)
			}
			for _, call := range turn.Calls {
				if turn.Index != tc.next || len(call.History.Messages) != tc.next {
					t.Fatalf("next turn: index %d, %s saw %d history entries; want %d (the committed turns only)",
						turn.Index, call.Path, len(call.History.Messages), tc.next)
				}
			}
			b, err := a.store.Branch(ctx, c.ID, storage.MainBranch)
			if err != nil || b.Length != tc.next+1 {
				t.Fatalf("branch: %+v, %v; want %d turns", b, err, tc.next+1)
			}
		})
	}
}
