package storage

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/trace"
)

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func TestOpenCreatesPrivateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "dir", "sb.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("database mode = %v, want 0600", st.Mode().Perm())
	}
	var mode string
	if err := s.r.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q (%v), want wal", mode, err)
	}
	var fk, sync int
	if err := s.w.QueryRow("SELECT (SELECT foreign_keys FROM pragma_foreign_keys), (SELECT synchronous FROM pragma_synchronous)").Scan(&fk, &sync); err != nil {
		t.Fatal(err)
	}
	if fk != 1 || sync != 1 {
		t.Errorf("foreign_keys=%d synchronous=%d, want 1 and 1 (NORMAL: the syncer fsyncs the log)", fk, sync)
	}
	var v int
	s.r.QueryRow("PRAGMA user_version").Scan(&v)
	if v != SchemaVersion() {
		t.Errorf("user_version = %d, want %d", v, SchemaVersion())
	}
	if err := s.IntegrityCheck(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusesForeignFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("these are my notes, not a database, and long enough to have a header\n"), 0o644)

	foreign := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite", foreign)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE accounts(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO accounts(name) VALUES ('x')"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	newer := filepath.Join(dir, "newer.db")
	s, err := Open(ctx, newer)
	if err != nil {
		t.Fatal(err)
	}
	s.w.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	if _, err := s.w.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	s.Close()

	cases := []struct {
		name, path string
		want       error
		msg        string
	}{
		{"text file", text, ErrNotDatabase, "not a SQLite file"},
		{"other program's database", foreign, ErrNotDatabase, "another program"},
		{"newer schema", newer, ErrNewerSchema, "schema version 99"},
		{"directory", dir, ErrNotDatabase, "is a directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var before [32]byte
			if tc.path != dir {
				before = fileSum(t, tc.path)
			}
			s, err := Open(ctx, tc.path)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%s) succeeded, want %v", tc.name, tc.want)
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Open: %v, want %v mentioning %q", err, tc.want, tc.msg)
			}
			if tc.path != dir && fileSum(t, tc.path) != before {
				t.Errorf("%s was modified by the refused Open", tc.path)
			}
		})
	}
}

func TestMigrationBacksUpFirst(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sb.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	mustConv(t, s, "c1")
	s.Close()

	saved, base := migrations, SchemaVersion()
	migrations = append(append([]string(nil), saved...), "ALTER TABLE conversations ADD COLUMN extra TEXT NOT NULL DEFAULT 'x';")
	defer func() { migrations = saved }()

	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var extra string
	if err := s.r.QueryRow("SELECT extra FROM conversations WHERE id = 'c1'").Scan(&extra); err != nil || extra != "x" {
		t.Fatalf("migration not applied: %q %v", extra, err)
	}
	backups, _ := filepath.Glob(path + fmt.Sprintf(".bak-v%d-*", base))
	if len(backups) != 1 {
		t.Fatalf("backups = %v, want one .bak-v%d file", backups, base)
	}
	st, _ := os.Stat(backups[0])
	if st.Mode().Perm() != 0o600 {
		t.Errorf("backup mode %v, want 0600", st.Mode().Perm())
	}
	old, err := sql.Open("sqlite", backups[0])
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	var v, n int
	old.QueryRow("PRAGMA user_version").Scan(&v)
	old.QueryRow("SELECT count(*) FROM conversations").Scan(&n)
	if v != base || n != 1 {
		t.Errorf("backup has version %d and %d conversations, want %d and 1", v, n, base)
	}
}

