package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sessionbench/sessionbench/core/lm"
)

// FirstCall is what a branch's next turn's first call sends besides its new inputs, as
// the process that ran the branch's last turn rendered it (core.Session.NextCallHistory):
// a new process makes that call from it while it restores the branch's session, and
// checks it against the session's own request (ui/sessions/speculate.go). Kept one per
// branch, in rows of firstCallRowMessages messages, so that a branch that grew rewrites
// the rows from its first changed message (its last rows), not the whole history.
type FirstCall struct {
	// Tip is the key of the turn the next turn follows: what FirstCall reads is only of
	// use while it is the branch's tip.
	Tip string
	// Agent identifies the agent as defined when it was rendered.
	Agent string
	// Path is the predictor's call path; its inputs are the turn's inputs named Fields.
	Path   string
	Fields []string
	// History is the run of messages its request holds for its history.
	History lm.MessageList
}

// firstCallRowMessages is how many messages a first_call_rows row holds.
const firstCallRowMessages = 128

// PutFirstCall keeps fc for the branch's next turn. held says how many of fc.History's
// first messages the store holds already, as the FirstCall after turn prevTip held them
// (one this process put or read): the rows before the first that changed are kept when
// the store still holds that FirstCall, and all are written otherwise. The write asks
// for no sync of its own: it is a cache.
func (s *Store) PutFirstCall(ctx context.Context, convID, branch string, fc *FirstCall, prevTip string, held int) error {
	tip, err := parseTurnKey(fc.Tip)
	if err != nil {
		return fmt.Errorf("storage: first call of branch %s: %w", branch, err)
	}
	fields, err := json.Marshal(fc.Fields)
	if err != nil {
		return fmt.Errorf("storage: first call of branch %s: %w", branch, err)
	}
	leave, ok := s.warm.join() // Close waits for it
	if !ok {
		return nil
	}
	defer leave()
	return s.writeLight(ctx, func(tx *wtx) error {
		return putFirstCall(ctx, tx, convID, branch, fc, tip, string(fields), prevTip, held)
	})
}

// putFirstCall is PutFirstCall's write, in tx (Warm runs it too).
func putFirstCall(ctx context.Context, tx *wtx, convID, branch string, fc *FirstCall, tip int64, fields, prevTip string, held int) error {
	n := fc.History.Len()
	var id int64
	if err := tx.QueryRowContext(ctx, `SELECT id FROM branches WHERE conv_id = ? AND name = ?`, convID, branch).Scan(&id); err != nil {
		return fmt.Errorf("storage: first call of branch %s: %w", branch, err)
	}
	// the rows kept: those before the first changed message, when the store holds
	// what the caller compared with
	keep := 0
	var oldTip int64
	var oldAgent, oldPath string
	var oldN int
	err := tx.QueryRowContext(ctx, `SELECT tip_id, agent, path, messages FROM first_calls WHERE branch_id = ?`, id).Scan(&oldTip, &oldAgent, &oldPath, &oldN)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return fmt.Errorf("storage: first call of branch %s: %w", branch, err)
	case turnKey(oldTip) == prevTip && oldAgent == fc.Agent && oldPath == fc.Path:
		keep = min(held, oldN, n) / firstCallRowMessages
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO first_calls(branch_id, tip_id, agent, path, fields, messages) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT(branch_id) DO UPDATE SET tip_id = excluded.tip_id, agent = excluded.agent, path = excluded.path,
			fields = excluded.fields, messages = excluded.messages`, id, tip, fc.Agent, fc.Path, fields, n); err != nil {
		return fmt.Errorf("storage: first call of branch %s: %w", branch, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM first_call_rows WHERE branch_id = ? AND seq >= ?`, id, keep); err != nil {
		return fmt.Errorf("storage: first call of branch %s: %w", branch, err)
	}
	for seq := keep; seq*firstCallRowMessages < n; seq++ {
		body := encodeRow(fc.History.Sub(seq*firstCallRowMessages, min(n, (seq+1)*firstCallRowMessages)))
		if _, err := tx.ExecContext(ctx, `INSERT INTO first_call_rows(branch_id, seq, body) VALUES (?, ?, ?)`, id, seq, body); err != nil {
			return fmt.Errorf("storage: first call of branch %s: %w", branch, err)
		}
	}
	return nil
}

