package adapter

import (
	"slices"
	"sync"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
)

// RequestCache keeps what a predictor's next request repeats of its last: its system
// message and demos, and its history's messages, so that the next request, whose
// history is mostly the same entries, shares them instead of reading each entry's
// rendering again. Entries are separate maps spread over memory: at 1,000 turns reading
// their renderings cost a request 0.1-0.2 ms, and copying their messages into each
// request 0.1 ms more (BenchmarkSend at 10,000 turns: 2.1 MB allocated a Send with the
// copy, 0.15 MB without).
//
// The system message is reused for the same signature (the same value, by pointer:
// signatures are not changed once made) under the same adapter, and shared with the
// demos' messages while they read the same. The messages of the history's first
// entries are reused while those entries are the same maps (compared by pointer) as
// when they were cached, under the same rendering key, and no map's rendering has been
// dropped since (sig.RenderingsDropped: a map's values changed). Only entries whose
// rendering is kept with them are cached, up to the first that is not. An undo or an
// edit keeps the entries before it.
//
// A request's list (historyList) shares the cache's array: one run of it for the
// entries cached. The cache only ever appends to that array past what it has lent;
// what would write where a list already reads (after an undo or an edit, the entries
// after the ones kept) goes to a new array, so every list stays what it was when it was
// made. One per predictor (a core.Predict owns one); it is safe for concurrent use, and
// its zero value is empty.
type RequestCache struct {
	mu sync.Mutex
	// the system message, made for sysSig under sysStyle, and the demos' messages
	sysSig   *sig.Signature
	sysStyle string
	sys      string
	head     []lm.Message // system, then the demos'; lent whole
	// the history: maps[i]'s messages end at ends[i] in msgs, rendered under key; lists
	// read msgs[:lent]
	key     string
	dropped uint64
	maps    []*sig.Map
	ends    []int32
	msgs    []lm.Message
	lent    int
}

// systemLocked is systemMessage(st, s), kept for the next request (c.mu held).
func (c *RequestCache) systemLocked(st style, s *sig.Signature) string {
	if c.sysSig != s || c.sysStyle != st.name() {
		c.sysSig, c.sysStyle, c.sys, c.head = s, st.name(), systemMessage(st, s), nil
	}
	return c.sys
}

// headOf is the system message then the demos' messages, kept for the next requests
// while they read the same. A nil cache keeps nothing.
func (c *RequestCache) headOf(st style, s *sig.Signature, demos []*sig.Map) []lm.Message {
	if c == nil {
		return append([]lm.Message{{Role: "system", Content: systemMessage(st, s)}}, formatDemos(st, s, demos)...)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	sys := c.systemLocked(st, s)
	// the demos are formatted each time (a demo's values may change in place), and the
	// head kept shared while they read the same
	d := formatDemos(st, s, demos)
	if c.head == nil || !slices.Equal(c.head[1:], d) {
		c.head = append([]lm.Message{{Role: "system", Content: sys}}, d...)
	}
	return c.head
}

// historyList is the messages of h's entries, as historyMessages renders them: the
// entries the cache holds as one run of its array, then the others, rendered and
// cached. A nil cache renders every entry.
func (c *RequestCache) historyList(st style, s *sig.Signature, h sig.History) lm.MessageList {
	if c == nil || len(h.Messages) == 0 {
		return lm.ListOf(historyMessages(make([]lm.Message, 0, 2*len(h.Messages)), st, s, h))
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
	// let go of what is no longer in the history: in place past what lists read, else
	// in a new array (the messages kept copied, once per undo or edit)
	clear(c.maps[k:])
	c.maps, c.ends = c.maps[:k], c.ends[:k]
	if held < c.lent {
		c.msgs, c.lent = append(make([]lm.Message, 0, held+held/4+2*(len(h.Messages)-k)), c.msgs[:held]...), 0
	} else {
		clear(c.msgs[held:])
		c.msgs = c.msgs[:held]
	}
	// The entries after the first k are rendered, and those to cache copied once at the
	// end: copied entry by entry, 4,000 small copies (each with the collector's write
	// barriers when it runs) were a third of a long history's fill.
	var fresh []lm.Message
	caching := true
	c.maps = roomFor(c.maps, len(h.Messages)-k)
	c.ends = roomFor(c.ends, len(h.Messages)-k)
	for _, m := range h.Messages[k:] {
		u, a, kept := historyEntry(st, s, key, m)
		if u != "" {
			fresh = append(fresh, lm.Message{Role: "user", Content: u})
		}
		fresh = append(fresh, lm.Message{Role: "assistant", Content: a})
		if caching = caching && kept; caching {
			c.maps = append(c.maps, m)
			c.ends = append(c.ends, int32(held+len(fresh)))
		}
	}
	end := held
	if len(c.ends) > k {
		end = int(c.ends[len(c.ends)-1])
		c.msgs = append(roomFor(c.msgs, end-held), fresh[:end-held]...)
	}
	c.lent = max(c.lent, end)
	return lm.ListOf(c.msgs[:end:end], fresh[end-held:])
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
