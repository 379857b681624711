package storage

import (
	"context"
	"database/sql"
	"sync"
)

// readDB is the readers' pool whose statements SQLite parses once per connection and
// process instead of on every query: a branch's path is one long recursive statement,
// and parsing it cost more than running it on the short windows a turn reads (most of
// what the first turn of a process read beyond the next one). Every read statement is
// a constant text, so the set stays small; it is bounded all the same, and beyond the
// bound (or when preparing fails) a statement runs unprepared, as database/sql runs it.
// A prepared statement holds no read transaction between uses: closing its rows resets
// it, so readers still see every commit.
type readDB struct {
	*sql.DB
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

// maxReadStmts bounds the prepared read statements (the store has a few dozen).
const maxReadStmts = 256

func newReadDB(db *sql.DB) *readDB { return &readDB{DB: db, stmts: map[string]*sql.Stmt{}} }

func (r *readDB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := r.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return r.DB.QueryContext(ctx, query, args...)
}

func (r *readDB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := r.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return r.DB.QueryRowContext(ctx, query, args...)
}

// stmt is query prepared (database/sql prepares it again on each connection of the pool
// the first time it runs there), or nil to run it unprepared.
func (r *readDB) stmt(ctx context.Context, query string) *sql.Stmt {
	r.mu.Lock()
	st, ok := r.stmts[query]
	full := len(r.stmts) >= maxReadStmts
	r.mu.Unlock()
	if ok || full {
		return st
	}
	st, err := r.DB.PrepareContext(ctx, query)
	if err != nil {
		return nil // it runs unprepared and reports its own error
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.stmts[query]; old != nil {
		st.Close() // prepared meanwhile by another reader
		return old
	}
	r.stmts[query] = st
	return st
}

// Close closes the prepared statements and the pool.
func (r *readDB) Close() error {
	r.mu.Lock()
	for _, st := range r.stmts {
		st.Close()
	}
	clear(r.stmts)
	r.mu.Unlock()
	return r.DB.Close()
}
