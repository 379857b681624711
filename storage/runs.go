package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// snapshotCall copies c's record as it is now, its children's too: the engine may drop
// a call's request once it has been recorded (record mode "calls").
func snapshotCall(c *trace.Call) *trace.Call {
	cc := *c
	if len(c.Children) > 0 {
		cc.Children = make([]*trace.Call, len(c.Children))
		for i, ch := range c.Children {
			cc.Children[i] = snapshotCall(ch)
		}
	}
	return &cc
}

// turnRow is a turn row as inserted: where it goes and what it began with.
type turnRow struct {
	id, parent, branchID, retryOf int64 // parent 0: the first turn of its branch
	conv, inputs                  string
	started                       time.Time
	owner                         *Owner // nil: ownerless
}

// insertTurnAt inserts a running turn after r.parent.
func insertTurnAt(ctx context.Context, tx *wtx, r turnRow) error {
	parent, jump, depth, jumpDepth, err := placeAfter(ctx, tx, r.parent)
	if err != nil {
		return err
	}
	pid, host, oid, lease := ownerValues(r.owner)
	_, err = tx.ExecContext(ctx, `INSERT INTO turns(id, conv_id, parent_id, jump_id, jump_depth, depth, branch_id, status, inputs,
			input_preview, started_at, owner_pid, owner_host, owner_id, lease_until, retry_of)
		VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?)`, r.id, r.conv, parent, jump, jumpDepth, depth, r.branchID, r.inputs,
		preview(sql.NullString{String: r.inputs, Valid: true}), fmtTime(r.started), pid, host, oid, lease,
		sql.NullInt64{Int64: r.retryOf, Valid: r.retryOf != 0})
	if err != nil {
		return fmt.Errorf("storage: store turn %d: %w", r.id, err)
	}
	newFresh(tx, r.id)
	return nil
}

// placeAfter is the place of a new turn after turn parent (0: a branch's first turn):
// its row's parent_id, jump_id, depth and jump_depth.
func placeAfter(ctx context.Context, tx *wtx, parent int64) (parentID, jump sql.NullInt64, depth, jumpDepth int, err error) {
	if parent == 0 {
		return
	}
	p, j, jd, err := childPos(ctx, tx, parent)
	if err != nil {
		return
	}
	return sql.NullInt64{Int64: p.id, Valid: true}, sql.NullInt64{Int64: j, Valid: true}, p.depth + 1, jd, nil
}

// ownerValues are o's owner columns (scanOwner's order); all NULL for no owner.
func ownerValues(o *Owner) (pid sql.NullInt64, host, id, lease sql.NullString) {
	if o == nil {
		return
	}
	return sql.NullInt64{Int64: int64(o.PID), Valid: true}, sql.NullString{String: o.Host, Valid: true},
		sql.NullString{String: o.id, Valid: true}, sql.NullString{String: fmtTime(o.LeaseUntil), Valid: true}
}

