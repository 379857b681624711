package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// TestPreparedReadsSeeEveryCommit checks that reads run prepared (parsed once) and that a
// prepared statement holds no snapshot between uses: a title changed by this store's
// writer or by another store on the same file (another process) is read back at once,
// also once the set of prepared statements is full and reads run unprepared.
func TestPreparedReadsSeeEveryCommit(t *testing.T) {
	ctx := context.Background()
	s, other, c := twoStores(t, "t0")
	for i, tc := range []struct {
		name   string
		writer *Store
		full   bool // the prepared set is full: reads run unprepared
	}{
		{"own writer", s, false},
		{"another store", other, false},
		{"own writer, set full", s, true},
		{"another store, set full", other, true},
	} {
		if tc.full {
			for j := len(s.r.stmts); j < maxReadStmts; j++ {
				var v int
				if err := s.r.QueryRowContext(ctx, fmt.Sprintf("SELECT %d", j)).Scan(&v); err != nil || v != j {
					t.Fatal(err)
				}
			}
		}
		if _, err := s.Conversation(ctx, c.ID); err != nil { // the statement in use before the write
			t.Fatal(err)
		}
		title := fmt.Sprintf("t%d", i+1)
		if err := tc.writer.SetTitle(ctx, c.ID, title); err != nil {
			t.Fatal(err)
		}
		got, err := s.Conversation(ctx, c.ID)
		if err != nil || got.Title != title {
			t.Errorf("%s: title %q (%v), want %q", tc.name, got.Title, err, title)
		}
		s.r.mu.Lock()
		n := len(s.r.stmts)
		s.r.mu.Unlock()
		if n == 0 || n > maxReadStmts {
			t.Errorf("%s: %d prepared read statements, want 1 to %d", tc.name, n, maxReadStmts)
		}
	}
}

// TestWriteCacheSeesOtherWriters checks that the write cache, whose data_version check
// runs prepared, still notices every commit of another connection (another process may
// have swept contents the cache names) and none of its own.
func TestWriteCacheSeesOtherWriters(t *testing.T) {
	ctx := context.Background()
	s, other, c := twoStores(t, "t")
	nop := func(tx *wtx) error { return nil }
	for i, tc := range []struct {
		name    string
		writer  *Store
		changed bool
	}{
		{"own write", s, false},
		{"own write, prepared", s, false},
		{"another store's write", other, true},
		{"own write again", s, false},
		{"another store's write again", other, true},
	} {
		if err := s.write(ctx, nop); err != nil {
			t.Fatal(err)
		}
		before := s.wc.dataVersion
		if err := tc.writer.SetTitle(ctx, c.ID, fmt.Sprintf("t%d", i)); err != nil {
			t.Fatal(err)
		}
		if err := s.write(ctx, nop); err != nil {
			t.Fatal(err)
		}
		if changed := s.wc.dataVersion != before; changed != tc.changed {
			t.Errorf("%s: data version %d -> %d, want changed = %v", tc.name, before, s.wc.dataVersion, tc.changed)
		}
	}
	s.wc.stmtMu.Lock()
	_, prepared := s.wc.stmts["PRAGMA data_version"]
	s.wc.stmtMu.Unlock()
	if !prepared {
		t.Error("PRAGMA data_version is not prepared")
	}
}

// twoStores opens one database file twice (a second process, as far as SQLite is
// concerned) with a conversation titled title.
func twoStores(t *testing.T, title string) (s, other *Store, c *Conversation) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "two.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if other, err = Open(ctx, path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	if c, err = s.CreateConversation(ctx, NewConversation{Title: title, Agent: "SupportAgent"}); err != nil {
		t.Fatal(err)
	}
	return s, other, c
}
