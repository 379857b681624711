package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/trace"
)

// Storing a turn that has ended: a committed one (CommitTurn, AppendTurn) with its calls,
// attempts and the branch tip moved to it.

func requireOpen(ctx context.Context, q querier, convID string) error {
	var st trace.Status
	err := q.QueryRowContext(ctx, "SELECT status FROM conversations WHERE id = ?", convID).Scan(&st)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("storage: conversation %q: %w", convID, ErrNotFound)
	}
	if err != nil {
		return err
	}
	return takesTurns(convID, st)
}

// takesTurns says why a conversation of status st takes no new turns, if it does not.
func takesTurns(convID string, st trace.Status) error {
	if st != trace.StatusInProgress {
		return fmt.Errorf("storage: conversation %q is %s and takes no new turns: %w", convID, st, ErrClosedSession)
	}
	return nil
}

// insertTurn adds a running turn after br's tip, with the next id of the counter; owner
// is nil for a turn committed in the same transaction (imports), retryOf 0 unless it
// retries a failed or cancelled turn.
func insertTurn(ctx context.Context, tx *wtx, convID string, br *Branch, inputs string, o *Owner, retryOf int64) (int64, error) {
	id, err := reserveIDs(ctx, tx, 1)
	if err != nil {
		return 0, err
	}
	return id, insertTurnAt(ctx, tx, turnRow{id: id, parent: br.tipID.Int64, branchID: br.ID, retryOf: retryOf, conv: convID,
		inputs: inputs, started: now(), owner: o})
}

// commitTurn completes the running turn at p (its id, parent and conversation: what
// insertTurn was given, or readPos) as t, at the tip of branch br, in tx, when the tip is
// still br.tipID (advanceTip).
func commitTurn(ctx context.Context, wc *writeCache, tx *wtx, br *Branch, p turnPos, t *trace.Turn) error {
	id := p.id
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
	e, err := endOf(ctx, wc, tx, t)
	if err != nil {
		return err
	}
	q := `UPDATE turns SET status = 'completed', error = NULL, ` + clearOwner + `, outputs = ?, output_preview = ?, score = ?,
		snapshot_node = ?, explicit = ?, ended_at = ?`
	args := []any{e.out, preview(e.out), t.Score, e.snap, t.Explicit, fmtTime(e.ended)}
	if q, args, err = setInputs(q, args, t); err != nil {
		return err
	}
	if !t.Started.IsZero() {
		q += ", started_at = ?"
		args = append(args, fmtTime(t.Started))
	}
	// The running usage totals, in the same statement: this turn's calls (all stored
	// now) plus its parent's totals, final because a committed turn's calls and its
	// parent never change.
	q += ", " + cumFromCalls
	if _, err := tx.ExecContext(ctx, q+" WHERE id = ?", append(args, id, p.parent, id)...); err != nil {
		return fmt.Errorf("storage: commit turn %d: %w", id, err)
	}
	return takeTip(ctx, tx, br, id)
}

// cumFromCalls sets a turn's running usage totals from its calls' rows and its parent's
// totals (arguments: the turn's id, its parent's).
const cumFromCalls = `(cum_prompt_tokens, cum_completion_tokens, cum_cached_tokens, cum_total_tokens, cum_estimated) =
		(SELECT coalesce(sum(c.prompt_tokens), 0) + coalesce(p.cum_prompt_tokens, 0),
			coalesce(sum(c.completion_tokens), 0) + coalesce(p.cum_completion_tokens, 0),
			coalesce(sum(c.cached_tokens), 0) + coalesce(p.cum_cached_tokens, 0),
			coalesce(sum(c.total_tokens), 0) + coalesce(p.cum_total_tokens, 0),
			coalesce(sum(c.usage_estimated), 0) + coalesce(p.cum_estimated, 0)
		FROM (SELECT 1) LEFT JOIN calls c ON c.turn_id = ? LEFT JOIN turns p ON p.id = ?)`

