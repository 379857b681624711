package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/sessionbench/sessionbench/core/redact"
	"github.com/sessionbench/sessionbench/core/trace"
)

// Attempt is a stored attempt: the engine's record of one scored try of a retrying step
// (trace.Attempt, seed 003) and where it is kept.
type Attempt struct {
	ID      int64  `json:"id"`
	ConvID  string `json:"conversation"`
	TurnKey string `json:"turn"`
	trace.Attempt
}

// insertAttempts stores a turn's attempts with the turn, replacing any stored before. For a completed turn (track) it moves the turn's and
// the conversation's best attempt: a stored attempt is replaced only by a strictly higher
// score, so ties keep the earlier one, as seed 003's add_attempt does. Attempts of a turn
// that did not complete are kept for diagnosis but are never a best.
func insertAttempts(ctx context.Context, tx *wtx, convID string, turnID int64, attempts []*trace.Attempt, track bool) error {
	if len(attempts) == 0 {
		return nil // nothing stores attempts before its turn ends, so there are none to replace
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM attempts WHERE turn_id = ?", turnID); err != nil {
		return fmt.Errorf("storage: attempts of turn %d: %w", turnID, err)
	}
	for _, a := range attempts {
		if a == nil {
			return fmt.Errorf("storage: turn %d: nil attempt: %w", turnID, ErrInvalid)
		}
		if math.IsNaN(a.Score) || math.IsInf(a.Score, 0) {
			return fmt.Errorf("storage: attempt %d of %s scores %v, not a finite number: %w", a.N, a.Step, a.Score, ErrInvalid)
		}
		det, err := jsonOf(a.Details)
		if err != nil {
			return fmt.Errorf("storage: details of attempt %d of %s: %v: %w", a.N, a.Step, err, ErrInvalid)
		}
		if !det.Valid {
			det.String = "null"
		}
		calls, err := json.Marshal(append([]string{}, a.Calls...))
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO attempts(conv_id, turn_id, step, n, score, details, created_at,
			summary, best, error, calls) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, convID, turnID, a.Step, a.N, a.Score, det.String, fmtTime(a.Time),
			a.Summary, a.Best, redact.String(a.Error), string(calls))
		if err != nil {
			return fmt.Errorf("storage: record attempt %d of %s: %w", a.N, a.Step, err)
		}
		if !track || a.Error != "" {
			continue
		}
		id, err := res.LastInsertId()
		if err != nil {
			return err
		}
		for _, q := range []string{
			`UPDATE turns SET best_attempt_id = ?1 WHERE id = ?2 AND (best_attempt_id IS NULL
				OR ?3 > (SELECT score FROM attempts WHERE id = turns.best_attempt_id))`,
			`UPDATE conversations SET best_attempt_id = ?1 WHERE id = ?4 AND (best_attempt_id IS NULL
				OR ?3 > (SELECT score FROM attempts WHERE id = conversations.best_attempt_id))`,
		} {
			if _, err := tx.ExecContext(ctx, q, id, turnID, a.Score, convID); err != nil {
				return fmt.Errorf("storage: track the best attempt: %w", err)
			}
		}
	}
	return nil
}

const attemptColumns = "id, conv_id, turn_id, step, n, score, details, created_at, summary, best, error, calls"

func scanAttempt(sc interface{ Scan(...any) error }, dec *decoder) (*Attempt, error) {
	a := &Attempt{}
	var turn sql.NullInt64
	var det, created, calls string
	if err := sc.Scan(&a.ID, &a.ConvID, &turn, &a.Step, &a.N, &a.Score, &det, &created, &a.Summary, &a.Best, &a.Error, &calls); err != nil {
		return nil, err
	}
	if turn.Valid {
		a.TurnKey = turnKey(turn.Int64)
	}
	a.Time = parseTime(created)
	var err error
	if det != "null" {
		if a.Details, err = dec.mapOf(sql.NullString{String: det, Valid: true}); err != nil {
			return nil, fmt.Errorf("storage: details of attempt %d are corrupt: %w", a.ID, err)
		}
	}
	if err := json.Unmarshal([]byte(calls), &a.Calls); err != nil {
		return nil, fmt.Errorf("storage: calls of attempt %d are corrupt: %w", a.ID, err)
	}
	if len(a.Calls) == 0 {
		a.Calls = nil
	}
	return a, nil
}

func queryAttempts(ctx context.Context, q querier, where string, args ...any) ([]*Attempt, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+attemptColumns+" FROM attempts WHERE "+where+" ORDER BY id", args...)
	if err != nil {
		return nil, fmt.Errorf("storage: attempts: %w", err)
	}
	defer rows.Close()
	dec := newDecoder()
	var out []*Attempt
	for rows.Next() {
		a, err := scanAttempt(rows, dec)
		if err != nil {
			return nil, fmt.Errorf("storage: attempts: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// loadAttempts reads the attempts of turns, in the order they were made.
func loadAttempts(ctx context.Context, q querier, turnIDs []int64) (map[int64][]*trace.Attempt, error) {
	out := map[int64][]*trace.Attempt{}
	if len(turnIDs) == 0 {
		return out, nil
	}
	as, err := queryAttempts(ctx, q, "turn_id IN (SELECT value FROM json_each(?))", idsJSON(turnIDs))
	if err != nil {
		return nil, err
	}
	for _, a := range as {
		id, err := parseTurnKey(a.TurnKey)
		if err != nil {
			return nil, err
		}
		out[id] = append(out[id], &a.Attempt)
	}
	return out, nil
}

// Attempts lists a conversation's attempts in the order they were made.
func (s *Store) Attempts(ctx context.Context, convID string) ([]*Attempt, error) {
	return queryAttempts(ctx, s.r, "conv_id = ?", convID)
}

// BestAttempt returns the best attempt of a completed turn (turnKey) or of the whole
// conversation (turnKey ""), or nil when there is none.
func (s *Store) BestAttempt(ctx context.Context, convID, turnKey string) (*Attempt, error) {
	var id sql.NullInt64
	var err error
	if turnKey == "" {
		err = s.r.QueryRowContext(ctx, "SELECT best_attempt_id FROM conversations WHERE id = ?", convID).Scan(&id)
	} else {
		tid, perr := parseTurnKey(turnKey)
		if perr != nil {
			return nil, perr
		}
		err = s.r.QueryRowContext(ctx, "SELECT best_attempt_id FROM turns WHERE id = ? AND conv_id = ?", tid, convID).Scan(&id)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("storage: best attempt of %q %s: %w", convID, turnKey, ErrNotFound)
	}
	if err != nil || !id.Valid {
		return nil, err
	}
	return s.attempt(ctx, id.Int64)
}

func (s *Store) attempt(ctx context.Context, id int64) (*Attempt, error) {
	as, err := queryAttempts(ctx, s.r, "id = ?", id)
	if err != nil {
		return nil, err
	}
	if len(as) == 0 {
		return nil, fmt.Errorf("storage: attempt %d: %w", id, ErrNotFound)
	}
	return as[0], nil
}
