package storage

import (
	"context"
	"database/sql"
)

// The few reads a turn needs just before it begins (the branch's tip and agent, the
// tail of its path a windowed agent's session is restored from, the journal header's
// branch and the turns left running on it) run on the writer connection, not on a
// reader. SQLite empties a connection's page cache when it begins a
// read and finds the log changed since its last one, so after every commit a reader
// fetches each page again from the log or the file; the writer made that commit and keeps
// its pages. On this driver the same read costs a third as much there (39 µs against
// 105 µs warm, BenchmarkBeyondModel's later Send), and a Send makes two.
//
// A hot read waits for a write in progress (Warm's, which it makes yield at once, as a
// write does), so it must never run inside a write transaction, which would wait for
// itself: the reads routed into Warm's transaction run there, and a read-only store has
// no writer.

// hotReads is where a read a turn needs just before it begins runs (see above).
func (s *Store) hotReads(ctx context.Context) querier {
	if s.hot == nil {
		return s.r
	}
	if rt := s.r.routed(ctx); rt != nil {
		return hotRoute{s.r, rt}
	}
	return hotDB{s}
}

// hotDB runs reads on the writer connection (hot), making Warm let go of it first.
type hotDB struct{ s *Store }

func (h hotDB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	defer h.s.warm.wantWriter()()
	return h.s.hot.QueryContext(ctx, query, args...)
}

func (h hotDB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	defer h.s.warm.wantWriter()()
	return h.s.hot.QueryRowContext(ctx, query, args...)
}

// hotRoute is a hot read routed into Warm's transaction: it runs there, and Warm prepares
// it on the writer connection afterwards (prepareHot).
type hotRoute struct {
	r  *readDB
	rt *readRoute
}

func (h hotRoute) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	h.rt.noteHot(query)
	return h.r.QueryContext(ctx, query, args...)
}

func (h hotRoute) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	h.rt.noteHot(query)
	return h.r.QueryRowContext(ctx, query, args...)
}

func (rt *readRoute) noteHot(query string) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, q := range rt.hot {
		if q == query {
			return
		}
	}
	rt.hot = append(rt.hot, query)
}

// prepareHot prepares the hot reads Warm's routed reads ran on the writer connection.
func (s *Store) prepareHot(ctx context.Context, rt *readRoute) {
	if s.hot != nil {
		s.hot.prepare(ctx, rt.ran(true))
	}
}
