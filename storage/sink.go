package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/sessionbench/sessionbench/core/redact"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// BranchSink is the engine's trace.Sink bound to one branch of one conversation. Every
// method is its own transaction, so each finished inner call is stored the moment
// RecordCall returns: a killed process loses none (only a crash of the machine can take
// back what the turn's commit, the one fsync per turn, did not yet make durable). A turn is 'running' from BeginTurn on, owned by this process (see
// Owner), which renews its lease while it runs; it ends 'completed' (CommitTurn, the
// only status on the branch's path) or failed, cancelled or interrupted (AbortTurn), kept
// beside the branch. A crash leaves it 'running' with an owner that is gone: interrupted.
type BranchSink struct {
	s      *Store
	conv   string
	branch string

	mu     sync.Mutex
	resume string          // turn key the next BeginTurn resumes or retries
	began  string          // turn key the last BeginTurn began
	runs   map[string]*run // turns this sink has running, by key
}

// run is a turn this sink owns: its owner record and the heartbeat renewing its lease.
type run struct {
	owner *Owner
	stop  chan struct{}
}

var _ trace.Sink = (*BranchSink)(nil)

// Sink returns the trace.Sink writing turns to branch of conversation convID.
func (s *Store) Sink(convID, branch string) *BranchSink {
	return &BranchSink{s: s, conv: convID, branch: branch, runs: map[string]*run{}}
}

// Resume makes the next BeginTurn take up turn key instead of starting a fresh turn, so
// the engine runs it again through its normal path; pair it with ReplayLM(key, model) so
// requests already answered are not paid for again. An interrupted turn (its owner gone)
// continues in place, on the branch it was begun on. A failed or cancelled turn is
// retried: the next BeginTurn starts a new turn that points at it (RetryOf), on this
// sink's branch (any branch of the conversation), and the failed turn stays as it was.
// Either way the branch's tip must be the turn's parent.
func (b *BranchSink) Resume(ctx context.Context, key string) error {
	id, err := parseTurnKey(key)
	if err != nil {
		return err
	}
	n, err := turnNode(ctx, b.s.r, id)
	if err != nil {
		return err
	}
	br, err := branchByName(ctx, b.s.r, b.conv, b.branch)
	inPlace := !n.Status.Retryable() || n.Status == trace.StatusInterrupted
	if n.conv != b.conv || errors.Is(err, ErrNotFound) || (err == nil && inPlace && n.branchID.Int64 != br.ID) {
		return fmt.Errorf("storage: turn %s was not begun on %s/%s: %w", key, b.conv, b.branch, ErrInvalid)
	}
	if err != nil {
		return err
	}
	if err := resumable(n, br); err != nil {
		return err
	}
	b.mu.Lock()
	b.resume = key
	b.mu.Unlock()
	return nil
}

// Began is the key of the turn the last BeginTurn began or took up ("" when it failed):
// the turn a failing engine run left behind.
func (b *BranchSink) Began() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.began
}

// forkPoint says where a branch for a turn at index i starts.
func forkPoint(i int) string {
	if i == 0 {
		return "empty (the turn was the first)"
	}
	return fmt.Sprintf("after turn %d", i-1)
}

// resumable says why turn n cannot be taken up on branch br, or nil.
func resumable(n *TurnNode, br *Branch) error {
	switch {
	case n.Status == trace.StatusCompleted:
		return fmt.Errorf("storage: turn %s is completed; there is nothing to retry: %w", n.Key, ErrConflict)
	case n.Status == trace.StatusRunning && n.Owner != nil && n.Owner.Alive:
		return fmt.Errorf("storage: turn %s is running in %s: %w", n.Key, n.Owner, ErrBusy)
	case n.Parent != nullKey(br.tipID):
		return fmt.Errorf("storage: branch %q moved on since turn %s began (its tip is now turn %s): retry it on a new branch that starts %s: %w",
			br.Name, n.Key, dash(nullKey(br.tipID)), forkPoint(n.Index), ErrConflict)
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "(empty)"
	}
	return s
}

