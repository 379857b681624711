package storage

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// PathKey is a turn of a branch's path as a cache of turns checks it: its key and start
// time (a key reused after its turn was deleted comes with another start time). A turn
// on a path is completed, and a completed turn never changes.
type PathKey struct {
	Key     string
	Started time.Time
}

// pathKeysCTE is pathCTE reading only what a PathKey holds.
const pathKeysCTE = `WITH RECURSIVE p(id, parent_id, depth, started_at) AS (
	SELECT id, parent_id, depth, started_at FROM turns WHERE id = ?1
	UNION ALL
	SELECT t.id, t.parent_id, t.depth, t.started_at FROM turns t JOIN p ON t.id = p.parent_id WHERE t.depth >= ?2)
SELECT id, started_at FROM p`

// BranchPathKeys is BranchPathRange reading each turn's key and start time only: what
// tells a reader holding turns which ones a window of the path needs (a fraction of
// reading the turns' nodes). It returns turns [from, from+limit) root first (limit <= 0:
// up to the tip; a negative from counts from the end), the index of the first and the
// path's length.
func (s *Store) BranchPathKeys(ctx context.Context, convID, branch string, from, limit int) ([]PathKey, int, int, error) {
	b, err := branchByName(ctx, s.r, convID, branch)
	if err != nil {
		return nil, 0, 0, err
	}
	total := b.Length
	start := windowStart(from, total)
	end := total
	if limit > 0 {
		end = min(start+limit, total)
	}
	if !b.tipID.Valid || start >= end {
		return nil, start, total, nil
	}
	top := b.tipID.Int64
	if end < total {
		if top, err = ancestorAtDepth(ctx, s.r, top, end-1); err != nil {
			return nil, 0, 0, err
		}
	}
	rows, err := s.r.QueryContext(ctx, pathKeysCTE, top, start)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("storage: branch path keys: %w", err)
	}
	defer rows.Close()
	out := make([]PathKey, 0, end-start)
	for rows.Next() {
		var id int64
		var started string
		if err := rows.Scan(&id, &started); err != nil {
			return nil, 0, 0, fmt.Errorf("storage: branch path keys: %w", err)
		}
		out = append(out, PathKey{Key: turnKey(id), Started: parseTime(started)})
	}
	if err := rows.Err(); err != nil {
		return nil, 0, 0, fmt.Errorf("storage: branch path keys: %w", err)
	}
	slices.Reverse(out)
	return out, start, total, nil
}
