package storage

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// A text and a list node are found by their short hash (the 8 bytes stored), comparing
// what holds it. Here a turn's first message is stored already, and the hash of its list
// node is taken by another node; the hash of its second message is taken by another
// text. The turn is stored with its own node and text, past the impostors, and reads
// back as sent. Sent again by a new process (nothing cached), it finds them all stored
// and stores nothing again.
func TestShortHashTaken(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sb.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	mustConv(t, s, "x")
	msgs := fixtureTurn(0, 0, false).Calls[0].Messages
	first, second := msgs.At(0), msgs.At(1)
	insert := func(query string, args ...any) int64 {
		t.Helper()
		res, err := s.w.ExecContext(ctx, query, args...)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := res.LastInsertId()
		return id
	}
	h := contentHash(second.Content)
	insert("INSERT INTO contents(hash, body) VALUES (?, 'not the second message')", h.short())
	stored := insert("INSERT INTO contents(hash, body) VALUES (?, ?)", contentHash(first.Content).short(), first.Content)
	node := chainHash(hash16{}, first.Role, contentHash(first.Content))
	insert("INSERT INTO list_nodes(hash, parent_id, role, content_id, depth) VALUES (?, NULL, 'not the role', ?, 1)", node.short(), stored)
	counts := func(s *Store) (texts, nodes, all int) {
		t.Helper()
		if err := s.w.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM contents WHERE hash = ?), (SELECT count(*) FROM list_nodes WHERE hash = ?),
			(SELECT count(*) FROM contents) + (SELECT count(*) FROM list_nodes)`, h.short(), node.short()).Scan(&texts, &nodes, &all); err != nil {
			t.Fatal(err)
		}
		return texts, nodes, all
	}
	if _, err := runTurn(ctx, s.Sink("x", MainBranch), fixtureTurn(0, 0, false)); err != nil {
		t.Fatal(err)
	}
	sentAsFixture(t, s, "x", 1, 0)
	texts, nodes, all := counts(s)
	if texts != 2 || nodes != 2 {
		t.Fatalf("under the taken hashes: %d texts and %d nodes, want 2 of each (the impostor's and the message's)", texts, nodes)
	}
	var again int
	if err := s.w.QueryRowContext(ctx, "SELECT count(*) FROM contents WHERE body = ?", first.Content).Scan(&again); err != nil || again != 1 {
		t.Fatalf("the first message is stored %d times (%v), want once", again, err)
	}
	if _, err := s.Undo(ctx, "x", MainBranch, 1); err != nil {
		t.Fatal(err)
	}
	s.Close()

	if s, err = Open(ctx, path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := runTurn(ctx, s.Sink("x", MainBranch), fixtureTurn(0, 0, false)); err != nil {
		t.Fatal(err)
	}
	sentAsFixture(t, s, "x", 1, 0)
	if texts2, nodes2, all2 := counts(s); texts2 != texts || nodes2 != nodes || all2 != all {
		t.Errorf("sent again: %d texts and %d nodes under the taken hashes, %d rows in all; want %d, %d and %d as before",
			texts2, nodes2, all2, texts, nodes, all)
	}
	var n sql.NullInt64
	if err := s.w.QueryRowContext(ctx, "SELECT count(*) FROM turns").Scan(&n); err != nil || n.Int64 != 2 {
		t.Fatalf("%d turns stored (%v), want the undone one and the one sent again", n.Int64, err)
	}
}