// BeginTurn records a running turn after the branch tip, owned by this process. A branch
// with a turn running in a live process is busy (ErrBusy, naming the process); turns on it
// whose owner is gone are superseded (kept, cancelled): new input replaces an interrupted
// turn, as in HPD-Agent.
func (b *BranchSink) BeginTurn(ctx context.Context, inputs *sig.Map) (string, error) {
	in, err := jsonOf(inputs)
	if err != nil {
		return "", fmt.Errorf("storage: turn inputs: %w", err)
	}
	if !in.Valid {
		in = sql.NullString{String: "{}", Valid: true}
	}
	b.mu.Lock()
	resume := b.resume
	b.resume, b.began = "", ""
	b.mu.Unlock()
	owner := b.s.newOwner()
	var id int64
	err = b.s.writeLight(ctx, func(tx *wtx) error {
		if err := requireOpen(ctx, tx, b.conv); err != nil {
			return err
		}
		br, err := branchByName(ctx, tx, b.conv, b.branch)
		if err != nil {
			return err
		}
		if err := b.notBusy(ctx, tx, br); err != nil {
			return err
		}
		var retryOf int64
		if resume != "" {
			old, err := parseTurnKey(resume)
			if err != nil {
				return err
			}
			n, err := turnNode(ctx, tx, old)
			if err != nil {
				return err
			}
			if err := resumable(n, br); err != nil {
				return err
			}
			if n.Status == trace.StatusInterrupted || n.Status == trace.StatusRunning {
				// interrupted (or running with its owner gone): continue it in place
				id = old
				_, err = tx.ExecContext(ctx, `UPDATE turns SET status = 'running', error = NULL, ended_at = NULL, inputs = ?, input_preview = ?,
					owner_pid = ?, owner_host = ?, owner_id = ?, lease_until = ? WHERE id = ?`,
					in.String, preview(in), owner.PID, owner.Host, owner.id, fmtTime(owner.LeaseUntil), id)
				return err
			}
			retryOf = old
		}
		if _, err := tx.ExecContext(ctx, `UPDATE turns SET status = 'cancelled', error = 'superseded by a new turn', ended_at = ?,
			`+clearOwner+` WHERE conv_id = ? AND status IN ('running', 'interrupted') AND branch_id = ?`, fmtTime(now()), b.conv, br.ID); err != nil {
			return err
		}
		id, err = insertTurn(ctx, tx, b.conv, br, in.String, owner, retryOf)
		return err
	})
	if err != nil {
		return "", err
	}
	key := turnKey(id)
	r := &run{owner: owner, stop: make(chan struct{})}
	b.mu.Lock()
	b.runs[key], b.began = r, key
	b.mu.Unlock()
	go b.s.heartbeat(id, owner, r.stop)
	return key, nil
}

// clearOwner is the SET clause that makes a turn ownerless.
const clearOwner = `owner_pid = NULL, owner_host = NULL, owner_id = NULL, lease_until = NULL`

// notBusy fails with ErrBusy when a live process runs a turn on br.
func (b *BranchSink) notBusy(ctx context.Context, tx *wtx, br *Branch) error {
	nodes, err := queryNodes(ctx, tx, "SELECT "+nodeColumns+` FROM turns t WHERE t.conv_id = ? AND t.status = 'running' AND t.branch_id = ?`,
		b.conv, br.ID)
	if err != nil {
		return fmt.Errorf("storage: running turns of %q: %w", br.Name, err)
	}
	for _, n := range nodes {
		if n.Owner != nil && n.Owner.Alive {
			return busyError(br.Name, n.id.Int64, n.Owner, n.Started)
		}
	}
	return nil
}

func requireOpen(ctx context.Context, tx *wtx, convID string) error {
	var st trace.Status
	err := tx.QueryRowContext(ctx, "SELECT status FROM conversations WHERE id = ?", convID).Scan(&st)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("storage: conversation %q: %w", convID, ErrNotFound)
	}
	if err != nil {
		return err
	}
	if st != trace.StatusInProgress {
		return fmt.Errorf("storage: conversation %q is %s and takes no new turns: %w", convID, st, ErrClosedSession)
	}
	return nil
}

