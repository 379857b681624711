package storage

import (
	"context"
	"fmt"

	"github.com/sessionbench/sessionbench/core/lm"
)

// BranchUsage returns the token usage of every call on each branch's path (root to tip),
// for the workbench's per-pane totals. Each committed turn stores its path's running
// totals (schema version 2), so this is one row per branch, whatever the branches'
// length. Module-level records carry no usage of their own, so summing every stored call
// row counts each model request once. The total is Estimated when any call's count was
// (schema version 4). Empty branches map to a zero Usage.
func (s *Store) BranchUsage(ctx context.Context, convID string) (map[string]lm.Usage, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT b.name, coalesce(t.cum_prompt_tokens, 0), coalesce(t.cum_completion_tokens, 0),
			coalesce(t.cum_cached_tokens, 0), coalesce(t.cum_total_tokens, 0), coalesce(t.cum_estimated, 0) > 0
		FROM branches b LEFT JOIN turns t ON t.id = b.tip_id WHERE b.conv_id = ?`, convID)
	if err != nil {
		return nil, fmt.Errorf("storage: branch usage of %q: %w", convID, err)
	}
	defer rows.Close()
	out := map[string]lm.Usage{}
	for rows.Next() {
		var name string
		var u lm.Usage
		if err := rows.Scan(&name, &u.PromptTokens, &u.CompletionTokens, &u.CachedTokens, &u.TotalTokens, &u.Estimated); err != nil {
			return nil, fmt.Errorf("storage: branch usage of %q: %w", convID, err)
		}
		out[name] = u
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: branch usage of %q: %w", convID, err)
	}
	return out, nil
}

// BranchUsageOf is BranchUsage of one branch: its tip's running totals, one lookup.
func (s *Store) BranchUsageOf(ctx context.Context, convID, branch string) (lm.Usage, error) {
	var u lm.Usage
	err := s.r.QueryRowContext(ctx, `SELECT coalesce(t.cum_prompt_tokens, 0), coalesce(t.cum_completion_tokens, 0),
			coalesce(t.cum_cached_tokens, 0), coalesce(t.cum_total_tokens, 0), coalesce(t.cum_estimated, 0) > 0
		FROM branches b LEFT JOIN turns t ON t.id = b.tip_id WHERE b.conv_id = ? AND b.name = ?`, convID, branch).
		Scan(&u.PromptTokens, &u.CompletionTokens, &u.CachedTokens, &u.TotalTokens, &u.Estimated)
	if err != nil {
		return lm.Usage{}, fmt.Errorf("storage: usage of branch %q of %q: %w", branch, convID, err)
	}
	return u, nil
}
