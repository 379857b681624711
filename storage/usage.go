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
	rows, err := s.r.QueryContext(ctx, `WITH RECURSIVE path(branch_id, turn_id) AS (
			SELECT b.id, b.tip_id FROM branches b WHERE b.conv_id = ?1 AND b.tip_id IS NOT NULL
			UNION ALL
			SELECT p.branch_id, t.parent_id FROM path p JOIN turns t ON t.id = p.turn_id WHERE t.parent_id IS NOT NULL
		)
		SELECT b.name, coalesce(sum(c.prompt_tokens), 0), coalesce(sum(c.completion_tokens), 0),
			coalesce(sum(c.cached_tokens), 0), coalesce(sum(c.total_tokens), 0)
		FROM branches b
		LEFT JOIN path p ON p.branch_id = b.id
		LEFT JOIN calls c ON c.turn_id = p.turn_id
		WHERE b.conv_id = ?1
		GROUP BY b.id`, convID)
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
