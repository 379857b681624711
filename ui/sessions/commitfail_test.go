package sessions

import (
	"context"
	"database/sql"
	"errors"
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

// A Send whose commit fails (another process moved the branch, or the database took no
// write) reports the turn as kept, frees the branch, and leaves the Service's session as
// the store has the branch: the next Send follows the last committed turn, with the
// history of the committed turns only.
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
		}, trace.StatusInterrupted, "disk full (test)", 2},
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

			_, err = send("Any news?")
			var kt *KeptTurnError
			if !errors.As(err, &kt) || kt.Turn.Status != tc.status || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Send = %v; want the turn kept as %s, saying %q", err, tc.status, tc.says)
			}
			tc.mend(t, db, other, c.ID)
			// kept (out of the branch's path: after an undo, not even beside it), with its
			// calls; a journal let go is kept by the first reader
			info, err := a.store.TurnInfo(ctx, kt.Key)
			if err != nil || info.Status != tc.status {
				t.Fatalf("turn %s: %+v, %v; want it kept as %s", kt.Key, info, err, tc.status)
			}
			stored, err := a.store.LoadTurns(ctx, []string{kt.Key})
			if err != nil || len(stored[0].Calls) != 2 {
				t.Fatalf("turn %s: %v; want its 2 calls stored", kt.Key, err)
			}

			turn, err := send("Hello again")
			if err != nil {
				t.Fatalf("the next Send: %v", err)
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
