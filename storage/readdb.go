package storage

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
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
	// routes counts the reads routed into a transaction (route) at the moment: reads
	// look for a route in their context only then.
	routes atomic.Int32
	// ran counts the read statements run (Store.Reads).
	ran atomic.Int64
	// pending are the store's committed turns whose transactions are still to run
	// (commitlater.go), which a read waits for; nil for a read-only store.
	pending *pendingCommits
}

// maxReadStmts bounds the prepared read statements (the store has a few dozen).
const maxReadStmts = 256

func newReadDB(db *sql.DB) *readDB { return &readDB{DB: db, stmts: map[string]*sql.Stmt{}} }

func (r *readDB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	r.ran.Add(1)
	rt := r.routed(ctx)
	if rt == nil && r.pending != nil {
		if err := r.pending.wait(ctx); err != nil {
			return nil, err
		}
	}
	if rt != nil {
		if st := rt.stmt(ctx, query); st != nil {
			return st.QueryContext(ctx, args...)
		}
		return rt.tx.QueryContext(ctx, query, args...) // reports why it could not be prepared
	}
	if st := r.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return r.DB.QueryContext(ctx, query, args...)
}

func (r *readDB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	r.ran.Add(1)
	rt := r.routed(ctx)
	if rt == nil && r.pending != nil {
		r.pending.wait(ctx) // ended by ctx: the query says so
	}
	if rt != nil {
		if st := rt.stmt(ctx, query); st != nil {
			return st.QueryRowContext(ctx, args...)
		}
		return rt.tx.QueryRowContext(ctx, query, args...) // reports why it could not be prepared
	}
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
	r.closeStmts()
	return r.DB.Close()
}

// closeStmts closes the prepared statements, leaving the pool open (the writer's, for
// hot reads: the store closes it).
func (r *readDB) closeStmts() {
	r.mu.Lock()
	for _, st := range r.stmts {
		st.Close()
	}
	clear(r.stmts)
	r.mu.Unlock()
}

// readRoute runs the reads of one context in a write transaction instead (Warm: they
// see what it wrote and the readers do not), noting which statements they ran, to be
// prepared on the readers afterwards (prepare).
type readRoute struct {
	tx    *sql.Tx
	mu    sync.Mutex
	stmts map[string]*sql.Stmt // prepared in tx, closed with it
	texts []string             // in the order first run
	hot   []string             // those run as hot reads (hotread.go)
}

// ran is the statements run in the route, all of them or only the hot reads.
func (rt *readRoute) ran(hot bool) []string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if hot {
		return rt.hot
	}
	return rt.texts
}

type routeKey struct{}

// route makes the reads under the returned context run in tx (unprepared: tx is not
// theirs to keep statements on) until end is called.
func (r *readDB) route(ctx context.Context, tx *sql.Tx) (_ context.Context, rt *readRoute, end func()) {
	rt = &readRoute{tx: tx, stmts: map[string]*sql.Stmt{}}
	r.routes.Add(1)
	return context.WithValue(ctx, routeKey{}, rt), rt, func() { r.routes.Add(-1) }
}

func (r *readDB) routed(ctx context.Context) *readRoute {
	if r.routes.Load() == 0 {
		return nil
	}
	rt, _ := ctx.Value(routeKey{}).(*readRoute)
	return rt
}

// stmt is query prepared in the route's transaction, or nil when that fails.
func (rt *readRoute) stmt(ctx context.Context, query string) *sql.Stmt {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if st := rt.stmts[query]; st != nil {
		return st
	}
	st, err := rt.tx.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	rt.stmts[query] = st
	rt.texts = append(rt.texts, query)
	return st
}

// prepare prepares texts (the statements routed reads ran: readRoute.ran), one after
// the other, so they are on the connection the next reads take (the pool hands out the
// connection used last).
func (r *readDB) prepare(ctx context.Context, texts []string) {
	for _, q := range texts {
		if ctx.Err() != nil {
			return
		}
		r.stmt(ctx, q)
	}
}
