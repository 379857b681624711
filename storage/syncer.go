package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
)

// A commit returns once it is in the write-ahead log (synchronous=NORMAL): the kernel has
// it, so a killed process loses nothing. The syncer then fsyncs the log in the
// background, which makes it survive a crash of the machine too, off the caller's path
// (an fsync is 0.3-0.8 ms here, more on many laptops: a third of what a turn's commit
// cost beyond the model). Commits made while a sync runs are covered by the next one.
// SQLite syncs the log itself before each checkpoint, so a log it has checkpointed and
// removed needs nothing. A sync that fails is reported by the next Sync, Close or write.
type syncer struct {
	path   string        // the write-ahead log
	synced *atomic.Int64 // syncs done (Store.Commits)

	mu        sync.Mutex
	done      *sync.Cond // signalled when a sync ends
	want, got uint64     // commits asking for a sync; those a finished sync covers
	running   bool
	err       error // the first failure not reported yet
}

func newSyncer(path string, synced *atomic.Int64) *syncer {
	y := &syncer{path: path, synced: synced}
	y.done = sync.NewCond(&y.mu)
	return y
}

// A nil syncer (a read-only store's) has nothing to sync.

// request asks for the log to be synced after a commit that just returned.
func (y *syncer) request() {
	if y == nil {
		return
	}
	y.mu.Lock()
	defer y.mu.Unlock()
	y.want++
	if !y.running {
		y.running = true
		go y.run()
	}
}

// run syncs until no commit waits: one goroutine per burst of commits, so an idle store
// has none.
func (y *syncer) run() {
	y.mu.Lock()
	defer y.mu.Unlock()
	for y.got < y.want {
		target := y.want
		y.mu.Unlock()
		err := syncFile(y.path)
		y.mu.Lock()
		if err != nil && y.err == nil {
			y.err = fmt.Errorf("storage: a commit may not survive a crash of the machine: syncing %s: %w", y.path, err)
		}
		y.got = target
		y.synced.Add(1)
		y.done.Broadcast()
	}
	y.running = false
}

// wait returns once every commit that asked before it is synced, with the failure not
// reported yet, if any.
func (y *syncer) wait() error {
	if y == nil {
		return nil
	}
	y.mu.Lock()
	defer y.mu.Unlock()
	for y.got < y.want {
		y.done.Wait()
	}
	return y.takeErr()
}

// failed is the failure not reported yet, if any (reported once).
func (y *syncer) failed() error {
	if y == nil {
		return nil
	}
	y.mu.Lock()
	defer y.mu.Unlock()
	return y.takeErr()
}

func (y *syncer) takeErr() error {
	err := y.err
	y.err = nil
	return err
}

// syncFile fsyncs the file at path through a descriptor of its own (fsync flushes the
// file, whoever wrote it); a file that is gone has nothing to flush.
func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Sync returns once the commits made so far are durable (their log fsynced), the
// transactions of the turns committed so far included (commitlater.go), or with the
// error a sync or such a transaction met.
func (s *Store) Sync() error {
	err := s.Settle()
	return errors.Join(err, s.sync.wait())
}
