package storage

import (
	"fmt"
	"os"
)

// Deleting a branch or a conversation takes the journal lock of each branch it deletes,
// inside its transaction, as a tip move does (moveTip): a turn beginning takes that lock
// before it reads the branch, so either the turn holds it first and the delete is refused
// as busy, or the delete does and the turn finds the branch busy, then gone. Checking the
// journals before the transaction alone (liveRuns, which also names the turn in flight)
// left a turn that had locked its journal but not written it yet to run on a branch
// deleted under it.

// deleteLocks holds the journals of the branches a delete removes.
type deleteLocks struct {
	s     *Store
	files map[int64]*os.File
}

func (s *Store) deleteLocks() *deleteLocks {
	return &deleteLocks{s: s, files: map[int64]*os.File{}}
}

// take locks the journal of branch id (name); one held elsewhere refuses the delete.
func (l *deleteLocks) take(id int64, name string) error {
	if l.files[id] != nil {
		return nil // an earlier try of the same transaction took it
	}
	j, _, holder, err := l.s.tryJournal(id)
	if err != nil {
		return err
	}
	if j == nil {
		return fmt.Errorf("%w; it was not deleted", runBusyError(name, holder))
	}
	l.files[id] = j
	return nil
}

// release lets the journals go: removed when the delete committed (their branches are
// gone, with any turn a process that died meanwhile left in them), else kept for the
// next tip move.
func (l *deleteLocks) release(deleted bool) {
	for id, j := range l.files {
		if deleted {
			os.Remove(l.s.runPath(id)) // while locked: no turn begins in it
			j.Close()
		} else {
			l.s.leaveOpen(id, j)
		}
	}
	clear(l.files)
}
