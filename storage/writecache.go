package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// writeCache spares a long session's writes the work that repeats. Every request repeats
// the conversation so far, so almost every message of a call's request, and the list
// nodes holding them in order, are already stored: the cache remembers which (by text,
// and by parent node, role and content), so a call costs its new messages instead of a
// SHA-256 and a lookup for every message. It also keeps the write statements prepared,
// so SQLite parses each once instead of on every execution.
//
// Writes are serialised through the one writer connection, and only a transaction
// running on it touches the cache; mu is held from begin to end (the connection goes
// back to the pool at commit, just before end). What a transaction adds is staged
// and kept only when it commits (an id from a rolled-back insert would name nothing, or
// later another row). Another connection's commit (another process: it may have swept
// unreferenced contents away) empties the cache at the next write: SQLite's data_version
// says when.
type writeCache struct {
	mu          sync.Mutex
	dataVersion int64
	// resets counts the times begin emptied the cache: what was read outside it (a
	// seeded call's stored prefix, seedPath) is only put in while it has not been since
	// the read began, for a reset may mean rows are gone.
	resets   atomic.Int64
	sweeps   int64 // the sweeps counter when the cache was last known good
	contents map[string]contentRef
	nodes    map[nodeKey]nodeRef
	bytes    int // of the texts contents references
	// runs holds, by list key (a predictor's requests or histories), the nodes of the
	// last run stored, oldest first (each the parent of the next): the next list under
	// the key may continue it (see putList).
	runs map[string]nodeRun
	// baseSets holds, by kind, the recent texts stored whole that a new text of the kind
	// may be stored as a delta against (delta.go).
	baseSets map[string][]baseRef
	// paths holds, by list key, the last list stored under it as a path from the root:
	// the next list under the key repeats most of it, which is found by comparing the
	// elements in order (cheap: they are mostly the very same strings) instead of
	// looking each one up.
	paths map[string]listPath
	// entries holds, by list key, the JSON of the entries of the last history stored under
	// it, with the values it was made from (entryJSON): an entry passed again unchanged is
	// not rendered again (historyItems).
	entries map[string][]entryJSON
	// staged holds what the running transaction added.
	stContents map[string]contentRef
	stNodes    map[nodeKey]nodeRef
	stRuns     map[string]nodeRun
	stBases    map[string][]baseRef
	stPaths    map[string]listPath

	// stmts and pending are also used after a transaction, by prepare: stmtMu guards them.
	stmtMu  sync.Mutex
	stmts   map[string]*sql.Stmt
	pending map[string]bool // statements to prepare once the connection is free
	// parsed counts the statements prepared for one transaction only (not yet for good).
	parsed atomic.Int64
	// ran counts the statements run in write transactions (a turn's cost is mostly
	// theirs: 10-100 µs each on this driver).
	ran atomic.Int64
	// readBack counts the stored lists read back to learn the prefix a list shares with
	// them (cachePath): the one costly lookup, which seeding and warming spare a commit.
	readBack atomic.Int64
}

type contentRef struct {
	id   int64
	hash hash16
}

// nodeKey names a list node by what it holds: the list before it, its role and content.
type nodeKey struct {
	parent  int64 // 0 for a list's first element
	role    string
	content int64
}

type nodeRef struct {
	id      int64
	hash    hash16 // the chain hash of the path ending here
	depth   int    // elements on that path
	role    string
	content int64
}

// sweeps counts the sweeps of unreferenced contents and list nodes this process began
// (sweepContent): ids a cache holds may be gone after one, and this connection's own
// writes do not move data_version.
var sweeps atomic.Int64

// maxCachedTextBytes bounds the message texts the cache keeps alive.
const maxCachedTextBytes = 64 << 20

func newWriteCache() *writeCache {
	return &writeCache{dataVersion: -1, stmts: map[string]*sql.Stmt{}, pending: map[string]bool{}}
}

