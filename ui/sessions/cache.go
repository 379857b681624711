package sessions

import (
	"context"
	"sync"
	"time"

	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
)

// branchTurns caches the turns of recently restored branches, loaded without their
// requests, so a Send after a Send reads the one new turn instead of the whole branch
// (at 10,000 turns that read dominated a Send). A committed turn never changes, so a
// cached path is exact as long as it ends at the store's tip; every use checks that
// first against the tip read from the store (its key and start time, so a turn id reused
// after a branch was deleted is not mistaken for the old turn). Whatever moves the tip
// (a fork, undo, redo, edit, replay, resume, another process) is therefore seen; the
// cache is only ever a faster way to read the same path.
type branchTurns struct {
	mu      sync.Mutex
	entries map[string]*pathEntry // by conv + "\x00" + branch
	order   []string              // least recently used first
}

// maxCachedBranches bounds the cache: the branches in the open panes, roughly.
const maxCachedBranches = 4

// pathEntry is one branch path, root first. Its slices are never appended to in place
// (a longer path is a new entry), so a restore still reading an old entry is safe.
type pathEntry struct {
	keys    []string
	started []time.Time
	turns   []*trace.Turn
}

func (c *branchTurns) get(k string) *pathEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[k]
}

func (c *branchTurns) put(k string, e *pathEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]*pathEntry{}
	}
	for i, o := range c.order {
		if o == k {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
	c.order = append(c.order, k)
	c.entries[k] = e
	for len(c.order) > maxCachedBranches {
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
}

// matches reports whether the entry's turn at i is node n.
func (e *pathEntry) matches(i int, n *storage.TurnNode) bool {
	return i >= 0 && i < len(e.keys) && e.keys[i] == n.Key && e.started[i].Equal(n.Started)
}

// branchPath returns the branch's path, root first, with the turns as core.Restore needs
// them (no requests): from the cache when it holds the store's current path, extended by
// the new tip when one turn was committed since, cut back after an undo, and otherwise
// loaded whole. The entry is shared: callers must not change it or its turns.
func (a *Service) branchPath(ctx context.Context, conv, branch string) (*pathEntry, error) {
	k := conv + "\x00" + branch
	tail, total, err := a.store.BranchPathTail(ctx, conv, branch, 2)
	if err != nil {
		return nil, err
	}
	if total == 0 {
		e := &pathEntry{}
		a.cache.put(k, e)
		return e, nil
	}
	tip := tail[len(tail)-1]
	if e := a.cache.get(k); e != nil {
		switch {
		case len(e.keys) >= total && e.matches(total-1, tip):
			// the same path, or an undo moved the tip back along it
			if len(e.keys) > total {
				e = &pathEntry{keys: e.keys[:total:total], started: e.started[:total:total], turns: e.turns[:total:total]}
				a.cache.put(k, e)
			}
			return e, nil
		case len(e.keys) == total-1 && len(tail) == 2 && e.matches(total-2, tail[0]):
			// one turn committed after the cached tip: read just that one
			ts, err := a.store.LoadTurnsWith(ctx, []string{tip.Key}, storage.LoadOptions{NoRequests: true})
			if err != nil {
				return nil, err
			}
			ne := &pathEntry{keys: append(e.keys[:len(e.keys):len(e.keys)], tip.Key),
				started: append(e.started[:len(e.started):len(e.started)], tip.Started),
				turns:   append(e.turns[:len(e.turns):len(e.turns)], ts[0])}
			a.cache.put(k, ne)
			return ne, nil
		}
	}
	p, err := a.store.LoadBranchRangeWith(ctx, conv, branch, 0, 0, storage.LoadOptions{NoRequests: true})
	if err != nil {
		return nil, err
	}
	e := &pathEntry{keys: p.Keys, turns: p.Turns, started: make([]time.Time, len(p.Nodes))}
	for i, n := range p.Nodes {
		e.started[i] = n.Started
	}
	a.cache.put(k, e)
	return e, nil
}

// index is the position of turn key on the path, or -1.
func (e *pathEntry) index(key string) int {
	for i, k := range e.keys {
		if k == key {
			return i
		}
	}
	return -1
}
