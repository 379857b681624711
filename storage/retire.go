package storage

import (
	"context"
	"os"
)

// Retiring a journal whose turn is in the database (journal.go) happens beside the
// caller: once the turn's transaction has committed (itself beside CommitTurn's caller:
// commitlater.go), the journal is emptied and unlocked a moment later (retireLater).
// Nothing waits on it but the next user of the
// same journal: this process's next turn or tip move on the branch (awaitRetired), its
// readers of the turns in flight and Close (awaitAllRetired), and another process, which
// finds the journal locked by a turn that has ended and waits as it waits for any brief
// holder (endedHolder). A process killed in between leaves a journal whose turn is
// stored, which the next reader only empties (importRun), as when it died between the
// commit and the emptying before.
//
// The emptied file stays open, unlocked, for the branch's next turn or tip move
// (keepOpen): a turn costs a truncate, not an open, a stat and a close besides.

// retireLater empties and unlocks f, branchID's journal, whose turn is in the database,
// beside the caller. f is held (holdRun) until then. One journal of a branch at most is
// retiring: the branch's next turn waits for it before it locks the journal.
func (s *Store) retireLater(branchID int64, f *os.File) {
	done := make(chan struct{})
	s.runMu.Lock()
	if s.retiring == nil {
		s.retiring = map[int64]chan struct{}{}
	}
	s.retiring[branchID] = done
	s.runMu.Unlock()
	go func() {
		defer func() {
			// only once the file is unlocked (and kept open): a turn beginning here
			// meanwhile waits for done instead of finding the journal still locked
			s.runMu.Lock()
			delete(s.retiring, branchID)
			s.runMu.Unlock()
			close(done)
		}()
		err := f.Truncate(0)
		s.runMu.Lock()
		delete(s.held, f)
		s.runMu.Unlock()
		if err != nil || unlock(f) != nil {
			f.Close() // closing unlocks; the next locker empties what is left (importRun)
			return
		}
		s.keepOpen(branchID, f)
	}()
}

// awaitRetired waits until branchID's journal, if this process is retiring it, is empty
// and unlocked.
func (s *Store) awaitRetired(branchID int64) {
	s.runMu.Lock()
	done := s.retiring[branchID]
	s.runMu.Unlock()
	if done != nil {
		<-done
	}
}

// awaitAllRetired waits until no journal is being retired by this process.
func (s *Store) awaitAllRetired() {
	s.runMu.Lock()
	var all []chan struct{}
	for _, done := range s.retiring {
		all = append(all, done)
	}
	s.runMu.Unlock()
	for _, done := range all {
		<-done
	}
}

// endedHolder reports whether h, the header of a journal another file holds, is a turn
// that has ended: completed (its end record is written: its process commits it), or in
// the database already (its process is retiring the journal); the branch is free a
// moment later.
func (s *Store) endedHolder(ctx context.Context, h *runHeader) bool {
	if h == nil {
		return false
	}
	if h.end != nil {
		return true // completed: its process is committing it (commitlater.go)
	}
	var st string
	err := s.r.QueryRowContext(ctx, "SELECT status FROM turns WHERE id = ?", h.ID).Scan(&st)
	if err != nil { // not stored (sql.ErrNoRows): in flight
		return false
	}
	return st != "running" && st != "interrupted"
}
