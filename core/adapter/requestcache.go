package adapter

import (
	"slices"
	"sync"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
)

// RequestCache keeps what a predictor's next request repeats of its last: its system
// message, and its history's messages, so that the next request, whose history is
// mostly the same entries, copies them instead of reading each entry's rendering again.
// Entries are separate maps spread over memory: at 1,000 turns reading their renderings
// cost a request 0.1-0.2 ms, where copying their messages costs a fraction of that.
//
// The system message is reused for the same signature (the same value, by pointer:
// signatures are not changed once made) under the same adapter. The messages of the
// history's first entries are reused while those entries are the same maps (compared by
// pointer) as when they were cached, under the same rendering key, and no map's
// rendering has been dropped since (sig.RenderingsDropped: a map's values changed).
// Only entries whose rendering is kept with them are cached, up to the first that is
// not. An undo or an edit keeps the entries before it. The cache holds its own copy of
// the messages, never the request's. One per predictor (a core.Predict owns one); it
// is safe for concurrent use, and its zero value is empty.
type RequestCache struct {
	mu sync.Mutex
	// the system message, made for sysSig under sysStyle
	sysSig   *sig.Signature
	sysStyle string
	sys      string
	// the history: maps[i]'s messages end at ends[i] in msgs, rendered under key
	key     string
	dropped uint64
	maps    []*sig.Map
	ends    []int32
	msgs    []lm.Message
}

// system is systemMessage(st, s), kept for the next request. A nil cache keeps nothing.
func (c *RequestCache) system(st style, s *sig.Signature) string {
	if c == nil {
		return systemMessage(st, s)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sysSig != s || c.sysStyle != st.name() {
		c.sysSig, c.sysStyle, c.sys = s, st.name(), systemMessage(st, s)
	}
	return c.sys
}

// history appends the messages of h's entries to msgs, as historyMessages does: from
// the cache for the entries it holds, then rendering the others and caching them. A nil
// cache renders every entry.
func (c *RequestCache) history(msgs []lm.Message, st style, s *sig.Signature, h sig.History) []lm.Message {
	if c == nil || len(h.Messages) == 0 {
		return historyMessages(msgs, st, s, h)
	}
	// read before rendering: a drop while this request renders is seen by the next one
	dropped := sig.RenderingsDropped()
	key := renderKey(st, s)
	c.mu.Lock()
	defer c.mu.Unlock()
	// k: how many of the history's first entries the cache holds
	k, n := 0, 0
	if c.key == key && c.dropped == dropped {
		n = min(len(c.maps), len(h.Messages))
	}
	for k < n && c.maps[k] == h.Messages[k] {
		k++
	}
	c.key, c.dropped = key, dropped
	held := 0 // their messages
	if k > 0 {
		held = int(c.ends[k-1])
	}
	// let go of what is no longer in the history
	clear(c.maps[k:])
	clear(c.msgs[held:])
	c.maps, c.ends, c.msgs = c.maps[:k], c.ends[:k], c.msgs[:held]
	msgs = append(msgs, c.msgs...)
	// The entries after the first k are rendered into msgs, and those to cache copied
	// once at the end: copied entry by entry, 4,000 small copies (each with the
	// collector's write barriers when it runs) were a third of a long history's fill.
	from, caching := len(msgs), true
	c.maps = roomFor(c.maps, len(h.Messages)-k)
	c.ends = roomFor(c.ends, len(h.Messages)-k)
	for _, m := range h.Messages[k:] {
		u, a, kept := historyEntry(st, s, key, m)
		if u != "" {
			msgs = append(msgs, lm.Message{Role: "user", Content: u})
		}
		msgs = append(msgs, lm.Message{Role: "assistant", Content: a})
		if caching = caching && kept; caching {
			c.maps = append(c.maps, m)
			c.ends = append(c.ends, int32(held+len(msgs)-from))
		}
	}
	if len(c.ends) > k {
		n := int(c.ends[len(c.ends)-1]) - held
		c.msgs = append(roomFor(c.msgs, n), msgs[from:from+n]...)
	}
	return msgs
}

// roomFor is s with room for n more elements and, when it must grow for them, for a
// quarter more besides, as append leaves: the requests after a fill add an entry each,
// and a cache filled to its capacity would be copied whole by the next one.
func roomFor[E any](s []E, n int) []E {
	if cap(s)-len(s) >= n {
		return s
	}
	return slices.Grow(s, n+(len(s)+n)/4)
}
