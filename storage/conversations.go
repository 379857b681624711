package storage

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/sessionbench/sessionbench/core/trace"
)

// Conversation is a stored session (seed 004 Session + seed 003 model).
type Conversation struct {
	ID          string          `json:"id"`
	Title       string          `json:"title"`
	Agent       string          `json:"agent"`
	AgentConfig json.RawMessage `json:"agent_config"`
	Status      trace.Status    `json:"status"`
	Metadata    map[string]any  `json:"metadata"`
	BestAttempt *Attempt        `json:"best_attempt,omitempty"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
}

// NewConversation describes a conversation to create. An empty ID gets a generated one.
type NewConversation struct {
	ID          string
	Title       string
	Agent       string
	AgentConfig json.RawMessage // JSON; empty means {}
	Metadata    map[string]any
}

// NewID returns a fresh conversation id: time-ordered and random ("c-20250115T103045-3f9a1c").
func NewID() string {
	var b [3]byte
	rand.Read(b[:])
	return "c-" + time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}

// CreateConversation stores a new conversation with its empty "main" branch.
func (s *Store) CreateConversation(ctx context.Context, nc NewConversation) (*Conversation, error) {
	return s.ImportConversation(ctx, nc, nil, "")
}

// ImportConversation stores a new conversation with turns (complete ones, with their
// calls) on its main branch and the given status ("" stays in_progress), all in one
// transaction: a failure or a kill part-way leaves no conversation at all, never part
// of one.
func (s *Store) ImportConversation(ctx context.Context, nc NewConversation, turns []*trace.Turn, status trace.Status) (*Conversation, error) {
	if nc.ID == "" {
		nc.ID = NewID()
	}
	cfg := nc.AgentConfig
	if len(cfg) == 0 {
		cfg = json.RawMessage("{}")
	}
	if !json.Valid(cfg) {
		return nil, fmt.Errorf("storage: agent config of %q is not valid JSON: %w", nc.ID, ErrInvalid)
	}
	if status != "" {
		if _, err := trace.ParseConversationStatus(string(status)); err != nil {
			return nil, fmt.Errorf("storage: %w: %w", err, ErrInvalid)
		}
	}
	ins, err := turnInputs(turns)
	if err != nil {
		return nil, err
	}
	err = s.write(ctx, func(tx *wtx) error { return s.importTx(ctx, tx, nc, string(cfg), turns, ins, status) })
	if err != nil {
		return nil, err
	}
	return s.Conversation(ctx, nc.ID)
}

// importTx is ImportConversation's transaction (cfg checked, ins the turns' inputs).
func (s *Store) importTx(ctx context.Context, tx *wtx, nc NewConversation, cfg string, turns []*trace.Turn, ins []string, status trace.Status) error {
	t := fmtTime(now())
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM conversations WHERE id = ?", nc.ID).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("storage: conversation %q already exists: %w", nc.ID, ErrConflict)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO conversations(id, title, agent, agent_config, status, created_at, updated_at)
		VALUES (?, ?, ?, ?, 'in_progress', ?, ?)`, nc.ID, nc.Title, nc.Agent, cfg, t, t); err != nil {
		return fmt.Errorf("storage: create conversation %q: %w", nc.ID, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO branches(conv_id, name, created_at, updated_at) VALUES (?, 'main', ?, ?)`,
		nc.ID, t, t); err != nil {
		return fmt.Errorf("storage: create main branch of %q: %w", nc.ID, err)
	}
	if err := setMeta(ctx, tx, nc.ID, nc.Metadata); err != nil {
		return err
	}
	if _, err := appendTurns(ctx, s.wc, tx, nc.ID, MainBranch, turns, ins); err != nil {
		return err
	}
	if status != "" && status != trace.StatusInProgress {
		_, err := tx.ExecContext(ctx, "UPDATE conversations SET status = ? WHERE id = ?", status, nc.ID)
		return err
	}
	return nil
}

func setMeta(ctx context.Context, tx *wtx, id string, meta map[string]any) error {
	for k, v := range meta {
		if v == nil { // nil removes the key, as in HPD-Agent's metadata merge
			if _, err := tx.ExecContext(ctx, "DELETE FROM conversation_meta WHERE conv_id = ? AND key = ?", id, k); err != nil {
				return fmt.Errorf("storage: metadata %q of %q: %w", k, id, err)
			}
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("storage: metadata %q of %q is not JSON-encodable: %v: %w", k, id, err, ErrInvalid)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO conversation_meta(conv_id, key, value) VALUES (?, ?, ?)
			ON CONFLICT(conv_id, key) DO UPDATE SET value = excluded.value`, id, k, string(b)); err != nil {
			return fmt.Errorf("storage: metadata %q of %q: %w", k, id, err)
		}
	}
	return nil
}

