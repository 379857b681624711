package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// ApplicationID marks a file as a sessionbench database (PRAGMA application_id, "SBNC").
const ApplicationID = 0x53424E43

// Errors callers may test with errors.Is.
var (
	ErrNotFound      = errors.New("not found")
	ErrNotDatabase   = errors.New("not a sessionbench database")
	ErrNewerSchema   = errors.New("database schema is newer than this program")
	ErrInvalid       = errors.New("invalid request")
	ErrConflict      = errors.New("conflict")
	ErrClosedSession = errors.New("conversation is closed")
)

// Store is an open database. It is safe for concurrent use.
type Store struct {
	path string
	w    *sql.DB // the one writer connection: every write is serialised through it
	r    *readDB // readers; WAL lets them run beside the writer
	hot  *readDB // the reads right before a turn, on the writer connection (hotread.go)

	// imports is held shared by importDeadOf while it imports a journal it found dead,
	// and by Hold from its lock through the import of what the journal held (keepLeft);
	// exclusively by liveRuns: a listing never meets a turn half-imported (its journal
	// locked by this process, its row not stored yet), which it would take for one
	// running, as a `run` restoring its branch ahead (importing) while it lists the turns
	// left pending did.
	imports sync.RWMutex

	runMu sync.Mutex
	held  map[*os.File]bool  // journals of the turns in flight here, locked (journal.go)
	idle  map[int64]*os.File // by branch: journals the last turn or tip move left open, unlocked (undo.go)
	// retiring holds, by branch, the journals being emptied beside their committed turn's
	// caller (retire.go), closed when done.
	retiring map[int64]chan struct{}

	readOnly string      // why the store is read-only (OpenRead); "" when it can write
	wc       *writeCache // used only inside a write transaction (see writeCache)

	// commits counts the transactions SQLite committed on the writer connection (its
	// commit hook), durable the syncs of the log that made them durable (syncer.go).
	commits, durable atomic.Int64
	sync             *syncer // nil for a read-only store
	// wParses and rParses count the statements SQLite parsed on the writer connection
	// and on the readers (Parses).
	wParses, rParses atomic.Int64

	warm warmState // Warm's (warm.go)
	// pending counts the committed turns whose transactions run beside their callers,
	// late keeps those transactions' failures until reported (commitlater.go).
	pending pendingCommits
	late    lateErrors
	// packs are the path packs waiting to be written (pathvalues.go).
	packs packQueue
	// branchIDs holds, by conversation and branch name, the branch id the last head read
	// found (tip.go): a new sink's first turn locks that branch's journal without looking
	// the branch up, and its header, read under the lock, finds out when the name has
	// come to name another branch since (BeginTurn).
	branchIDs sync.Map
}

// dsn builds the connection string. The settings, and why:
//   - busy_timeout(10000): a second process holding the write lock makes us wait up to 10 s
//     instead of failing with SQLITE_BUSY; write() retries beyond that.
//   - foreign_keys(1): turns, branches and calls reference each other; SQLite leaves the
//     checks off per connection unless asked.
//   - synchronous(NORMAL): in WAL mode a commit returns once it is in the log, which a
//     killed process cannot lose; the store's syncer fsyncs the log right after, off the
//     caller's path, so it survives a crash of the machine too (syncer.go).
//   - _txlock=immediate (writer only): a write transaction takes the write lock at BEGIN, so
//     two processes never deadlock upgrading read locks (which busy_timeout cannot resolve).
//
// journal_mode=WAL is persistent in the file and set once in Open, after the file has been
// recognised, so that opening a foreign file never converts it.
func dsn(path string, writer bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	if writer {
		q.Set("_txlock", "immediate")
	} else {
		q.Add("_pragma", "query_only(1)")
	}
	return path + "?" + q.Encode()
}

// Open opens or creates the database at path. A new file is created with mode 0600 (and
// its directory with 0700). A file that is not a sessionbench database, or whose schema is
// newer than this program knows, is refused and left untouched. An older schema is copied
// to path.bak-v<N> and migrated forward.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, fmt.Errorf("storage: empty database path: %w", ErrInvalid)
	}
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("storage: database path %q may not contain '?' or '#': %w", path, ErrInvalid)
	}
	if err := prepareFile(path); err != nil {
		return nil, err
	}
	s := &Store{path: path}
	w, err := openCounting(dsn(path, true), &s.wParses)
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	s.w = w
	s.sync = newSyncer(path+"-wal", &s.durable)
	if err := s.checkAndMigrate(ctx); err != nil {
		w.Close()
		return nil, err
	}
	r, err := openCounting(dsn(path, false), &s.rParses)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("storage: open %s for reading: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	s.r = newReadDB(r)
	s.hot = newReadDB(w)
	s.r.pending, s.hot.pending = &s.pending, &s.pending
	s.wc = newWriteCache()
	if err := s.countCommits(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// countCommits registers SQLite's commit hook on the writer connection (the only one
// there is: every write goes through it), so Commits counts what SQLite committed.
func (s *Store) countCommits(ctx context.Context) error {
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return fmt.Errorf("storage: open %s: %w", s.path, err)
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		h, ok := driverConn(dc).(sqlite.HookRegisterer)
		if !ok {
			return fmt.Errorf("storage: the SQLite driver has no commit hook (%T)", dc)
		}
		h.RegisterCommitHook(func() int32 { s.commits.Add(1); return 0 })
		return nil
	})
}