// storeRun puts the turn a journal describes into tx, 'running' and owned by o (nil:
// ownerless, for a turn ending in the same transaction), with the calls it recorded.
func storeRun(ctx context.Context, wc *writeCache, tx *wtx, h *runHeader, calls []runCall, o *Owner) error {
	if h.InPlace {
		pid, host, oid, lease := ownerValues(o)
		res, err := tx.ExecContext(ctx, `UPDATE turns SET status = 'running', error = NULL, ended_at = NULL, inputs = ?, input_preview = ?,
			owner_pid = ?, owner_host = ?, owner_id = ?, lease_until = ? WHERE id = ? AND status IN ('running', 'interrupted')`,
			h.Inputs, preview(sql.NullString{String: h.Inputs, Valid: true}), pid, host, oid, lease, h.ID)
		if err != nil {
			return fmt.Errorf("storage: resume turn %d: %w", h.ID, err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("storage: turn %d is no longer interrupted; it cannot be taken up: %w", h.ID, ErrConflict)
		}
	} else {
		if err := insertTurnAt(ctx, tx, turnRow{id: h.ID, parent: h.Parent, branchID: h.BranchID, retryOf: h.RetryOf,
			conv: h.Conv, inputs: h.Inputs, started: h.Started, owner: o}); err != nil {
			return err
		}
		if err := useBranchID(ctx, tx, h.BranchID, h.ID); err != nil {
			return err
		}
	}
	for _, c := range calls {
		if err := insertCall(ctx, wc, tx, h.ID, c.Parent, c.Call, true); err != nil {
			return err
		}
	}
	return nil
}

// supersede cancels the turns left running or interrupted on a branch (but keep):
// new input replaces an interrupted turn, as in HPD-Agent; they stay, kept beside it.
func supersede(ctx context.Context, tx *wtx, conv string, branchID, keep int64) error {
	_, err := tx.ExecContext(ctx, `UPDATE turns SET status = 'cancelled', error = 'superseded by a new turn', ended_at = ?,
		`+clearOwner+` WHERE conv_id = ? AND status IN ('running', 'interrupted') AND branch_id = ? AND id != ?`,
		fmtTime(now()), conv, branchID, keep)
	return err
}

// importRun stores the turn of a journal whose process is gone as it was when the
// process went: committed onto its branch when the journal ends with the turn's end
// (its process had returned it as committed; commitlater.go) and the branch has not
// moved since; otherwise running with an owner who is gone, which every reader shows as
// interrupted (resumable, as a crash always left a turn). A journal whose turn is in
// the database already (the process died after the commit) adds nothing.
func importRun(ctx context.Context, wc *writeCache, tx *wtx, h *runHeader, calls []runCall) error {
	var st trace.Status
	err := tx.QueryRowContext(ctx, "SELECT status FROM turns WHERE id = ?", h.ID).Scan(&st)
	switch {
	case err == nil && !(h.InPlace && (st == trace.StatusRunning || st == trace.StatusInterrupted)):
		return nil // stored when it ended
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("storage: turn %d: %w", h.ID, err)
	case errors.Is(err, sql.ErrNoRows) && h.InPlace:
		return nil // deleted since
	}
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM branches WHERE id = ?", h.BranchID).Scan(&n); err != nil || n == 0 {
		return err // its branch (or conversation) was deleted while it ran: nothing to keep it beside
	}
	if err := resolveBases(ctx, tx, calls); err != nil {
		return err
	}
	if h.end != nil && !h.InPlace {
		var tip sql.NullInt64
		if err := tx.QueryRowContext(ctx, "SELECT tip_id FROM branches WHERE id = ?", h.BranchID).Scan(&tip); err != nil {
			return fmt.Errorf("storage: branch of turn %d: %w", h.ID, err)
		}
		if tip.Int64 == h.Parent { // NULL reads as 0, as a header says none
			br := &Branch{ID: h.BranchID, ConvID: h.Conv, Name: h.Branch, tipID: tip}
			h2, t, e := h.end.turn(h)
			return commitNewTurn(ctx, wc, tx, br, h2, calls, t, e)
		}
	}
	gone := &Owner{PID: h.PID, Host: h.Host, LeaseUntil: now().Add(-time.Second), id: "journal"}
	if err := storeRun(ctx, wc, tx, h, calls, gone); err != nil {
		return fmt.Errorf("storage: keep interrupted turn %d: %w", h.ID, err)
	}
	return supersede(ctx, tx, h.Conv, h.BranchID, h.ID)
}

// recoverRun imports the journal f (locked by this process, its owner gone) and retires
// it. The caller no longer has f afterwards.
func (s *Store) recoverRun(ctx context.Context, f *os.File) error {
	err := s.keepLeft(ctx, f)
	f.Close()
	return err
}

