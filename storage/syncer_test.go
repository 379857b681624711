package storage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// The syncer covers every commit that asked before a wait, however the requests and its
// syncs interleave, and counts each sync it made.
func TestSyncerCoversEveryRequest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte("frames"), 0o600); err != nil {
		t.Fatal(err)
	}
	var synced atomic.Int64
	y := newSyncer(path, &synced)
	for i := range 200 {
		y.request()
		if i%50 == 49 {
			if err := y.wait(); err != nil {
				t.Fatal(err)
			}
			if y.got != y.want || synced.Load() == 0 {
				t.Fatalf("after %d requests: covered %d of %d, %d syncs", i+1, y.got, y.want, synced.Load())
			}
		}
	}
	if n := synced.Load(); n > 200 {
		t.Errorf("%d syncs for 200 requests", n)
	}
	// a log SQLite has checkpointed and removed has nothing to sync
	if err := syncFile(filepath.Join(t.TempDir(), "gone")); err != nil {
		t.Errorf("sync of a missing log: %v", err)
	}
	var nilSyncer *syncer // a read-only store's
	nilSyncer.request()
	if err := nilSyncer.wait(); err != nil {
		t.Error(err)
	}
}

// A sync that fails is reported, naming the log, once: by Sync (or Close), or else by
// the next write, which then changes nothing. The writes after it go on.
func TestSyncFailureIsReported(t *testing.T) {
	ctx := context.Background()
	for _, reportedBy := range []string{"Sync", "write"} {
		t.Run(reportedBy, func(t *testing.T) {
			s := openTemp(t)
			mustConv(t, s, "x")
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
			bad := t.TempDir() // a directory cannot be opened for writing: the sync fails
			s.sync.path = bad
			if _, err := s.CreateConversation(ctx, NewConversation{ID: "y", Title: "y", Agent: "demo"}); err != nil {
				t.Fatal(err) // the commit itself is made
			}
			s.sync.mu.Lock()
			for s.sync.got < s.sync.want {
				s.sync.done.Wait()
			}
			s.sync.mu.Unlock()
			var err error
			if reportedBy == "Sync" {
				err = s.Sync()
			} else {
				_, err = s.CreateConversation(ctx, NewConversation{ID: "z", Title: "z", Agent: "demo"})
			}
			if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "crash of the machine") {
				t.Fatalf("%s after a failed sync: %v", reportedBy, err)
			}
			if reportedBy == "write" {
				if !strings.Contains(err.Error(), "nothing was changed") {
					t.Errorf("write: %v", err)
				}
				if _, err := s.Conversation(ctx, "z"); !errors.Is(err, ErrNotFound) {
					t.Errorf("conversation z after the refused write: %v", err)
				}
			}
			s.sync.path = s.path + "-wal"
			if _, err := s.CreateConversation(ctx, NewConversation{ID: "w", Title: "w", Agent: "demo"}); err != nil {
				t.Fatal(err)
			}
			if err := s.Sync(); err != nil {
				t.Errorf("reported twice: %v", err)
			}
		})
	}
}