// begin starts a transaction's use of the cache (the transaction holds the writer
// connection from here to commit or rollback).
func (c *writeCache) begin(ctx context.Context, tx *sql.Tx) error {
	c.mu.Lock()
	var v int64
	if err := (&wtx{Tx: tx, wc: c}).QueryRowContext(ctx, "PRAGMA data_version").Scan(&v); err != nil { // prepared once
		c.mu.Unlock()
		return fmt.Errorf("storage: data version: %w", err)
	}
	if sw := sweeps.Load(); v != c.dataVersion || sw != c.sweeps || c.contents == nil || c.bytes > maxCachedTextBytes {
		c.contents, c.nodes, c.runs, c.bytes = map[string]contentRef{}, map[nodeKey]nodeRef{}, map[string]nodeRun{}, 0
		c.baseSets, c.paths = map[string][]baseRef{}, map[string]listPath{}
		c.dataVersion, c.sweeps = v, sw
		c.resets.Add(1)
	}
	c.stContents, c.stNodes, c.stRuns = map[string]contentRef{}, map[nodeKey]nodeRef{}, map[string]nodeRun{}
	c.stBases, c.stPaths = map[string][]baseRef{}, map[string]listPath{}
	if c.entries == nil {
		c.entries = map[string][]entryJSON{}
	}
	return nil
}

// end closes a transaction's use of the cache, keeping what it added when it committed.
func (c *writeCache) end(committed bool) {
	if committed {
		for k, v := range c.stContents {
			c.contents[k] = v
			c.bytes += len(k)
		}
		for k, v := range c.stNodes {
			c.nodes[k] = v
		}
		for k, v := range c.stRuns {
			c.runs[k] = v
		}
		for k, v := range c.stBases {
			c.baseSets[k] = v
		}
		for k, v := range c.stPaths {
			c.paths[k] = v
		}
	}
	c.stContents, c.stNodes, c.stRuns, c.stBases, c.stPaths = nil, nil, nil, nil, nil
	c.mu.Unlock()
}

func (c *writeCache) content(body string) (contentRef, bool) {
	if r, ok := c.contents[body]; ok {
		return r, true
	}
	r, ok := c.stContents[body]
	return r, ok
}

// listPath is a list stored as a path from the root: its elements and the node ending
// each prefix (nodes[i] ends the first i+1 elements).
type listPath struct {
	l     elems
	nodes nodePath
}

func (c *writeCache) path(key string) listPath {
	if p, ok := c.stPaths[key]; ok {
		return p
	}
	return c.paths[key]
}

func (c *writeCache) run(key string) nodeRun {
	if r, ok := c.stRuns[key]; ok {
		return r
	}
	return c.runs[key]
}

func (c *writeCache) node(k nodeKey) (nodeRef, bool) {
	if r, ok := c.nodes[k]; ok {
		return r, true
	}
	r, ok := c.stNodes[k]
	return r, ok
}

// wtx is a write transaction (Store.write) whose statements SQLite parses once per
// process: each runs through the writer connection's prepared statement of its text
// (writeCache.stmt). A statement that is not prepared yet (it is once the transaction
// has ended: the connection is the transaction's until then) is prepared for the
// transaction alone, so the transaction parses it once however often it runs it.
// Migrations run before there is a cache, unprepared.
type wtx struct {
	*sql.Tx
	wc   *writeCache
	once map[string]*sql.Stmt // prepared for this transaction (closed with it)
	// fresh holds the calls of the turns inserted in this transaction (insertTurnAt),
	// by turn id: a new turn has no calls but those stored since, so storing its calls
	// needs no query to find its next sequence number or whether a call is there.
	fresh map[int64]*freshCalls
}

// freshCalls are the calls stored so far of a turn inserted in the transaction.
type freshCalls struct {
	seq  int             // the last sequence number given
	keys map[string]bool // call keys stored
}

