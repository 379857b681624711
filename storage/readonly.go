package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	sqlite3 "modernc.org/sqlite/lib"
)

// ErrReadOnly is a write to a database opened read-only (OpenRead on a file or folder
// that cannot be written).
var ErrReadOnly = errors.New("the database is open read-only")

// OpenRead opens an existing database for a command that may only read it: read-write,
// as Open, when the file and its folder can be written; otherwise read-only (ReadOnly
// reports it, ReadOnlyReason says why, and every write fails with ErrReadOnly). A
// read-only mount, folder or file can so be listed, shown and exported, instead of
// failing with SQLite's "unable to open database file (14)".
//
// Read-only, nothing is created beside the file: with no write-ahead log (-wal) to read,
// the database is opened immutable (no locks, no -shm); a -wal that still holds commits
// is read in mode=ro, which needs its -shm to exist already. A schema older than this
// program's cannot be upgraded there, and is refused.
func OpenRead(ctx context.Context, path string) (*Store, error) {
	why := unwritable(path)
	if why == "" {
		return Open(ctx, path)
	}
	return openReadOnly(ctx, path, why)
}

// openReadOnly opens path read-only; why says why it cannot be written.
func openReadOnly(ctx context.Context, path, why string) (*Store, error) {
	if err := prepareFile(path); err != nil {
		return nil, err
	}
	walInfo, walErr := os.Stat(path + "-wal")
	_, shmErr := os.Stat(path + "-shm")
	immutable := walErr != nil || walInfo.Size() == 0
	if !immutable && shmErr != nil {
		return nil, fmt.Errorf("storage: %s is read-only (%s) and its write-ahead log %s-wal holds changes that cannot be read without creating %s-shm; open it once where it can be written: %w",
			path, why, path, path, ErrReadOnly)
	}
	r, err := sql.Open("sqlite", readOnlyDSN(path, immutable))
	if err != nil {
		return nil, fmt.Errorf("storage: open %s read-only: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	s := &Store{path: path, r: newReadDB(r), readOnly: why}
	if err := s.checkReadOnly(ctx); err != nil {
		s.r.Close()
		return nil, err
	}
	return s, nil
}

// ReadOnly reports a store opened read-only.
func (s *Store) ReadOnly() bool { return s.readOnly != "" }

// ReadOnlyReason says why the store is read-only ("" when it is not): the file, its
// folder or the file system cannot be written.
func (s *Store) ReadOnlyReason() string { return s.readOnly }

// readOnlyDSN opens path with SQLite's own read-only URI parameters, which only work in
// a file: URI (the driver drops them from a plain name).
func readOnlyDSN(path string, immutable bool) string {
	q := "mode=ro&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)"
	if immutable {
		q += "&immutable=1"
	}
	return "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path) + "?" + q
}

// checkReadOnly recognises the file as checkAndMigrate does, without writing.
func (s *Store) checkReadOnly(ctx context.Context) error {
	var appID, version int
	row := s.r.QueryRowContext(ctx, `SELECT (SELECT application_id FROM pragma_application_id),
		(SELECT user_version FROM pragma_user_version)`)
	if err := row.Scan(&appID, &version); err != nil {
		if isCode(err, sqlite3.SQLITE_NOTADB) {
			return fmt.Errorf("storage: %s is not a SQLite database (left untouched): %w", s.path, ErrNotDatabase)
		}
		return fmt.Errorf("storage: read header of %s (read-only: %s): %w", s.path, s.readOnly, err)
	}
	switch {
	case appID == 0 && version == 0:
		return fmt.Errorf("storage: %s is empty and read-only (%s): nothing to read: %w", s.path, s.readOnly, ErrNotDatabase)
	case appID != ApplicationID:
		return fmt.Errorf("storage: %s is a SQLite database of another program (application_id %#x, left untouched): %w",
			s.path, appID, ErrNotDatabase)
	case version > len(migrations):
		return fmt.Errorf("storage: %s has schema version %d, this program knows up to %d (left untouched; upgrade sessionbench): %w",
			s.path, version, len(migrations), ErrNewerSchema)
	case version < len(migrations):
		return fmt.Errorf("storage: %s has schema version %d, older than this program's %d, and is read-only (%s), so it cannot be upgraded here; open it once where it can be written: %w",
			s.path, version, len(migrations), s.readOnly, ErrReadOnly)
	}
	return nil
}

// unwritable says why path (an existing database) cannot be opened for writing: the
// file, or its folder (SQLite creates the -wal and -shm files beside it), cannot be
// written, or the file system is read-only. "" when it can, or when path is missing.
func unwritable(path string) string {
	if _, err := os.Stat(path); err != nil {
		return ""
	}
	if err := canWrite(path); err != nil {
		return "the file cannot be written: " + errText(err)
	}
	if err := canWrite(filepath.Dir(path)); err != nil {
		return "its folder cannot be written: " + errText(err)
	}
	return ""
}

func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