// keepLeft imports the turn of journal f, which this process has just locked (its owner
// is gone), and empties the journal, still locked; an empty journal is left as it is.
func (s *Store) keepLeft(ctx context.Context, f *os.File) error {
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return err
	}
	var left bool
	err = s.write(ctx, func(tx *wtx) (err error) {
		left, err = importLeft(ctx, s.wc, tx, f, fi.Size())
		return err
	})
	if err != nil || !left {
		return err
	}
	return f.Truncate(0)
}

// liveRun is a turn in flight in a live process (this one included), read from its
// journal. Its records hold what their calls add to the turn before's (journalBase):
// callTree gives the calls whole; the rest of a run (node, its header) needs no request.
type liveRun struct {
	h        *runHeader
	calls    []runCall
	resolved bool // the records' bases are resolved
}

// liveRuns reads the journals of the turns in flight. A journal whose process is gone is
// imported on the way (when this store may write), so what a crash left is found by the
// first reader after it.
func (s *Store) liveRuns(ctx context.Context) ([]*liveRun, error) {
	if err := s.pending.wait(ctx); err != nil { // this process's committed turns are in the database, not in flight
		return nil, err
	}
	s.awaitAllRetired() // nor are their journals still held
	s.imports.Lock()
	defer s.imports.Unlock()
	ents, err := os.ReadDir(s.runsDir())
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
		return nil, nil // none, or another user's, which this process could not import anyway
	}
	if err != nil {
		return nil, fmt.Errorf("storage: turn journals: %w", err)
	}
	var out []*liveRun
	for _, e := range ents {
		if _, ok := branchOfRun(e.Name()); !ok {
			continue
		}
		if fi, err := e.Info(); err != nil || fi.Size() == 0 {
			continue
		}
		path := filepath.Join(s.runsDir(), e.Name())
		if s.readOnly == "" {
			f, err := lockDead(path)
			if errors.Is(err, errJournalGone) || errors.Is(err, os.ErrPermission) {
				continue
			}
			if err != nil {
				return nil, err
			}
			if f != nil {
				// A journal this program cannot read is left as it is, for BeginTurn on
				// its branch to report; listing goes on without it.
				if err := s.recoverRun(ctx, f); err != nil && !errors.Is(err, ErrInvalid) {
					return nil, err
				}
				continue
			}
		}
		f, err := os.Open(path)
		if err != nil {
			continue // retired meanwhile
		}
		h, calls, err := readJournal(f)
		f.Close()
		if err == nil && h != nil {
			out = append(out, &liveRun{h: h, calls: calls})
		}
	}
	return out, nil
}

// importDeadOf imports the journal of branch branchID when its process is gone, as
// liveRuns does on its way, and reports whether there was a turn in it: what reads a
// branch's tip calls it first, since a journal ending with its turn's end belongs on its
// branch (commitlater.go). One stat when the journal is empty (or missing); a journal
// held by a live process, this one included, is left alone.
func (s *Store) importDeadOf(ctx context.Context, branchID int64) (bool, error) {
	if s.readOnly != "" || branchID == 0 {
		return false, nil
	}
	path := s.runPath(branchID)
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		return false, nil
	}
	s.imports.RLock()
	defer s.imports.RUnlock()
	f, err := lockDead(path)
	if err != nil || f == nil {
		return false, nil
	}
	// This process may have emptied and unlocked the journal of its own turn between
	// the stat and the lock (retireLater): then there is nothing to import.
	if fi, err := f.Stat(); err != nil || fi.Size() == 0 {
		f.Close()
		return false, nil
	}
	err = s.recoverRun(ctx, f)
	if errors.Is(err, ErrInvalid) {
		return false, nil // a journal this program cannot read: BeginTurn on its branch says so
	}
	return err == nil, err
}

// liveRun is the turn in flight with id, or nil.
func (s *Store) liveRun(ctx context.Context, id int64) (*liveRun, error) {
	runs, err := s.liveRuns(ctx)
	for _, r := range runs {
		if r.h.ID == id {
			return r, err
		}
	}
	return nil, err
}