func TestStatusTransitions(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	cases := []struct {
		from, to trace.Status
		ok       bool
	}{
		{trace.StatusInProgress, trace.StatusCompleted, true},
		{trace.StatusInProgress, trace.StatusNeedsHuman, true},
		{trace.StatusInProgress, trace.StatusFailed, true},
		{trace.StatusInProgress, trace.StatusCancelled, true},
		{trace.StatusInProgress, trace.StatusInProgress, true},
		{trace.StatusCompleted, trace.StatusInProgress, false},
		{trace.StatusNeedsHuman, trace.StatusCompleted, false},
		{trace.StatusFailed, trace.StatusInProgress, false},
		{trace.StatusCancelled, trace.StatusCompleted, false},
		{trace.StatusCompleted, trace.StatusCompleted, true},
	}
	for i, tc := range cases {
		id := string(tc.from) + "-" + string(tc.to)
		mustConv(t, s, id)
		if tc.from != trace.StatusInProgress {
			if err := s.SetStatus(ctx, id, tc.from); err != nil {
				t.Fatal(err)
			}
		}
		err := s.SetStatus(ctx, id, tc.to)
		if (err == nil) != tc.ok {
			t.Errorf("case %d %s -> %s: err %v, want ok=%v", i, tc.from, tc.to, err, tc.ok)
		}
		c, _ := s.Conversation(ctx, id)
		want := tc.from
		if tc.ok {
			want = tc.to
		}
		if c.Status != want {
			t.Errorf("case %d: status %s, want %s", i, c.Status, want)
		}
	}
	for _, bad := range []trace.Status{"done", trace.StatusRunning, trace.StatusInterrupted} {
		// a turn's status is not a conversation's
		if err := s.SetStatus(ctx, "in_progress-completed", bad); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "unknown conversation status") {
			t.Errorf("status %q: %v", bad, err)
		}
	}
	if err := s.SetStatus(ctx, "nope", trace.StatusFailed); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown conversation: %v", err)
	}
	// A closed conversation takes no new turns.
	if _, err := s.Sink("in_progress-completed", MainBranch).BeginTurn(ctx, nil); !errors.Is(err, ErrClosedSession) {
		t.Errorf("turn on a completed conversation: %v", err)
	}
}

func TestConversationMetadataAndListing(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	c, err := s.CreateConversation(ctx, NewConversation{ID: "c1", Title: "T", Agent: "triage",
		AgentConfig: []byte(`{"max_retries":3,"quality_threshold":0.8}`), Metadata: map[string]any{"user_id": "u1", "n": 2}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != trace.StatusInProgress || c.Metadata["user_id"] != "u1" || c.Metadata["n"] != 2.0 || c.CreatedAt.IsZero() {
		t.Fatalf("created: %+v", c)
	}
	if _, err := s.CreateConversation(ctx, NewConversation{ID: "c1"}); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("duplicate id: %v", err)
	}
	if _, err := s.CreateConversation(ctx, NewConversation{AgentConfig: []byte("{")}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad config: %v", err)
	}
	if err := s.SetMetadata(ctx, "c1", map[string]any{"user_id": nil, "source": "web"}); err != nil {
		t.Fatal(err)
	}
	c, _ = s.Conversation(ctx, "c1")
	if _, ok := c.Metadata["user_id"]; ok || c.Metadata["source"] != "web" {
		t.Errorf("metadata after merge: %v", c.Metadata)
	}
	appendN(t, s, "c1", MainBranch, 3)
	if _, err := s.Fork(ctx, "c1", MainBranch, "alt", 0); err != nil {
		t.Fatal(err)
	}
	appendN(t, s, "c1", "alt", 2)
	mustConv(t, s, "c2")
	list, err := s.ListConversations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("list: %d", len(list))
	}
	var c1 ConversationSummary
	for _, x := range list {
		if x.ID == "c1" {
			c1 = x
		}
	}
	if c1.Branches != 2 || c1.Turns != 5 || c1.MainLength != 3 {
		t.Errorf("summary of c1: branches %d turns %d main %d, want 2 5 3", c1.Branches, c1.Turns, c1.MainLength)
	}
	if err := s.DeleteConversation(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Conversation(ctx, "c1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted conversation still there: %v", err)
	}
	var n int
	s.r.QueryRow("SELECT count(*) FROM turns").Scan(&n)
	if n != 0 {
		t.Errorf("%d turns left after deleting the only conversation with turns", n)
	}
	var nodes, contents int
	s.r.QueryRow("SELECT (SELECT count(*) FROM list_nodes), (SELECT count(*) FROM contents)").Scan(&nodes, &contents)
	if nodes != 0 || contents != 0 {
		t.Errorf("%d list nodes and %d contents left after deleting every call", nodes, contents)
	}
	if err := s.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
}