// Commits is the number of write transactions committed since Open, and how many times
// the syncer fsynced the log after commits that asked for it (each sync covers every
// commit before it; Sync waits for them).
func (s *Store) Commits() (all, durable int64) {
	s.pending.wait(context.Background()) // a committed turn's transaction counts
	return s.commits.Load(), s.durable.Load()
}

// prepareFile creates a missing database file with mode 0600, and refuses an existing file
// that does not start with the SQLite header, before SQLite ever sees it.
func prepareFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return fmt.Errorf("storage: create directory for %s: %w", path, err)
		}
		nf, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("storage: create %s: %w", path, err)
		}
		if nf != nil {
			return nf.Close()
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("storage: open %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("storage: stat %s: %w", path, err)
	}
	if st.IsDir() {
		return fmt.Errorf("storage: %s is a directory: %w", path, ErrNotDatabase)
	}
	if st.Size() == 0 {
		return nil // an empty file is an empty SQLite database; it is initialised
	}
	head := make([]byte, 16)
	if _, err := io.ReadFull(f, head); err != nil || string(head) != "SQLite format 3\x00" {
		return fmt.Errorf("storage: %s is not a SQLite file (left untouched): %w", path, ErrNotDatabase)
	}
	return nil
}

// checkAndMigrate recognises the file and brings its schema to the latest version.
func (s *Store) checkAndMigrate(ctx context.Context) error {
	var appID, version, objects int
	row := s.w.QueryRowContext(ctx, `SELECT (SELECT application_id FROM pragma_application_id),
		(SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM sqlite_master)`)
	if err := row.Scan(&appID, &version, &objects); err != nil {
		if isCode(err, sqlite3.SQLITE_NOTADB) {
			return fmt.Errorf("storage: %s is not a SQLite database (left untouched): %w", s.path, ErrNotDatabase)
		}
		return fmt.Errorf("storage: read header of %s: %w", s.path, err)
	}
	switch {
	case appID == 0 && version == 0 && objects == 0:
		// a new or empty file: ours to initialise
	case appID != ApplicationID:
		return fmt.Errorf("storage: %s is a SQLite database of another program (application_id %#x, left untouched): %w",
			s.path, appID, ErrNotDatabase)
	case version > len(migrations):
		return fmt.Errorf("storage: %s has schema version %d, this program knows up to %d (left untouched; upgrade sessionbench): %w",
			s.path, version, len(migrations), ErrNewerSchema)
	}
	if _, err := s.w.ExecContext(ctx, "PRAGMA journal_mode=WAL"); err != nil {
		return fmt.Errorf("storage: enable WAL on %s: %w", s.path, err)
	}
	if version == len(migrations) {
		return nil
	}
	if version > 0 {
		if err := s.backup(ctx, version); err != nil {
			return err
		}
	}
	if err := s.migrate(ctx, version); err != nil {
		return err
	}
	s.sync.request() // the migrated schema, durable as any commit
	return nil
}

// backup copies the database (consistently, via VACUUM INTO) before a migration touches it.
func (s *Store) backup(ctx context.Context, version int) error {
	dst := fmt.Sprintf("%s.bak-v%d-%s", s.path, version, time.Now().UTC().Format("20060102T150405Z"))
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("storage: backup %s already exists; move it away and retry: %w", dst, ErrConflict)
	}
	if _, err := s.w.ExecContext(ctx, "VACUUM INTO ?", dst); err != nil {
		return fmt.Errorf("storage: back up %s to %s before migrating: %w", s.path, dst, err)
	}
	if err := os.Chmod(dst, 0o600); err != nil {
		return fmt.Errorf("storage: restrict backup %s: %w", dst, err)
	}
	return nil
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// holdRun and releaseRun track the journals this store holds locked.
func (s *Store) holdRun(f *os.File) {
	s.runMu.Lock()
	if s.held == nil {
		s.held = map[*os.File]bool{}
	}
	s.held[f] = true
	s.runMu.Unlock()
}

func (s *Store) releaseRun(f *os.File) {
	s.runMu.Lock()
	delete(s.held, f)
	s.runMu.Unlock()
}