// owner is the live process running r.
func (r *liveRun) owner() *Owner { return &Owner{PID: r.h.PID, Host: r.h.Host, Alive: true} }

// node is r as a turn node: running, owned by its live process.
func (r *liveRun) node() *TurnNode {
	n := &TurnNode{Key: turnKey(r.h.ID), Index: r.h.Depth, Status: trace.StatusRunning, Inputs: []byte(r.h.Inputs),
		Started: r.h.Started, Owner: r.owner(), InputPreview: preview(sql.NullString{String: r.h.Inputs, Valid: true}),
		conv: r.h.Conv}
	n.id = sql.NullInt64{Int64: r.h.ID, Valid: true}
	n.branchID = sql.NullInt64{Int64: r.h.BranchID, Valid: true}
	if r.h.Parent != 0 {
		n.Parent = turnKey(r.h.Parent)
	}
	if r.h.RetryOf != 0 {
		n.RetryOf = turnKey(r.h.RetryOf)
	}
	trace.WalkCalls(r.tree(), func(*trace.Call, int) { n.Calls++ })
	return n
}

// tree is the calls r recorded as the engine nests them, as its turn will be stored: a
// call recorded under a parent is among that parent's children once the parent is
// recorded, where the child's own record stands for the copy the parent's record holds
// (which has lost its request in record mode "calls"); later records of a call id
// replace earlier ones. The requests and histories are whole once callTree resolved them.
func (r *liveRun) tree() []*trace.Call {
	own := make(map[string]*trace.Call, len(r.calls))
	var top []string // first-recorded order
	for _, c := range r.calls {
		if _, seen := own[c.Call.ID]; !seen && c.Parent == "" {
			top = append(top, c.Call.ID)
		}
		own[c.Call.ID] = c.Call
	}
	var graft func(c *trace.Call, up []string) *trace.Call
	graft = func(c *trace.Call, up []string) *trace.Call {
		if len(c.Children) == 0 {
			return c
		}
		up = append(up, c.ID)
		cc := *c
		cc.Children = make([]*trace.Call, len(c.Children))
		for i, ch := range c.Children {
			if rec := own[ch.ID]; rec != nil && !slices.Contains(up, ch.ID) { // a journal naming a call its own ancestor is damaged
				ch = rec
			}
			cc.Children[i] = graft(ch, up)
		}
		return &cc
	}
	out := make([]*trace.Call, len(top))
	for i, id := range top {
		out[i] = graft(own[id], nil)
	}
	return out
}

// callTree is tree with every call's request and history whole: the records' bases are
// read from the stored calls they name (read only, through q), once per run.
func (r *liveRun) callTree(ctx context.Context, q querier) ([]*trace.Call, error) {
	if !r.resolved {
		if err := resolveBases(ctx, q, r.calls); err != nil {
			return nil, fmt.Errorf("storage: turn %d in flight in %s: %w", r.h.ID, r.owner(), err)
		}
		r.resolved = true
	}
	return r.tree(), nil
}

// turn is r as LoadTurns gives a stored turn (o says what to leave out), read from its
// journal: running, with the calls it recorded and no attempts yet.
func (r *liveRun) turn(ctx context.Context, q querier, o LoadOptions, dec *decoder) (*trace.Turn, error) {
	t, err := r.node().turn(dec)
	if err != nil {
		return nil, err
	}
	o = o.effective()
	if o.NoRequests && o.NoHistories {
		t.Calls = r.tree()
	} else if t.Calls, err = r.callTree(ctx, q); err != nil {
		return nil, err
	}
	if o.NoRequests || o.NoHistories || o.HistoryOf != "" {
		t.Calls = leaveOut(t.Calls, o)
	}
	return t, nil
}