// commitNewTurn stores the turn a sink ran, not in the database yet (h, with the calls
// its journal recorded), completed as t, at the tip of branch br, in tx. It is
// commitTurn for a turn that is not stored running first: its row is written once, as
// it ends, before its calls, where inserting it running and then completing it cost a
// turn a statement, a rewrite of the row and a move in the status index. Its running
// usage totals are summed from the calls it is about to store (callsUsage), not from
// their rows: TestNewTurnRowAsStoredRunning holds the two ways to the same row. e is
// what the row takes of t's end, when the caller has it already (an end record's);
// nil: from t.
func commitNewTurn(ctx context.Context, wc *writeCache, tx *wtx, br *Branch, h *runHeader, calls []runCall, t *trace.Turn, e *turnEnd) error {
	parent, jump, depth, jumpDepth, err := placeAfter(ctx, tx, h.Parent)
	if err != nil {
		return err
	}
	if e == nil {
		end, err := endOf(ctx, wc, tx, t)
		if err != nil {
			return err
		}
		e = &end
	}
	inputs := sql.NullString{String: h.Inputs, Valid: true}
	if t.Inputs != nil {
		if inputs, err = jsonOf(t.Inputs); err != nil {
			return fmt.Errorf("storage: turn inputs: %w", err)
		}
	}
	started := h.Started
	if !t.Started.IsZero() {
		started = t.Started
	}
	u := callsUsage(calls, t)
	_, err = tx.ExecContext(ctx, `INSERT INTO turns(id, conv_id, parent_id, jump_id, jump_depth, depth, branch_id, status, inputs,
			input_preview, started_at, retry_of, outputs, output_preview, score, snapshot_node, explicit, ended_at,
			cum_prompt_tokens, cum_completion_tokens, cum_cached_tokens, cum_total_tokens, cum_estimated)
		SELECT ?, ?, ?, ?, ?, ?, ?, 'completed', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,
			? + coalesce(p.cum_prompt_tokens, 0), ? + coalesce(p.cum_completion_tokens, 0), ? + coalesce(p.cum_cached_tokens, 0),
			? + coalesce(p.cum_total_tokens, 0), ? + coalesce(p.cum_estimated, 0)
		FROM (SELECT 1) LEFT JOIN turns p ON p.id = ?`,
		h.ID, h.Conv, parent, jump, jumpDepth, depth, h.BranchID, inputs, preview(inputs), fmtTime(started),
		sql.NullInt64{Int64: h.RetryOf, Valid: h.RetryOf != 0}, e.out, preview(e.out), t.Score, e.snap, t.Explicit, fmtTime(e.ended),
		u.PromptTokens, u.CompletionTokens, u.CachedTokens, u.TotalTokens, u.estimated, h.Parent)
	if err != nil {
		return fmt.Errorf("storage: commit turn %d: %w", h.ID, err)
	}
	newFresh(tx, h.ID)
	for _, c := range calls {
		if err := insertCall(ctx, wc, tx, h.ID, c.Parent, c.Call, true); err != nil {
			return err
		}
	}
	for _, c := range t.Calls {
		if err := insertCallIfMissing(ctx, wc, tx, h.ID, "", c); err != nil {
			return err
		}
	}
	if err := insertAttempts(ctx, tx, h.Conv, h.ID, t.Attempts, true); err != nil {
		return err
	}
	return takeTip(ctx, tx, br, h.ID)
}

// callsUsage is the usage commitNewTurn's calls add up to once stored: calls are stored
// as insertCall stores them (a call recorded again replaces its row; a child, or a
// turn's call, already stored is not stored again).
func callsUsage(calls []runCall, t *trace.Turn) callUsage {
	used := map[string]lm.Usage{} // by call key, as insertCall keys the rows
	seq := 0
	var store, ifMissing func(c *trace.Call)
	store = func(c *trace.Call) {
		seq++
		key := c.ID
		if key == "" {
			key = fmt.Sprintf("#%d", seq)
		}
		used[key] = c.Usage
		for _, ch := range c.Children {
			ifMissing(ch)
		}
	}
	ifMissing = func(c *trace.Call) {
		if c == nil {
			return
		}
		if _, stored := used[c.ID]; c.ID != "" && stored {
			for _, ch := range c.Children {
				ifMissing(ch)
			}
			return
		}
		store(c)
	}
	for _, c := range calls {
		store(c.Call)
	}
	for _, c := range t.Calls {
		ifMissing(c)
	}
	var u callUsage
	for _, c := range used {
		u.PromptTokens += c.PromptTokens
		u.CompletionTokens += c.CompletionTokens
		u.CachedTokens += c.CachedTokens
		u.TotalTokens += c.TotalTokens
		if c.Estimated {
			u.estimated++
		}
	}
	return u
}

// callUsage is calls' usage summed as a turn's cum_ columns sum its calls' rows.
type callUsage struct {
	lm.Usage
	estimated int // calls whose usage was counted here
}

// turnEnd is what a turn's row holds once it has ended (endOf).
type turnEnd struct {
	out   sql.NullString // its outputs' JSON
	snap  sql.NullInt64  // its explicit history's list, if it had one
	ended time.Time
}

// endOf is what t's row holds once it has ended as t.
func endOf(ctx context.Context, wc *writeCache, tx *wtx, t *trace.Turn) (turnEnd, error) {
	var e turnEnd
	var err error
	if e.out, err = jsonOf(t.Outputs); err != nil {
		return e, fmt.Errorf("storage: turn outputs: %w", err)
	}
	if t.Explicit {
		l, err := putList(ctx, wc, tx, "", historyItems(wc, "", t.History)) // one path: no run
		if err != nil {
			return e, err
		}
		e.snap = l.head
	}
	if e.ended = t.Ended; e.ended.IsZero() {
		e.ended = now()
	}
	return e, nil
}

// takeTip makes turn id, just committed after br's tip, the branch's tip: its redo stack
// is cleared, as a new turn clears it.
func takeTip(ctx context.Context, tx *wtx, br *Branch, id int64) error {
	if _, err := tx.ExecContext(ctx, "DELETE FROM redo WHERE branch_id = ?", br.ID); err != nil {
		return err
	}
	return advanceTip(ctx, tx, br, id)
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
	err = s.moveTip(ctx, convID, branch, "stored", func(tx *wtx, br *Branch) error {
		if err := requireOpen(ctx, tx, convID); err != nil {
			return err
		}
		id, err := insertTurn(ctx, tx, convID, br, in.String, nil, 0)
		if err != nil {
			return err
		}
		key = turnKey(id)
		return commitTurn(ctx, s.wc, tx, br, turnPos{id: id, parent: br.tipID.Int64, conv: convID}, t)
	})
	return key, err
}

// setInputs adds t's inputs, when it has them, to an UPDATE of its turn row.
func setInputs(q string, args []any, t *trace.Turn) (string, []any, error) {
	if t.Inputs == nil {
		return q, args, nil
	}
	in, err := jsonOf(t.Inputs)
	if err != nil {
		return q, args, fmt.Errorf("storage: turn inputs: %w", err)
	}
	return q + ", inputs = ?, input_preview = ?", append(args, in.String, preview(in)), nil
}