// Close closes the database. Turns still in flight are let go as a dying process would
// let them go: kept as interrupted by the next reader.
func (s *Store) Close() error {
	s.warm.close()
	s.pending.wait(context.Background()) // the committed turns' transactions (commitlater.go)
	s.awaitAllRetired()
	s.runMu.Lock()
	for f := range s.held {
		f.Close()
	}
	for _, f := range s.idle {
		f.Close()
	}
	s.held, s.idle = nil, nil
	s.runMu.Unlock()
	// Journals stay while the store is open (making them costs each turn a create and a
	// remove); once it is closed, nothing is left beside the database but turns in flight.
	if s.readOnly == "" {
		s.sweepJournals()
	}
	errs := []error{s.sync.wait(), lateError(s.late.take(0))} // every commit durable before the store closes
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	if s.w != nil {
		if s.wc != nil {
			s.wc.close()
		}
		if s.hot != nil {
			s.hot.closeStmts()
		}
		errs = append(errs, s.w.Close())
	}
	return errors.Join(errs...)
}

// IntegrityCheck runs PRAGMA integrity_check and returns nil when it reports "ok".
func (s *Store) IntegrityCheck(ctx context.Context) error {
	rows, err := s.r.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return fmt.Errorf("storage: integrity_check: %w", err)
	}
	defer rows.Close()
	var msgs []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			return fmt.Errorf("storage: integrity_check: %w", err)
		}
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("storage: integrity_check: %w", err)
	}
	if len(msgs) == 1 && msgs[0] == "ok" {
		return nil
	}
	return fmt.Errorf("storage: integrity_check of %s: %s", s.path, strings.Join(msgs, "; "))
}

// write runs fn in one IMMEDIATE transaction on the writer connection. If another process
// keeps the database locked past busy_timeout, the whole transaction is retried with
// backoff, so SQLITE_BUSY does not reach the caller while the other side makes progress.
// fn must only touch the database (it may run more than once). When write returns the
// commit is in the log (a killed process loses nothing), and a sync of the log is under
// way (syncer.go): durable against a crash of the machine a moment later.
func (s *Store) write(ctx context.Context, fn func(tx *wtx) error) error {
	return s.writeWith(ctx, false, fn)
}

// writeLight is write whose commit asks for no sync of its own: it survives the process
// being killed (it is in the write-ahead log, which the OS has) and becomes durable with
// the next sync; only a crash of the machine in between can lose it, leaving the
// database as it was before (the log is checksummed). Small bookkeeping writes go this
// way (reserving turn ids, superseding turns).
func (s *Store) writeLight(ctx context.Context, fn func(tx *wtx) error) error {
	return s.writeWith(ctx, true, fn)
}

func (s *Store) writeWith(ctx context.Context, light bool, fn func(tx *wtx) error) error {
	if s.readOnly != "" {
		return fmt.Errorf("storage: %s: %s; nothing was changed: %w", s.path, s.readOnly, ErrReadOnly)
	}
	if err := s.sync.failed(); err != nil {
		return fmt.Errorf("%w; nothing was changed", err)
	}
	// after the committed turns' transactions (commitlater.go): a write follows them
	if err := s.pending.wait(ctx); err != nil {
		return err
	}
	defer s.warm.wantWriter()()
	backoff := 5 * time.Millisecond
	for attempt := 0; ; attempt++ {
		err := s.writeOnce(ctx, light, fn)
		if err == nil && s.wc != nil {
			s.wc.prepare(ctx, s.w) // the connection is free again
		}
		if err == nil || !isBusy(err) || attempt >= 20 {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		if backoff < time.Second {
			backoff *= 2
		}
	}
}

func (s *Store) writeOnce(ctx context.Context, light bool, fn func(tx *wtx) error) (err error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("storage: begin: %w", err)
	}
	if s.wc != nil {
		if err := s.wc.begin(ctx, tx); err != nil {
			tx.Rollback()
			return err
		}
	}
	if err := fn(&wtx{Tx: tx, wc: s.wc}); err != nil {
		tx.Rollback()
		if s.wc != nil {
			s.wc.end(false)
		}
		return err
	}
	if err := tx.Commit(); err != nil {
		if s.wc != nil {
			s.wc.end(false)
		}
		return fmt.Errorf("storage: commit: %w", err)
	}
	if !light {
		s.sync.request()
	}
	if s.wc != nil {
		s.wc.end(true)
	}
	return nil
}

func isBusy(err error) bool {
	return isCode(err, sqlite3.SQLITE_BUSY) || isCode(err, sqlite3.SQLITE_LOCKED)
}

func isCode(err error, code int) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == code
}

// timeFormat is RFC 3339 in UTC with fixed-width nanoseconds, so stored timestamps sort
// as text and round-trip exactly.
const timeFormat = "2006-01-02T15:04:05.000000000Z07:00"

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeFormat)
}

func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

func now() time.Time { return time.Now().UTC() }