// leaveOut is calls without what o leaves out of stored calls (loadCalls), copied.
func leaveOut(calls []*trace.Call, o LoadOptions) []*trace.Call {
	out := make([]*trace.Call, len(calls))
	for i, c := range calls {
		cc := *c
		if o.NoRequests {
			cc.Messages, cc.Completion, cc.RawRequest, cc.RawResponse = lm.MessageList{}, "", "", ""
		}
		if o.NoHistories || o.HistoryOf != "" && c.ID != o.HistoryOf {
			cc.History = sig.History{}
		}
		if o.ValuesOnly {
			cc.Usage, cc.Params, cc.Tries, cc.Score = lm.Usage{}, lm.Params{}, nil, nil
		}
		if len(c.Children) > 0 {
			cc.Children = leaveOut(c.Children, o)
		}
		out[i] = &cc
	}
	return out
}

// loadWithLive is LoadTurnsWith of turns ids (keys) of which some may be in flight:
// nodes are those stored (nil where not); a turn in flight in a live process is read
// from its journal instead (one taken up in place, from its row); a journal a dead
// process left is imported on the way, so its turn is read again from the database.
func (s *Store) loadWithLive(ctx context.Context, keys []string, ids []int64, nodes []*TurnNode, o LoadOptions) ([]*trace.Turn, error) {
	live, err := s.liveTurns(ctx, ids, o)
	if err != nil {
		return nil, err
	}
	if len(live) > 0 {
		// A journal read as its turn's transaction commits and its process empties it
		// holds less than the turn: the row, read after the journal, says which is whole.
		if nodes, err = s.turnNodes(ctx, ids); err != nil {
			return nil, err
		}
		for i, n := range nodes {
			if n != nil && n.Status != trace.StatusRunning && n.Status != trace.StatusInterrupted {
				delete(live, ids[i])
			}
		}
	}
	for i, n := range nodes {
		if n == nil && live[ids[i]] == nil {
			if nodes, err = s.turnNodes(ctx, ids); err != nil {
				return nil, err
			}
			break
		}
	}
	var stored []*TurnNode
	for i, n := range nodes {
		switch {
		case live[ids[i]] != nil:
		case n == nil:
			return nil, fmt.Errorf("storage: turn %s: %w", keys[i], ErrNotFound)
		default:
			stored = append(stored, n)
		}
	}
	ts, err := s.turnsOf(ctx, stored, o)
	if err != nil {
		return nil, err
	}
	out := make([]*trace.Turn, len(ids))
	for i, id := range ids {
		if out[i] = live[id]; out[i] == nil {
			out[i], ts = ts[0], ts[1:]
		}
	}
	return out, nil
}

// liveTurns are the turns among ids in flight in live processes, read from their
// journals as LoadTurnsWith reads stored ones: what a reader asking for a turn that is
// not in the database yet gets.
func (s *Store) liveTurns(ctx context.Context, ids []int64, o LoadOptions) (map[int64]*trace.Turn, error) {
	runs, err := s.liveRuns(ctx)
	if err != nil || len(runs) == 0 {
		return nil, err
	}
	out := map[int64]*trace.Turn{}
	dec := newDecoder()
	for _, r := range runs {
		if !slices.Contains(ids, r.h.ID) {
			continue
		}
		if out[r.h.ID], err = r.turn(ctx, s.r, o, dec); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// overlay puts the turns in flight among nodes (read from the database): a turn taken
// up in place replaces its row, the others are added. keepRun says which runs belong.
func overlay(nodes []*TurnNode, runs []*liveRun, keepRun func(*liveRun) bool) []*TurnNode {
	for _, r := range runs {
		if !keepRun(r) {
			continue
		}
		n, replaced := r.node(), false
		for i, old := range nodes {
			if old.id.Int64 == r.h.ID {
				n.RetryOf, n.Error = old.RetryOf, ""
				nodes[i], replaced = n, true
			}
		}
		if !replaced {
			nodes = append(nodes, n)
		}
	}
	return nodes
}
