package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// Attempt is one try of a retrying step with its score (seed 003 attempt record).
type Attempt struct {
	ID        int64           `json:"id"`
	ConvID    string          `json:"conversation"`
	TurnKey   string          `json:"turn,omitempty"` // "" for a conversation-level attempt
	Step      string          `json:"step"`
	N         int             `json:"attempt"` // 1-based per (turn, step)
	Score     float64         `json:"quality_score"`
	Details   json.RawMessage `json:"details"`
	CreatedAt time.Time       `json:"timestamp"`
}

// RecordAttempt stores an attempt of step (within turnKey, or at conversation level when
// turnKey is "") and reports whether it is the best so far. Best is tracked per turn and
// per conversation: an attempt is best when its score is strictly higher than every
// earlier one (the first attempt is best), so ties keep the earlier attempt, as seed 003's
// add_attempt does.
func (s *Store) RecordAttempt(ctx context.Context, convID, turnKey, step string, score float64, details any) (*Attempt, bool, error) {
	if math.IsNaN(score) || math.IsInf(score, 0) {
		return nil, false, fmt.Errorf("storage: attempt score %v is not a finite number: %w", score, ErrInvalid)
	}
	det := []byte("{}")
	if details != nil {
		b, err := json.Marshal(details)
		if err != nil {
			return nil, false, fmt.Errorf("storage: attempt details are not JSON-encodable: %v: %w", err, ErrInvalid)
		}
		det = b
	}
	var turn sql.NullInt64
	if turnKey != "" {
		id, err := parseTurnKey(turnKey)
		if err != nil {
			return nil, false, err
		}
		turn = sql.NullInt64{Int64: id, Valid: true}
	}
	a := &Attempt{ConvID: convID, TurnKey: turnKey, Step: step, Score: score, Details: det, CreatedAt: now()}
	var best bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := touch(ctx, tx, convID); err != nil {
			return err
		}
		if turn.Valid {
			var owner string
			err := tx.QueryRowContext(ctx, "SELECT conv_id FROM turns WHERE id = ?", turn.Int64).Scan(&owner)
			if errors.Is(err, sql.ErrNoRows) || (err == nil && owner != convID) {
				return fmt.Errorf("storage: turn %s of conversation %q: %w", turnKey, convID, ErrNotFound)
			}
			if err != nil {
				return err
			}
		}
		if err := tx.QueryRowContext(ctx, "SELECT count(*) + 1 FROM attempts WHERE conv_id = ? AND turn_id IS ? AND step = ?",
			convID, turn, step).Scan(&a.N); err != nil {
			return fmt.Errorf("storage: count attempts: %w", err)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO attempts(conv_id, turn_id, step, n, score, details, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, convID, turn, step, a.N, score, string(det), fmtTime(a.CreatedAt))
		if err != nil {
			return fmt.Errorf("storage: record attempt: %w", err)
		}
		if a.ID, err = res.LastInsertId(); err != nil {
			return err
		}
		// The conversation's best, and the turn's best when there is a turn.
		res, err = tx.ExecContext(ctx, `UPDATE conversations SET best_attempt_id = ? WHERE id = ? AND (best_attempt_id IS NULL
			OR ? > (SELECT score FROM attempts WHERE id = conversations.best_attempt_id))`, a.ID, convID, score)
		if err != nil {
			return fmt.Errorf("storage: track best attempt: %w", err)
		}
		n, _ := res.RowsAffected()
		best = n > 0
		if turn.Valid {
			res, err = tx.ExecContext(ctx, `UPDATE turns SET best_attempt_id = ? WHERE id = ? AND (best_attempt_id IS NULL
				OR ? > (SELECT score FROM attempts WHERE id = turns.best_attempt_id))`, a.ID, turn.Int64, score)
			if err != nil {
				return fmt.Errorf("storage: track best attempt of turn: %w", err)
			}
			n, _ := res.RowsAffected()
			best = n > 0
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return a, best, nil
}

const attemptColumns = "id, conv_id, turn_id, step, n, score, details, created_at"

func scanAttempt(sc interface{ Scan(...any) error }) (*Attempt, error) {
	a := &Attempt{}
	var turn sql.NullInt64
	var det, created string
	if err := sc.Scan(&a.ID, &a.ConvID, &turn, &a.Step, &a.N, &a.Score, &det, &created); err != nil {
		return nil, err
	}
	if turn.Valid {
		a.TurnKey = turnKey(turn.Int64)
	}
	a.Details, a.CreatedAt = json.RawMessage(det), parseTime(created)
	return a, nil
}

func (s *Store) attempt(ctx context.Context, id int64) (*Attempt, error) {
	a, err := scanAttempt(s.r.QueryRowContext(ctx, "SELECT "+attemptColumns+" FROM attempts WHERE id = ?", id))
	if err != nil {
		return nil, fmt.Errorf("storage: attempt %d: %w", id, err)
	}
	return a, nil
}

// Attempts lists a conversation's attempts in the order they were made.
func (s *Store) Attempts(ctx context.Context, convID string) ([]*Attempt, error) {
	rows, err := s.r.QueryContext(ctx, "SELECT "+attemptColumns+" FROM attempts WHERE conv_id = ? ORDER BY id", convID)
	if err != nil {
		return nil, fmt.Errorf("storage: attempts of %q: %w", convID, err)
	}
	defer rows.Close()
	var out []*Attempt
	for rows.Next() {
		a, err := scanAttempt(rows)
		if err != nil {
			return nil, fmt.Errorf("storage: attempts of %q: %w", convID, err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// BestAttempt returns the best attempt of a turn (turnKey) or of the whole conversation
// (turnKey ""), or nil when there is none.
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
