package storage

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync/atomic"

	"modernc.org/sqlite"
)

// Parsing SQL is most of what a statement costs SQLite on the short reads and writes of a
// turn, so the store keeps its statements prepared (readDB, writeCache) and Warm prepares
// those of a turn before the first one. To show that nothing on a turn's path is parsed
// again, each pool's connections count the statements SQLite compiles on them: every
// prepare, and every statement run unprepared. The driver runs BEGIN, COMMIT and
// ROLLBACK as text, uncounted.

// sqliteConn is what database/sql uses of the driver's connection.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// countingConnector opens the driver's connections to dsn, counting what they parse in n.
type countingConnector struct {
	driver.Connector
	n *atomic.Int64
}

// openCounting opens a pool on dsn whose connections count their parses in n.
func openCounting(dsn string, n *atomic.Int64) (*sql.DB, error) {
	c, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(countingConnector{Connector: c, n: n}), nil
}

func (c countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sc, ok := conn.(sqliteConn)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("storage: the SQLite driver's connection (%T) lacks what database/sql uses", conn)
	}
	return &countingConn{sqliteConn: sc, n: c.n}, nil
}

// countingConn is a driver connection counting the statements it compiles.
type countingConn struct {
	sqliteConn
	n *atomic.Int64
}

// driverConn is the driver's own connection under dc (a countingConn's).
func driverConn(dc any) any {
	if c, ok := dc.(*countingConn); ok {
		return c.sqliteConn
	}
	return dc
}

func (c *countingConn) Prepare(query string) (driver.Stmt, error) {
	c.n.Add(1)
	return c.sqliteConn.Prepare(query)
}

func (c *countingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	c.n.Add(1)
	return c.sqliteConn.PrepareContext(ctx, query)
}

func (c *countingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.n.Add(1)
	return c.sqliteConn.ExecContext(ctx, query, args)
}

func (c *countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.n.Add(1)
	return c.sqliteConn.QueryContext(ctx, query, args)
}

// Parses is how many statements SQLite has parsed on the store's writer connection and
// on its readers since Open (see above).
func (s *Store) Parses() (writer, reader int64) {
	s.pending.wait(context.Background())
	return s.wParses.Load(), s.rParses.Load()
}

// ListsReadBack is how many stored requests and histories the store's commits have read
// back, to learn what a new one shares with them: the costly lookup that seeding a
// call (BranchSink.PrepareCall) and warming a branch (WarmBranch) spare a commit.
func (s *Store) ListsReadBack() int64 {
	s.pending.wait(context.Background())
	if s.wc == nil {
		return 0
	}
	return s.wc.readBack.Load()
}

// Reads is how many read statements the store has run since Open: on its readers
// (routed into a write transaction included), and on the writer connection (hot reads,
// hotread.go). On this driver each costs tens of microseconds, so a Send's reads are
// counted (ui/sessions' tests).
func (s *Store) Reads() (readers, writer int64) {
	s.pending.wait(context.Background())
	if s.r != nil {
		readers = s.r.ran.Load()
	}
	if s.hot != nil {
		writer = s.hot.ran.Load()
	}
	return readers, writer
}