// newFresh notes turn id as inserted in t, with no calls yet.
func newFresh(t *wtx, id int64) {
	if t.fresh == nil {
		t.fresh = map[int64]*freshCalls{}
	}
	t.fresh[id] = &freshCalls{keys: map[string]bool{}}
}

func (t *wtx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := t.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, query, args...)
}

func (t *wtx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := t.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return t.Tx.QueryContext(ctx, query, args...)
}

func (t *wtx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := t.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return t.Tx.QueryRowContext(ctx, query, args...)
}

// stmt is query prepared for t: the connection's statement, else one prepared for t
// alone; nil without a cache (or when preparing fails: it runs unprepared and reports
// its own error). Every statement t runs passes here once, so it is counted here (ran).
func (t *wtx) stmt(ctx context.Context, query string) *sql.Stmt {
	if t.wc == nil {
		return nil
	}
	t.wc.ran.Add(1)
	if st := t.wc.stmt(ctx, t.Tx, query); st != nil {
		return st
	}
	if st := t.once[query]; st != nil {
		return st
	}
	t.wc.parsed.Add(1)
	st, err := t.Tx.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	if t.once == nil {
		t.once = map[string]*sql.Stmt{}
	}
	t.once[query] = st
	return st
}

// stmt is the prepared form of query for tx, or nil until it is prepared (after the
// transaction, by prepare; the caller prepares it for the transaction meanwhile).
func (c *writeCache) stmt(ctx context.Context, tx *sql.Tx, query string) *sql.Stmt {
	c.stmtMu.Lock()
	st, ok := c.stmts[query]
	if !ok {
		c.pending[query] = true
	}
	c.stmtMu.Unlock()
	if !ok {
		return nil
	}
	return tx.StmtContext(ctx, st)
}

// prepare prepares the statements asked for while the connection was busy.
func (c *writeCache) prepare(ctx context.Context, db *sql.DB) {
	c.stmtMu.Lock()
	var todo []string
	for q := range c.pending {
		todo = append(todo, q)
	}
	clear(c.pending)
	c.stmtMu.Unlock()
	for i, q := range todo {
		st, err := db.PrepareContext(ctx, q)
		if ctx.Err() != nil {
			// given up (Warm yields the connection to a write): the rest wait for the
			// next write to end
			c.stmtMu.Lock()
			for _, q := range todo[i:] {
				c.pending[q] = true
			}
			c.stmtMu.Unlock()
			if err == nil {
				st.Close()
			}
			return
		}
		if err != nil {
			continue // it is prepared for each transaction, as before
		}
		c.stmtMu.Lock()
		if old := c.stmts[q]; old != nil {
			st.Close() // prepared meanwhile by another writer
		} else {
			c.stmts[q] = st
		}
		c.stmtMu.Unlock()
	}
}

// pendingCount is how many statements wait to be prepared.
func (c *writeCache) pendingCount() int {
	c.stmtMu.Lock()
	defer c.stmtMu.Unlock()
	return len(c.pending)
}

// forgetStaged forgets what the running transaction added so far (Warm: its next turn
// finds the rows in the database, as a new process's first turn does).
func (c *writeCache) forgetStaged() {
	c.stContents, c.stNodes, c.stRuns = map[string]contentRef{}, map[nodeKey]nodeRef{}, map[string]nodeRun{}
	c.stBases, c.stPaths = map[string][]baseRef{}, map[string]listPath{}
}

// forget drops the history entries rendered under key (caller holds mu).
func (c *writeCache) forget(key string) { delete(c.entries, key) }

func (c *writeCache) close() {
	c.stmtMu.Lock()
	defer c.stmtMu.Unlock()
	for _, st := range c.stmts {
		st.Close()
	}
}

// lookupID scans a one-column id query, reporting whether a row was found.
func lookupID(row *sql.Row) (int64, bool, error) {
	var id int64
	err := row.Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return id, err == nil, err
}
