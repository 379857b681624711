package sessions

import (
	"context"
	"fmt"
	"sync"

	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
)

// turnCache keeps the turns that pages of branches were read with, by key. After an
// undo, a redo or a fork the workbench reads the last page of every pane again: the
// same turns, or nearly. A page is therefore read as the keys and start times
// of its turns (storage.BranchPathKeys) and only the turns not cached are loaded. A turn
// on a path is completed and a completed turn never changes; a key reused after its turn
// was deleted comes with another start time, so a cached turn is served only for the
// same key and start. Two generations bound it: when the newer fills up the older is
// dropped, so the turns of the pages in use stay.
type turnCache struct {
	mu       sync.Mutex
	cur, old map[string]*trace.Turn
}

// maxCachedTurns is one generation's size: a few panes' pages.
const maxCachedTurns = 400

// get is the cached turn k, or nil.
func (c *turnCache) get(k storage.PathKey) *trace.Turn {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.cur[k.Key]
	if !ok {
		if t, ok = c.old[k.Key]; ok {
			c.putLocked(k.Key, t)
		}
	}
	if !ok || !t.Started.Equal(k.Started) {
		return nil
	}
	return t
}

func (c *turnCache) put(key string, t *trace.Turn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(key, t)
}

func (c *turnCache) putLocked(key string, t *trace.Turn) {
	if c.cur == nil || len(c.cur) >= maxCachedTurns {
		c.old, c.cur = c.cur, map[string]*trace.Turn{}
	}
	c.cur[key] = t
}

// LoadTurns returns a window of the branch's path; its cost is the window, not the
// branch (storage walks the path by jump pointers), and turns read before are not read
// again (see turnCache). A negative from counts from the end: LoadTurns(-n, n) is the
// last page of n turns, with the branch's length in one read. The turns come without
// their calls' requests, completions and histories (which grow with the branch: a page
// of a long conversation held them a thousand times over); Turn gives a turn whole. The
// turns are shared with later reads: callers must not change them.
func (a *Service) LoadTurns(ctx context.Context, conv, branch string, from, limit int) (TurnPage, error) {
	keys, start, total, err := a.store.BranchPathKeys(ctx, conv, branch, from, limit)
	if err != nil {
		return TurnPage{}, err
	}
	p := TurnPage{From: start, Total: total, IDs: make([]string, len(keys)), Turns: make([]*trace.Turn, len(keys))}
	var missing []string
	var at []int
	for i, k := range keys {
		p.IDs[i] = k.Key
		if p.Turns[i] = a.turns.get(k); p.Turns[i] == nil {
			missing = append(missing, k.Key)
			at = append(at, i)
		}
	}
	if len(missing) == 0 {
		return p, nil
	}
	loaded, err := a.store.LoadTurnsWith(ctx, missing, restoreRead)
	if err != nil {
		return TurnPage{}, err
	}
	for j, t := range loaded {
		if !t.Started.Equal(keys[at[j]].Started) {
			return TurnPage{}, fmt.Errorf("load turns of %s: the branch changed while it was read", branch)
		}
		p.Turns[at[j]] = t
		a.turns.put(missing[j], t)
	}
	return p, nil
}