// insertTurn adds a running turn after br's tip; owner is nil for a turn committed in the
// same transaction (imports), retryOf 0 unless it retries a failed or cancelled turn.
func insertTurn(ctx context.Context, tx *wtx, convID string, br *Branch, inputs string, o *Owner, retryOf int64) (int64, error) {
	var parent, jump sql.NullInt64
	depth, jumpDepth := 0, 0
	if br.tipID.Valid {
		p, err := readPos(ctx, tx, br.tipID.Int64)
		if err != nil {
			return 0, err
		}
		j, jd, err := jumpFor(ctx, tx, p)
		if err != nil {
			return 0, err
		}
		parent = sql.NullInt64{Int64: p.id, Valid: true}
		jump = sql.NullInt64{Int64: j, Valid: true}
		depth, jumpDepth = p.depth+1, jd
	}
	var pid sql.NullInt64
	var host, oid, lease sql.NullString
	if o != nil {
		pid = sql.NullInt64{Int64: int64(o.PID), Valid: true}
		host, oid = sql.NullString{String: o.Host, Valid: true}, sql.NullString{String: o.id, Valid: true}
		lease = sql.NullString{String: fmtTime(o.LeaseUntil), Valid: true}
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO turns(conv_id, parent_id, jump_id, jump_depth, depth, branch_id, status, inputs,
			input_preview, started_at, owner_pid, owner_host, owner_id, lease_until, retry_of)
		VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?)`, convID, parent, jump, jumpDepth, depth, br.ID, inputs,
		preview(sql.NullString{String: inputs, Valid: true}), fmtTime(now()), pid, host, oid, lease, sql.NullInt64{Int64: retryOf, Valid: retryOf != 0})
	if err != nil {
		return 0, fmt.Errorf("storage: begin turn on %q: %w", br.Name, err)
	}
	return res.LastInsertId()
}

// ownedTurn checks that key names a turn of this sink's conversation that is running
// under this sink's ownership, and returns its id.
func (b *BranchSink) ownedTurn(ctx context.Context, tx *wtx, key string) (int64, error) {
	id, err := parseTurnKey(key)
	if err != nil {
		return 0, err
	}
	n, err := turnOwner(ctx, tx, id)
	if err != nil {
		return 0, err
	}
	if n.conv != b.conv {
		return 0, fmt.Errorf("storage: turn %s is not in conversation %q: %w", key, b.conv, ErrInvalid)
	}
	if n.Owner == nil { // only a running turn has an owner (an expired lease shows as interrupted)
		return 0, fmt.Errorf("storage: turn %s is %s, not in flight: %w", key, n.Status, ErrConflict)
	}
	b.mu.Lock()
	r := b.runs[key]
	b.mu.Unlock()
	if r == nil || n.Owner.id != r.owner.id {
		return 0, fmt.Errorf("storage: turn %s is no longer this process's: %s took it over after its lease ran out: %w",
			key, n.Owner, ErrConflict)
	}
	return id, nil
}

// turnOwner reads what ownedTurn checks of a turn (its conversation, status and owner)
// and no more: it runs for every call a turn records.
func turnOwner(ctx context.Context, tx *wtx, id int64) (*TurnNode, error) {
	n := &TurnNode{}
	var pid sql.NullInt64
	var host, oid, lease sql.NullString
	err := tx.QueryRowContext(ctx, "SELECT conv_id, status, "+ownerColumns+" FROM turns WHERE id = ?", id).
		Scan(&n.conv, &n.Status, &pid, &host, &oid, &lease)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("storage: turn %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("storage: turn %d: %w", id, err)
	}
	n.setOwner(scanOwner(pid, host, oid, lease))
	return n, nil
}

// end stops the heartbeat of turn key: the turn is no longer this sink's to renew.
func (b *BranchSink) end(key string) {
	b.mu.Lock()
	r := b.runs[key]
	delete(b.runs, key)
	b.mu.Unlock()
	if r != nil {
		close(r.stop)
	}
}

// RecordCall stores one finished inner call (with any children attached to it that were
// not recorded yet) in its own transaction. Recording a call id again replaces it, which
// is what a resumed turn does with the calls it replays.
func (b *BranchSink) RecordCall(ctx context.Context, key, parentCallID string, c *trace.Call) error {
	if c == nil {
		return fmt.Errorf("storage: record call: nil call: %w", ErrInvalid)
	}
	return b.s.writeLight(ctx, func(tx *wtx) error {
		id, err := b.ownedTurn(ctx, tx, key)
		if err != nil {
			return err
		}
		return insertCall(ctx, b.s.wc, tx, id, parentCallID, c, true)
	})
}

// CommitTurn stores the finished turn, marks it completed and moves the branch tip to it,
// clearing the branch's redo stack.
func (b *BranchSink) CommitTurn(ctx context.Context, key string, t *trace.Turn) error {
	if t == nil {
		return fmt.Errorf("storage: commit turn %s: nil turn: %w", key, ErrInvalid)
	}
	err := b.s.write(ctx, func(tx *wtx) error {
		id, err := b.ownedTurn(ctx, tx, key)
		if err != nil {
			return err
		}
		br, err := branchByName(ctx, tx, b.conv, b.branch)
		if err != nil {
			return err
		}
		return commitTurn(ctx, b.s.wc, tx, br, id, t)
	})
	if err == nil {
		b.end(key) // on failure the turn is still this sink's, to abort
	}
	return err
}

func commitTurn(ctx context.Context, wc *writeCache, tx *wtx, br *Branch, id int64, t *trace.Turn) error {
	p, err := readPos(ctx, tx, id)
	if err != nil {
		return err
	}
	if p.parent != br.tipID.Int64 {
		return fmt.Errorf("storage: branch %q moved while turn %d was in flight (tip is now %s): %w",
			br.Name, id, nullKey(br.tipID), ErrConflict)
	}
	for _, c := range t.Calls {
		if err := insertCallIfMissing(ctx, wc, tx, id, "", c); err != nil {
			return err
		}
	}
	if err := insertAttempts(ctx, tx, p.conv, id, t.Attempts, true); err != nil {
		return err
	}
	out, err := jsonOf(t.Outputs)
	if err != nil {
		return fmt.Errorf("storage: turn outputs: %w", err)
	}
	var snap sql.NullInt64
	if t.Explicit {
		l, err := putList(ctx, wc, tx, "", historyItems(wc, "", t.History)) // one path: no run
		if err != nil {
			return err
		}
		snap = l.head
	}
	ended := t.Ended
	if ended.IsZero() {
		ended = now()
	}
	q := `UPDATE turns SET status = 'completed', error = NULL, ` + clearOwner + `, outputs = ?, output_preview = ?, score = ?,
		snapshot_node = ?, explicit = ?, ended_at = ?`
	args := []any{out, preview(out), t.Score, snap, t.Explicit, fmtTime(ended)}
	if t.Inputs != nil {
		in, err := jsonOf(t.Inputs)
		if err != nil {
			return fmt.Errorf("storage: turn inputs: %w", err)
		}
		q += ", inputs = ?, input_preview = ?"
		args = append(args, in.String, preview(in))
	}
	if !t.Started.IsZero() {
		q += ", started_at = ?"
		args = append(args, fmtTime(t.Started))
	}
	if _, err := tx.ExecContext(ctx, q+" WHERE id = ?", append(args, id)...); err != nil {
		return fmt.Errorf("storage: commit turn %d: %w", id, err)
	}
	// The running usage totals: this turn's calls (all stored now) plus its parent's
	// totals, final because a committed turn's calls and its parent never change.
	if _, err := tx.ExecContext(ctx, `UPDATE turns SET (cum_prompt_tokens, cum_completion_tokens, cum_cached_tokens, cum_total_tokens, cum_estimated) =
		(SELECT coalesce(sum(c.prompt_tokens), 0) + coalesce(p.cum_prompt_tokens, 0),
			coalesce(sum(c.completion_tokens), 0) + coalesce(p.cum_completion_tokens, 0),
			coalesce(sum(c.cached_tokens), 0) + coalesce(p.cum_cached_tokens, 0),
			coalesce(sum(c.total_tokens), 0) + coalesce(p.cum_total_tokens, 0),
			coalesce(sum(c.usage_estimated), 0) + coalesce(p.cum_estimated, 0)
		FROM (SELECT 1) LEFT JOIN calls c ON c.turn_id = ?1 LEFT JOIN turns p ON p.id = ?2)
		WHERE id = ?1`, id, p.parent); err != nil {
		return fmt.Errorf("storage: usage totals of turn %d: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM redo WHERE branch_id = ?", br.ID); err != nil {
		return err
	}
	return setTip(ctx, tx, br.ID, sql.NullInt64{Int64: id, Valid: true})
}

// AbortTurn ends the running turn without committing it: t says how (Status failed,
// cancelled or interrupted; failed when unset), why (Error) and the calls it made, which
// are stored if they were not yet. The turn stays beside the branch, out of its path; an
// interrupted one is left ownerless, so it is offered for resuming at once.
func (b *BranchSink) AbortTurn(ctx context.Context, key string, t *trace.Turn) error {
	if t == nil {
		return fmt.Errorf("storage: abort turn %s: nil turn: %w", key, ErrInvalid)
	}
	st := t.Status
	switch st {
	case "":
		st = trace.StatusFailed
	case trace.StatusFailed, trace.StatusCancelled, trace.StatusInterrupted:
	default:
		return fmt.Errorf("storage: abort turn %s as %q: want failed, cancelled or interrupted: %w", key, st, ErrInvalid)
	}
	defer b.end(key)
	return b.s.write(ctx, func(tx *wtx) error {
		id, err := b.ownedTurn(ctx, tx, key)
		if err != nil {
			return err
		}
		for _, c := range t.Calls {
			if err := insertCallIfMissing(ctx, b.s.wc, tx, id, "", c); err != nil {
				return err
			}
		}
		if err := insertAttempts(ctx, tx, b.conv, id, t.Attempts, false); err != nil {
			return err
		}
		ended := t.Ended
		if ended.IsZero() {
			ended = now()
		}
		q := `UPDATE turns SET status = ?, error = ?, ended_at = ?, ` + clearOwner
		args := []any{st, redact.String(t.Error), fmtTime(ended)}
		if t.Inputs != nil {
			in, err := jsonOf(t.Inputs)
			if err != nil {
				return fmt.Errorf("storage: turn inputs: %w", err)
			}
			q += ", inputs = ?, input_preview = ?"
			args = append(args, in.String, preview(in))
		}
		_, err = tx.ExecContext(ctx, q+" WHERE id = ?", append(args, id)...)
		return err
	})
}

// AppendTurn stores a complete turn (with its calls) at the tip of branch in one
// transaction, for imports and tools that have the whole turn at once. It returns the
// turn key.
func (s *Store) AppendTurn(ctx context.Context, convID, branch string, t *trace.Turn) (string, error) {
	if t == nil {
		return "", fmt.Errorf("storage: append turn: nil turn: %w", ErrInvalid)
	}
	in, err := jsonOf(t.Inputs)
	if err != nil {
		return "", fmt.Errorf("storage: turn inputs: %w", err)
	}
	if !in.Valid {
		in = sql.NullString{String: "{}", Valid: true}
	}
	var key string
	err = s.write(ctx, func(tx *wtx) error {
		if err := requireOpen(ctx, tx, convID); err != nil {
			return err
		}
		br, err := branchByName(ctx, tx, convID, branch)
		if err != nil {
			return err
		}
		id, err := insertTurn(ctx, tx, convID, br, in.String, nil, 0)
		if err != nil {
			return err
		}
		key = turnKey(id)
		return commitTurn(ctx, s.wc, tx, br, id, t)
	})
	return key, err
}
