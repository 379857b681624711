package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/sessionbench/sessionbench/core/lm"
)

// ReplayLM wraps inner for resuming the pending turn key: a request identical (path,
// messages, parameters) to one the turn already got a successful answer for is answered
// from storage, not sent again; anything else goes to inner. Identical requests within the
// turn are matched to the stored answers in order. inner may be nil, in which case an
// unanswered request fails.
func (s *Store) ReplayLM(key string, inner lm.LM) lm.LM {
	return &replayLM{s: s, key: key, inner: inner, used: map[string]bool{}}
}

type replayLM struct {
	s     *Store
	key   string
	inner lm.LM

	mu   sync.Mutex
	used map[string]bool // call keys already replayed (a re-recorded call keeps its key)
}

func (r *replayLM) Name() string {
	if r.inner == nil {
		return "replay"
	}
	return r.inner.Name()
}

// Replayed reports how many requests were answered from storage so far.
func Replayed(m lm.LM) int {
	r, ok := m.(*replayLM)
	if !ok {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.used)
}

func (r *replayLM) Call(ctx context.Context, req lm.Request) (lm.Response, error) {
	resp, ok, err := r.lookup(ctx, req)
	if err != nil {
		return lm.Response{}, err
	}
	if ok {
		if req.OnDelta != nil && resp.Text != "" {
			req.OnDelta(resp.Text)
		}
		return resp, nil
	}
	if r.inner == nil {
		return lm.Response{}, fmt.Errorf("storage: replay of turn %s: request for %q was never answered and there is no model to ask: %w",
			r.key, req.Meta.Path, ErrNotFound)
	}
	return r.inner.Call(ctx, req)
}

func (r *replayLM) lookup(ctx context.Context, req lm.Request) (lm.Response, bool, error) {
	id, err := parseTurnKey(r.key)
	if err != nil {
		return lm.Response{}, false, err
	}
	rows, err := r.s.r.QueryContext(ctx, `SELECT c.id, c.call_key, c.model, c.completion_id, c.prompt_tokens, c.completion_tokens,
			c.cached_tokens, c.total_tokens, c.attempts, c.raw_response_id, c.raw_response_mode
		FROM calls c WHERE c.turn_id = ? AND c.request_key = ? AND c.error = '' ORDER BY c.seq`,
		id, requestKey(req.Meta.Path, req.Messages, req.Params))
	if err != nil {
		return lm.Response{}, false, fmt.Errorf("storage: replay lookup: %w", err)
	}
	type hit struct {
		id              int64
		key             string
		resp            lm.Response
		completion, raw sql.NullInt64
		rawMode         int
		attempts        sql.NullString
	}
	var hits []hit
	for rows.Next() {
		var h hit
		u := &h.resp.Usage
		if err := rows.Scan(&h.id, &h.key, &h.resp.Model, &h.completion, &u.PromptTokens, &u.CompletionTokens,
			&u.CachedTokens, &u.TotalTokens, &h.attempts, &h.raw, &h.rawMode); err != nil {
			rows.Close()
			return lm.Response{}, false, fmt.Errorf("storage: replay lookup: %w", err)
		}
		hits = append(hits, h)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return lm.Response{}, false, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range hits {
		if r.used[h.key] {
			continue
		}
		var ids []int64
		for _, c := range []sql.NullInt64{h.completion, h.raw} {
			if c.Valid {
				ids = append(ids, c.Int64)
			}
		}
		bodies, err := loadContents(ctx, r.s.r, ids)
		if err != nil {
			return lm.Response{}, false, err
		}
		h.resp.Text = bodies[h.completion.Int64]
		if h.raw.Valid {
			body, err := decodeResponseBody(h.rawMode, bodies[h.raw.Int64])
			if err != nil {
				return lm.Response{}, false, fmt.Errorf("storage: replay: call %d: %w", h.id, err)
			}
			h.resp.ResponseBody = []byte(body)
		}
		if h.attempts.Valid {
			if err := json.Unmarshal([]byte(h.attempts.String), &h.resp.Tries); err != nil {
				return lm.Response{}, false, fmt.Errorf("storage: replay: attempts of call %d are corrupt: %w", h.id, err)
			}
		}
		r.used[h.key] = true
		return h.resp, true, nil
	}
	return lm.Response{}, false, nil
}
