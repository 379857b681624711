package storage

import (
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
)

// seedPath puts a seeded prefix in the cache only when the cache is checked against the
// database (begun), was not emptied since the prefix was read, holds nothing under the
// key, and is free (or waited for); what it puts there knows the last node's id only.
func TestSeedPath(t *testing.T) {
	msgs := lm.MessagesOf(fixtureMessages("p", 3, 0))
	items := messageItems(msgs)
	chain := make([]hash16, len(items))
	var h hash16
	for i, it := range items {
		h = chainHash(h, it.key(), contentHash(it.Body))
		chain[i] = h
	}
	const key, last = "m\x00agent.answer", 42
	cases := []struct {
		name  string
		setup func(c *writeCache) (gen int64, wait bool)
		want  bool
	}{
		{"put in", func(c *writeCache) (int64, bool) { return c.resets.Load(), true }, true},
		{"cache not begun", func(c *writeCache) (int64, bool) { c.contents = nil; return c.resets.Load(), true }, false},
		{"emptied since the read", func(c *writeCache) (int64, bool) { gen := c.resets.Load(); c.resets.Add(1); return gen, true }, false},
		{"a list cached", func(c *writeCache) (int64, bool) {
			c.paths[key] = listPath{l: itemsOf(items[:1]), nodes: nodePathOf([]nodeRef{{id: 7, depth: 1}})}
			return c.resets.Load(), true
		}, false},
		{"busy, not waiting", func(c *writeCache) (int64, bool) { c.mu.Lock(); return c.resets.Load(), false }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newWriteCache()
			c.contents, c.paths = map[string]contentRef{}, map[string]listPath{}
			gen, wait := tc.setup(c)
			c.seedPath(gen, key, messagesOf(msgs), items, chain, last, wait)
			if !wait {
				c.mu.Unlock()
			}
			got := c.paths[key]
			if put := got.l.Len() == len(items); put != tc.want {
				t.Fatalf("put in: %v, want %v", put, tc.want)
			}
			if !tc.want {
				return
			}
			for i := range got.nodes.len() {
				nd, id := got.nodes.at(i), int64(0)
				if i == len(items)-1 {
					id = last
				}
				if nd.id != id || nd.hash != chain[i] || nd.depth != i+1 {
					t.Errorf("node %d: %+v, want id %d, depth %d and the prefix's hash", i, nd, id, i+1)
				}
			}
		})
	}
}
