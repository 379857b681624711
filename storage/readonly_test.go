package storage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// readOnlyFixture is a closed database with two turns (its -wal merged away, as a
// clean close leaves it).
func readOnlyFixture(t *testing.T) string {
	t.Helper()
	s := openTemp(t)
	mustConv(t, s, "c1")
	appendN(t, s, "c1", MainBranch, 2)
	path := s.Path()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func siblings(t *testing.T, path string) []string {
	t.Helper()
	names, err := filepath.Glob(path + "-*")
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// Opened read-only, a database reads as usual, refuses every write with ErrReadOnly,
// and is left byte for byte as it was, with no -wal or -shm beside it.
func TestReadOnlyStoreReadsAndWritesNothing(t *testing.T) {
	ctx := context.Background()
	path := readOnlyFixture(t)
	sum := fileSum(t, path)
	if got := siblings(t, path); len(got) > 0 {
		t.Fatalf("the fixture left %v", got)
	}
	s, err := openReadOnly(ctx, path, "its folder cannot be written: read-only file system")
	if err != nil {
		t.Fatal(err)
	}
	if !s.ReadOnly() || s.ReadOnlyReason() == "" {
		t.Error("ReadOnly should report the store read-only, with why")
	}
	convs, err := s.ListConversations(ctx)
	if err != nil || len(convs) != 1 {
		t.Fatalf("ListConversations: %v, %v", convs, err)
	}
	turns, err := s.LoadBranch(ctx, "c1", MainBranch)
	if err != nil || len(turns) != 2 {
		t.Fatalf("LoadBranch: %d turns, %v", len(turns), err)
	}
	_, err = s.CreateConversation(ctx, NewConversation{ID: "c2", Title: "x", Agent: "demo"})
	if !errors.Is(err, ErrReadOnly) {
		t.Errorf("a write: %v, want ErrReadOnly", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if fileSum(t, path) != sum {
		t.Error("the file changed")
	}
	if got := siblings(t, path); len(got) > 0 {
		t.Errorf("reading left %v", got)
	}
}

// A database whose folder really cannot be written (not checkable as root, who may
// write anywhere) opens read-only through OpenRead.
func TestOpenReadOnAReadOnlyFolder(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root may write any folder; the end-to-end test runs the binary as another user")
	}
	path := readOnlyFixture(t)
	dir := filepath.Dir(path)
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	s, err := OpenRead(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.ReadOnly() {
		t.Fatal("not read-only")
	}
	if _, err := s.ListConversations(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := siblings(t, path); len(got) > 0 {
		t.Errorf("reading left %v", got)
	}
}

// What cannot be read without writing is refused with a reason: an older schema (it
// would need migrating) and a -wal holding commits with no -shm to read it through.
func TestReadOnlyRefusals(t *testing.T) {
	ctx := context.Background()
	path := readOnlyFixture(t)
	if err := os.WriteFile(path+"-wal", []byte("not empty"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := openReadOnly(ctx, path, "test"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("a -wal without -shm: %v, want ErrReadOnly", err)
	}
	os.Remove(path + "-wal")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Exec("PRAGMA user_version = 1"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := openReadOnly(ctx, path, "test"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("an older schema: %v, want ErrReadOnly", err)
	}
}
