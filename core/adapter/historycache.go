package adapter

import (
	"sync"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
)

// HistoryCache keeps the history messages of a predictor's last request, so that the
// next one, whose history is mostly the same entries, copies them instead of reading
// each entry's rendering again. Entries are separate maps spread over memory: at 1,000
// turns reading their renderings cost a request 0.1-0.2 ms, where copying their
// messages costs a fraction of that.
//
// The messages of the history's first entries are reused while those entries are the
// same maps (compared by pointer) as when they were cached, under the same rendering
// key, and no map's rendering has been dropped since (sig.RenderingsDropped: a map's
// values changed). Only entries whose rendering is kept with them are cached, up to
// the first that is not. An undo or an edit keeps the entries before it. The cache
// holds its own copy of the messages, never the request's. One per predictor (a
// core.Predict owns one); it is safe for concurrent use, and its zero value is empty.
type HistoryCache struct {
	mu      sync.Mutex
	key     string
	dropped uint64
	maps    []*sig.Map
	ends    []int // ends[i]: how many messages entries 0..i make
	msgs    []lm.Message
}

// messages appends the messages of h's entries to msgs, as historyMessages does: from
// the cache for the entries it holds, then rendering the others and caching them. A nil
// cache renders every entry.
func (c *HistoryCache) messages(msgs []lm.Message, st style, s *sig.Signature, h sig.History) []lm.Message {
	if c == nil || len(h.Messages) == 0 {
		return historyMessages(msgs, st, s, h)
	}
	// read before rendering: a drop while this request renders is seen by the next one
	dropped := sig.RenderingsDropped()
	key := renderKey(st, s)
	c.mu.Lock()
	defer c.mu.Unlock()
	k := 0
	if c.key == key && c.dropped == dropped {
		for n := min(len(c.maps), len(h.Messages)); k < n && c.maps[k] == h.Messages[k]; k++ {
		}
	}
	c.key, c.dropped = key, dropped
	kept := 0
	if k > 0 {
		kept = c.ends[k-1]
	}
	// let go of what is no longer in the history
	clear(c.maps[k:])
	clear(c.msgs[kept:])
	c.maps, c.ends, c.msgs = c.maps[:k], c.ends[:k], c.msgs[:kept]
	msgs = append(msgs, c.msgs...)
	caching := true
	for _, m := range h.Messages[k:] {
		u, a, kept := historyEntry(st, s, key, m)
		from := len(msgs)
		if u != "" {
			msgs = append(msgs, lm.Message{Role: "user", Content: u})
		}
		msgs = append(msgs, lm.Message{Role: "assistant", Content: a})
		if caching = caching && kept; caching {
			c.maps = append(c.maps, m)
			c.msgs = append(c.msgs, msgs[from:]...)
			c.ends = append(c.ends, len(c.msgs))
		}
	}
	return msgs
}
