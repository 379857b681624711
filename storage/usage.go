package storage

import (
	"context"
	"fmt"

	"github.com/sessionbench/sessionbench/core/lm"
)

// BranchUsage sums the token usage of every call on each branch's path (root to tip),
// for the workbench's per-pane totals. It is one aggregate query for the whole
// conversation: the paths are walked up parent links in a recursive CTE and joined to
// the calls by turn. Module-level records carry no usage of their own, so summing every
// stored call row counts each model request once. Empty branches map to a zero Usage.
func (s *Store) BranchUsage(ctx context.Context, convID string) (map[string]lm.Usage, error) {
	// Paths share their prefixes, so walking each branch's path separately reads the
	// shared turns once per branch (20 forks of a 100,000-turn branch: millions of rows).
	// Instead the tree is walked once from its roots down, each turn carrying the usage
	// of its path so far; a branch's usage is then its tip's running total.
	rows, err := s.r.QueryContext(ctx, `WITH RECURSIVE cum(id, p, c, ca, tt) AS (
			SELECT t.id, (SELECT coalesce(sum(prompt_tokens), 0) FROM calls WHERE turn_id = t.id),
				(SELECT coalesce(sum(completion_tokens), 0) FROM calls WHERE turn_id = t.id),
				(SELECT coalesce(sum(cached_tokens), 0) FROM calls WHERE turn_id = t.id),
				(SELECT coalesce(sum(total_tokens), 0) FROM calls WHERE turn_id = t.id)
			FROM turns t WHERE t.conv_id = ?1 AND t.parent_id IS NULL
			UNION ALL
			SELECT t.id, cum.p + (SELECT coalesce(sum(prompt_tokens), 0) FROM calls WHERE turn_id = t.id),
				cum.c + (SELECT coalesce(sum(completion_tokens), 0) FROM calls WHERE turn_id = t.id),
				cum.ca + (SELECT coalesce(sum(cached_tokens), 0) FROM calls WHERE turn_id = t.id),
				cum.tt + (SELECT coalesce(sum(total_tokens), 0) FROM calls WHERE turn_id = t.id)
			FROM turns t JOIN cum ON t.parent_id = cum.id)
		SELECT b.name, coalesce(cum.p, 0), coalesce(cum.c, 0), coalesce(cum.ca, 0), coalesce(cum.tt, 0)
		FROM branches b LEFT JOIN cum ON cum.id = b.tip_id
		WHERE b.conv_id = ?1`, convID)
	if err != nil {
		return nil, fmt.Errorf("storage: branch usage of %q: %w", convID, err)
	}
	defer rows.Close()
	out := map[string]lm.Usage{}
	for rows.Next() {
		var name string
		var u lm.Usage
		if err := rows.Scan(&name, &u.PromptTokens, &u.CompletionTokens, &u.CachedTokens, &u.TotalTokens); err != nil {
			return nil, fmt.Errorf("storage: branch usage of %q: %w", convID, err)
		}
		out[name] = u
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: branch usage of %q: %w", convID, err)
	}
	return out, nil
}