// FirstCall reads the branch's FirstCall when it follows the branch's tip (nil
// otherwise), and the conversation's agent (as Conversation.Agent names it), in one
// read (a hot read: hotread.go). Rows that do not make the messages the header counts are an error (the
// caller makes no call ahead).
func (s *Store) FirstCall(ctx context.Context, convID, branch string) (fc *FirstCall, agentRef string, err error) {
	var msgs []lm.Message
	rows, err := s.hotReads(ctx).QueryContext(ctx, `SELECT f.tip_id, f.agent, f.path, f.fields, f.messages, c.agent, r.seq, r.body
		FROM first_calls f JOIN branches b ON b.id = f.branch_id AND b.tip_id = f.tip_id
		JOIN conversations c ON c.id = b.conv_id
		LEFT JOIN first_call_rows r ON r.branch_id = f.branch_id
		WHERE b.conv_id = ? AND b.name = ? ORDER BY r.seq`, convID, branch)
	if err != nil {
		return nil, "", fmt.Errorf("storage: first call of branch %s: %w", branch, err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var tip int64
		var fields string
		var seq sql.NullInt64
		var body sql.NullString // one copy of the row, which its messages' texts are parts of
		h := &FirstCall{}
		if err := rows.Scan(&tip, &h.Agent, &h.Path, &fields, &n, &agentRef, &seq, &body); err != nil {
			return nil, "", fmt.Errorf("storage: first call of branch %s: %w", branch, err)
		}
		if fc == nil {
			fc, h.Tip = h, turnKey(tip)
			if err := json.Unmarshal([]byte(fields), &fc.Fields); err != nil {
				return nil, "", fmt.Errorf("storage: first call of branch %s: fields: %w", branch, err)
			}
			msgs = make([]lm.Message, 0, min(max(n, 0), 1<<16)) // as the header says, which may be corrupt
		}
		if !seq.Valid {
			continue // no rows: no messages
		}
		if int(seq.Int64)*firstCallRowMessages != len(msgs) {
			return nil, "", fmt.Errorf("storage: first call of branch %s: row %d after %d messages: %w", branch, seq.Int64, len(msgs), errPackCorrupt)
		}
		if msgs, err = decodeRow(msgs, body.String); err != nil {
			return nil, "", fmt.Errorf("storage: first call of branch %s: row %d: %w", branch, seq.Int64, err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("storage: first call of branch %s: %w", branch, err)
	}
	if fc == nil {
		return nil, "", nil
	}
	if len(msgs) != n {
		return nil, "", fmt.Errorf("storage: first call of branch %s: %d messages of %d: %w", branch, len(msgs), n, errPackCorrupt)
	}
	fc.History = lm.ListOf(msgs)
	return fc, agentRef, nil
}

// encodeRow is a first_call_rows body: its messages' count, then each message's role,
// content and extra (as a pack writes strings: each text once, its repeats as its index).
func encodeRow(l lm.MessageList) []byte {
	w := &packWriter{strs: map[string]uint64{}}
	w.uint(uint64(l.Len()))
	for _, m := range l.All() {
		w.str(m.Role)
		w.str(m.Content)
		w.str(m.Extra)
	}
	return w.buf
}

// decodeRow appends the messages of a row's body to msgs; their texts are parts of
// body.
func decodeRow(msgs []lm.Message, body string) ([]lm.Message, error) {
	r := &packReader{data: body}
	n := r.uint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		msgs = append(msgs, lm.Message{Role: r.str(), Content: r.str(), Extra: r.str()})
	}
	if r.err == nil && r.pos != len(body) {
		r.fail()
	}
	return msgs, r.err
}