// SetMetadata merges key/values into a conversation's metadata; a nil value removes a key.
func (s *Store) SetMetadata(ctx context.Context, id string, meta map[string]any) error {
	return s.write(ctx, func(tx *wtx) error {
		if err := touch(ctx, tx, id); err != nil {
			return err
		}
		return setMeta(ctx, tx, id, meta)
	})
}

// touch bumps updated_at and fails with ErrNotFound for an unknown conversation.
func touch(ctx context.Context, tx *wtx, id string) error {
	res, err := tx.ExecContext(ctx, "UPDATE conversations SET updated_at = ? WHERE id = ?", fmtTime(now()), id)
	if err != nil {
		return fmt.Errorf("storage: update conversation %q: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("storage: conversation %q: %w", id, ErrNotFound)
	}
	return nil
}

// SetTitle renames a conversation.
func (s *Store) SetTitle(ctx context.Context, id, title string) error {
	return s.write(ctx, func(tx *wtx) error {
		if err := touch(ctx, tx, id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "UPDATE conversations SET title = ? WHERE id = ?", title, id)
		return err
	})
}

// SetStatus moves a conversation to a new status if the transition is allowed.
func (s *Store) SetStatus(ctx context.Context, id string, to trace.Status) error {
	if _, err := trace.ParseConversationStatus(string(to)); err != nil {
		return fmt.Errorf("storage: %w: %w", err, ErrInvalid)
	}
	return s.write(ctx, func(tx *wtx) error {
		var from trace.Status
		err := tx.QueryRowContext(ctx, "SELECT status FROM conversations WHERE id = ?", id).Scan(&from)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("storage: conversation %q: %w", id, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("storage: read status of %q: %w", id, err)
		}
		if !trace.CanTransition(from, to) {
			return fmt.Errorf("storage: conversation %q cannot go from %s to %s (%s is final): %w", id, from, to, from, ErrInvalid)
		}
		_, err = tx.ExecContext(ctx, "UPDATE conversations SET status = ?, updated_at = ? WHERE id = ?", to, fmtTime(now()), id)
		return err
	})
}

const convColumns = `c.id, c.title, c.agent, c.agent_config, c.status, c.best_attempt_id, c.created_at, c.updated_at`

func scanConversation(sc interface{ Scan(...any) error }, c *Conversation, best *sql.NullInt64, extra ...any) error {
	var cfg, created, updated string
	dst := append([]any{&c.ID, &c.Title, &c.Agent, &cfg, &c.Status, best, &created, &updated}, extra...)
	if err := sc.Scan(dst...); err != nil {
		return err
	}
	c.AgentConfig = json.RawMessage(cfg)
	c.CreatedAt, c.UpdatedAt = parseTime(created), parseTime(updated)
	return nil
}

// ConversationAgent is the agent a conversation names (Conversation's Agent), read alone:
// every turn asks for it.
func (s *Store) ConversationAgent(ctx context.Context, id string) (string, error) {
	var agent string
	err := s.r.QueryRowContext(ctx, "SELECT agent FROM conversations WHERE id = ?", id).Scan(&agent)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("storage: conversation %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("storage: load conversation %q: %w", id, err)
	}
	return agent, nil
}

// Conversation loads one conversation with its metadata and best attempt.
func (s *Store) Conversation(ctx context.Context, id string) (*Conversation, error) {
	c := &Conversation{Metadata: map[string]any{}}
	var best sql.NullInt64
	err := scanConversation(s.r.QueryRowContext(ctx, "SELECT "+convColumns+" FROM conversations c WHERE c.id = ?", id), c, &best)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("storage: conversation %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("storage: load conversation %q: %w", id, err)
	}
	rows, err := s.r.QueryContext(ctx, "SELECT key, value FROM conversation_meta WHERE conv_id = ?", id)
	if err != nil {
		return nil, fmt.Errorf("storage: load metadata of %q: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("storage: load metadata of %q: %w", id, err)
		}
		var val any
		if err := json.Unmarshal([]byte(v), &val); err != nil {
			return nil, fmt.Errorf("storage: metadata %q of %q is corrupt: %w", k, id, err)
		}
		c.Metadata[k] = val
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if best.Valid {
		a, err := s.attempt(ctx, best.Int64)
		if err != nil {
			return nil, err
		}
		c.BestAttempt = a
	}
	return c, nil
}

// ConversationSummary is a row of the conversation list.
type ConversationSummary struct {
	Conversation
	Branches   int `json:"branches"`
	Turns      int `json:"turns"`      // completed turns in the whole tree
	MainLength int `json:"main_turns"` // turns on main
	Pending    int `json:"pending"`    // turns not ended: running, or interrupted awaiting resume or discard
	// Kept counts the turns that did not complete, by status (running, failed, cancelled,
	// interrupted), kept beside their branches; none when empty.
	Kept map[trace.Status]int `json:"kept_turns"`
}

// ListConversations lists every conversation, most recently updated first, with counts, in
// one query (the counts come from indexes, so this stays fast at 100,000 turns).
func (s *Store) ListConversations(ctx context.Context) ([]ConversationSummary, error) {
	runs, err := s.liveRuns(ctx) // first: a journal a dead process left is imported
	if err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+convColumns+`,
		(SELECT count(*) FROM branches b WHERE b.conv_id = c.id),
		(SELECT count(*) FROM turns t WHERE t.conv_id = c.id AND t.status = 'completed'),
		(SELECT coalesce(t.depth + 1, 0) FROM branches b LEFT JOIN turns t ON t.id = b.tip_id WHERE b.conv_id = c.id AND b.name = 'main'),
		(SELECT count(*) FROM turns t WHERE t.conv_id = c.id AND t.status = 'running'),
		(SELECT count(*) FROM turns t WHERE t.conv_id = c.id AND t.status = 'failed'),
		(SELECT count(*) FROM turns t WHERE t.conv_id = c.id AND t.status = 'cancelled'),
		(SELECT count(*) FROM turns t WHERE t.conv_id = c.id AND t.status = 'interrupted')
		FROM conversations c ORDER BY c.updated_at DESC, c.id`)
	if err != nil {
		return nil, fmt.Errorf("storage: list conversations: %w", err)
	}
	var out []ConversationSummary
	for rows.Next() {
		var cs ConversationSummary
		var best sql.NullInt64
		var main sql.NullInt64
		// one count per status: each is a range of the (conv_id, status) index, where a
		// single grouped count would read every turn of the conversation
		var kept [4]int
		if err := scanConversation(rows, &cs.Conversation, &best, &cs.Branches, &cs.Turns, &main,
			&kept[0], &kept[1], &kept[2], &kept[3]); err != nil {
			rows.Close()
			return nil, fmt.Errorf("storage: list conversations: %w", err)
		}
		cs.MainLength = int(main.Int64)
		cs.Kept = map[trace.Status]int{}
		for i, st := range []trace.Status{trace.StatusRunning, trace.StatusFailed, trace.StatusCancelled, trace.StatusInterrupted} {
			if kept[i] > 0 {
				cs.Kept[st] = kept[i]
			}
		}
		out = append(out, cs)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: list conversations: %w", err)
	}
	for i := range out {
		cs := &out[i]
		if cs.Kept[trace.StatusRunning] > 0 {
			// a running turn whose owner is gone is interrupted (a crash left it)
			if err := s.countRunning(ctx, cs); err != nil {
				return nil, err
			}
		}
		for _, r := range runs { // turns in flight are in their journals
			if r.h.Conv == cs.ID {
				cs.Kept[trace.StatusRunning]++
				if r.h.InPlace && cs.Kept[trace.StatusInterrupted] > 0 {
					cs.Kept[trace.StatusInterrupted]-- // its row, taken up
					if cs.Kept[trace.StatusInterrupted] == 0 {
						delete(cs.Kept, trace.StatusInterrupted)
					}
				}
			}
		}
		cs.Pending = cs.Kept[trace.StatusRunning] + cs.Kept[trace.StatusInterrupted]
	}
	return out, nil
}

// countRunning splits a conversation's running turns into those whose owner is alive
// and those it left interrupted.
func (s *Store) countRunning(ctx context.Context, cs *ConversationSummary) error {
	nodes, err := queryNodes(ctx, s.r, "SELECT "+nodeColumns+" FROM turns t WHERE t.conv_id = ? AND t.status = 'running'", cs.ID)
	if err != nil {
		return fmt.Errorf("storage: running turns of %q: %w", cs.ID, err)
	}
	for _, n := range nodes { // stored running: gone, or of an earlier version
		cs.Kept[trace.StatusRunning]--
		cs.Kept[n.Status]++
	}
	if cs.Kept[trace.StatusRunning] <= 0 {
		delete(cs.Kept, trace.StatusRunning)
	}
	return nil
}

// DeleteConversation removes a conversation with all its branches, turns, calls and attempts.
func (s *Store) DeleteConversation(ctx context.Context, id string) error {
	runs, err := s.liveRuns(ctx)
	if err != nil {
		return err
	}
	for _, r := range runs {
		if r.h.Conv == id {
			return fmt.Errorf("storage: conversation %q has a turn in flight: %w; it was not deleted", id, busyError(r.h.Branch, r.h.Depth, r.h.ID, r.owner(), r.h.Started))
		}
	}
	locks := s.deleteLocks()
	err = s.write(ctx, func(tx *wtx) error {
		branches, err := branchRefs(ctx, tx, "SELECT id, name FROM branches WHERE conv_id = ?", id)
		if err != nil {
			return err
		}
		for _, b := range branches {
			if err := locks.take(b.id, b.name); err != nil {
				return fmt.Errorf("storage: conversation %q: %w", id, err)
			}
		}
		// Branch and turn rows point at each other; clearing the pointers first lets the
		// cascade run in any order.
		if _, err := tx.ExecContext(ctx, "UPDATE branches SET tip_id = NULL, fork_turn_id = NULL, forked_from = NULL WHERE conv_id = ?", id); err != nil {
			return fmt.Errorf("storage: delete conversation %q: %w", id, err)
		}
		res, err := tx.ExecContext(ctx, "DELETE FROM conversations WHERE id = ?", id)
		if err != nil {
			return fmt.Errorf("storage: delete conversation %q: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("storage: conversation %q: %w", id, ErrNotFound)
		}
		return sweepContent(ctx, tx)
	})
	locks.release(err == nil)
	return err
}

// sweepContent deletes message lists and contents no longer used by any call or turn
// (shared ones stay): a mark phase walks from every referenced list end to its root.
// The write caches forget what they knew (see sweeps).
func sweepContent(ctx context.Context, tx *wtx) error {
	sweeps.Add(1)
	_, err := tx.ExecContext(ctx, `DELETE FROM list_nodes WHERE id NOT IN (
		WITH RECURSIVE live(id) AS (
			SELECT messages_node FROM calls WHERE messages_node IS NOT NULL
			UNION SELECT history_node FROM calls WHERE history_node IS NOT NULL
			UNION SELECT messages_tail FROM calls WHERE messages_tail IS NOT NULL
			UNION SELECT history_tail FROM calls WHERE history_tail IS NOT NULL
			UNION SELECT snapshot_node FROM turns WHERE snapshot_node IS NOT NULL
			UNION SELECT l.parent_id FROM list_nodes l JOIN live ON l.id = live.id WHERE l.parent_id IS NOT NULL)
		SELECT id FROM live)`)
	if err != nil {
		return fmt.Errorf("storage: sweep message lists: %w", err)
	}
	// A content in use keeps its base (a delta is read with it).
	_, err = tx.ExecContext(ctx, `DELETE FROM contents WHERE id NOT IN (
		WITH used(id) AS (
			SELECT content_id FROM list_nodes
			UNION SELECT completion_id FROM calls WHERE completion_id IS NOT NULL
			UNION SELECT raw_request_id FROM calls WHERE raw_request_id IS NOT NULL
			UNION SELECT raw_response_id FROM calls WHERE raw_response_id IS NOT NULL
			UNION SELECT io_id FROM calls WHERE io_id IS NOT NULL)
		SELECT id FROM used UNION SELECT c.base_id FROM contents c JOIN used ON c.id = used.id WHERE c.base_id IS NOT NULL)`)
	if err != nil {
		return fmt.Errorf("storage: sweep contents: %w", err)
	}
	return nil
}

// MetadataKeys returns a conversation's metadata keys sorted, for stable display.
func (c *Conversation) MetadataKeys() []string {
	keys := make([]string, 0, len(c.Metadata))
	for k := range c.Metadata {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
