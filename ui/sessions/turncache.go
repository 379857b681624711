package sessions

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
)

// turnCache keeps the turns that pages of branches were read with, by key. After an
// undo, a redo or a fork the workbench reads the last page of every pane again: the
// same turns, or nearly. A page is therefore read as the keys and start times
// of its turns (storage.BranchPathKeys) and only the turns not cached are loaded.
type turnCache = pathCache[*trace.Turn]

// pathCache keeps what was read of turns on a path, by key (with more after it, such as
// a call id). A turn on a path is completed and a completed turn never changes; a key
// reused after its turn was deleted comes with another start time, so a value is served
// only for the same key and start. Two generations bound it: when the newer fills up
// the older is dropped, so the values of the turns in use stay.
type pathCache[V any] struct {
	mu       sync.Mutex
	cur, old map[string]pathValue[V]
}

type pathValue[V any] struct {
	started time.Time
	v       V
}

// maxCachedTurns is one generation's size: a few panes' pages.
const maxCachedTurns = 400

// get is the value cached for k, if any.
func (c *pathCache[V]) get(k storage.PathKey) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.cur[k.Key]
	if !ok {
		if e, ok = c.old[k.Key]; ok {
			c.putLocked(k.Key, e)
		}
	}
	if !ok || !e.started.Equal(k.Started) {
		var zero V
		return zero, false
	}
	return e.v, true
}

func (c *pathCache[V]) put(k storage.PathKey, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(k.Key, pathValue[V]{started: k.Started, v: v})
}

func (c *pathCache[V]) putLocked(key string, e pathValue[V]) {
	if c.cur == nil || len(c.cur) >= maxCachedTurns {
		c.old, c.cur = c.cur, map[string]pathValue[V]{}
	}
	c.cur[key] = e
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
		var ok bool
		if p.Turns[i], ok = a.turns.get(k); !ok {
			missing = append(missing, k.Key)
			at = append(at, i)
		}
	}
	if len(missing) == 0 {
		return p, nil
	}
	loaded, err := a.store.LoadTurnsWith(ctx, missing, pageRead)
	if err != nil {
		return TurnPage{}, err
	}
	for j, t := range loaded {
		if !t.Started.Equal(keys[at[j]].Started) {
			return TurnPage{}, fmt.Errorf("load turns of %s: the branch changed while it was read", branch)
		}
		p.Turns[at[j]] = t
		a.turns.put(keys[at[j]], t)
	}
	return p, nil
}
