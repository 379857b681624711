package storage

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/trace"
)

// gunzip writes testdata/name.gz to path and returns its bytes.
func gunzip(t *testing.T, name, path string) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name+".gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if path != "" {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// A database written at schema version 6 (testdata/README.md) opens under this program:
// it is backed up, migrated, and gives back every turn, call, value, exact request,
// completion and raw HTTP body as the program that wrote it did, byte for byte; turns
// added afterwards are stored the new way beside them.
func TestMigrateV6KeepsExactRequests(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "v6.db")
	gunzip(t, "v6.db", db)
	var want map[string]json.RawMessage
	if err := json.Unmarshal(gunzip(t, "v6.json", ""), &want); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if SchemaVersion() > 6 {
		backups, _ := filepath.Glob(db + ".bak-v6-*")
		if len(backups) != 1 {
			t.Fatalf("backups %v, want one of version 6", backups)
		}
	}
	check := func(when string) {
		t.Helper()
		for name, w := range want {
			var got []*trace.Turn
			if key, ok := strings.CutPrefix(name, "kept:"); ok {
				got, err = s.LoadTurns(ctx, []string{key})
			} else {
				got, err = s.LoadBranch(ctx, "old", name)
			}
			if err != nil {
				t.Fatalf("%s: %s: %v", when, name, err)
			}
			g, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if string(g) != string(w) {
				t.Fatalf("%s: %s differs from what version 6 stored:\n got %.2000s\nwant %.2000s", when, name, g, w)
			}
		}
	}
	check("migrated")
	// New turns on both branches, stored by this program, and the old ones still exact.
	for _, br := range []string{MainBranch, "win"} {
		b, err := s.Branch(ctx, "old", br)
		if err != nil {
			t.Fatal(err)
		}
		nt := fixtureTurn(b.Length, map[string]int{MainBranch: 0, "win": 2}[br], true)
		if _, err := runTurn(ctx, s.Sink("old", br), nt); err != nil {
			t.Fatal(err)
		}
		turns, err := s.LoadBranch(ctx, "old", br)
		if err != nil {
			t.Fatal(err)
		}
		last := turns[len(turns)-1]
		if toJSON(t, last.Calls) != toJSON(t, nt.Calls) {
			t.Fatalf("%s: the new turn's calls come back different:\n got %s\nwant %s", br, toJSON(t, last.Calls), toJSON(t, nt.Calls))
		}
	}
	if _, err := s.Undo(ctx, "old", MainBranch, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Undo(ctx, "old", "win", 1); err != nil {
		t.Fatal(err)
	}
	check("after new turns")
	if err := s.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
}
