package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/trace"
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

// lookup finds the first answer the turn got, not replayed yet, to a request identical
// to req: same predictor path, messages and parameters (the turn's calls are few; they are
// read with their requests and compared).
func (r *replayLM) lookup(ctx context.Context, req lm.Request) (lm.Response, bool, error) {
	id, err := parseTurnKey(r.key)
	if err != nil {
		return lm.Response{}, false, err
	}
	calls, err := loadCalls(ctx, r.s.r, []int64{id}, LoadOptions{}, newDecoder())
	if err != nil {
		return lm.Response{}, false, fmt.Errorf("storage: replay lookup: %w", err)
	}
	params, err := json.Marshal(req.Params)
	if err != nil {
		return lm.Response{}, false, fmt.Errorf("storage: replay lookup: %w", err)
	}
	var hits []*trace.Call
	trace.WalkCalls(calls[id], func(c *trace.Call, _ int) {
		if c.Error != "" || c.Path != req.Meta.Path || !sameRequest(c.Messages, req.Messages) {
			return
		}
		if p, err := json.Marshal(c.Params); err == nil && string(p) == string(params) {
			hits = append(hits, c)
		}
	})
	slices.SortStableFunc(hits, func(a, b *trace.Call) int { return a.Started.Compare(b.Started) })
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range hits {
		if r.used[c.ID] {
			continue
		}
		r.used[c.ID] = true
		resp := lm.Response{Text: c.Completion, Model: c.Model, Tries: c.Tries, Usage: lm.Usage{
			PromptTokens: c.Usage.PromptTokens, CompletionTokens: c.Usage.CompletionTokens,
			CachedTokens: c.Usage.CachedTokens, TotalTokens: c.Usage.TotalTokens}}
		if c.RawResponse != "" {
			resp.ResponseBody = []byte(c.RawResponse)
		}
		return resp, true, nil
	}
	return lm.Response{}, false, nil
}

// sameRequest reports whether a recorded request holds the messages of req.
func sameRequest(rec, req lm.MessageList) bool {
	return rec.Len() == req.Len() && rec.CommonPrefix(req) == req.Len()
}
