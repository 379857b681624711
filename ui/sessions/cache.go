package sessions

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/demo"
	"github.com/sessionbench/sessionbench/storage"
)

// branchCache keeps what the service knows of the few branches in use: the path (turn
// keys, start times and the turns without their requests) and the session restored from
// it, so a turn, a dry run or a preview does not reload and restore the whole branch
// (at 10,000 turns that was most of a Send). A committed turn never changes, so a cached
// path is exact as long as it ends at the store's tip; every use checks that first
// against the tip read from the store (its key and start time, so a turn id reused after
// a branch was deleted is not mistaken for the old turn). Whatever moves the tip (a
// fork, undo, redo, edit, replay, resume, another process) is therefore seen; the cache
// is only ever a faster way to read the same path.
type branchCache struct {
	mu      sync.Mutex
	entries map[string]*branchState // by conv + "\x00" + branch
	order   []string                // least recently used first
}

// maxCachedBranches bounds the cache: the branches in the open panes, roughly.
const maxCachedBranches = 4

// branchState is one cached branch. mu serialises checking it against the store and
// changing it.
type branchState struct {
	mu   sync.Mutex
	path *pathEntry
	// live is the session restored from path (the conversation's agent as configured),
	// built when first needed and moved along with the branch: a turn sent through this
	// service runs on it, and an undo or redo seen in the store moves its tip the same
	// way. nil while none is built, or while a turn runs on it.
	live *liveSession
}

// liveSession is a restored session and what it was built with.
type liveSession struct {
	run      *turnRun
	agentKey string
	// redo holds the keys of the turns an undo took off the session, most recent
	// last, as its own redo stack holds them.
	redo []string
}

// pathEntry is one branch path, root first. Its slices are never appended to in place
// (a longer path is a new entry), so a reader still holding an old entry is safe.
type pathEntry struct {
	keys    []string
	started []time.Time
	turns   []*trace.Turn
}

func (c *branchCache) state(k string) *branchState {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]*branchState{}
	}
	for i, o := range c.order {
		if o == k {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
	c.order = append(c.order, k)
	st := c.entries[k]
	if st == nil {
		st = &branchState{}
		c.entries[k] = st
	}
	for len(c.order) > maxCachedBranches {
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
	return st
}

// matches reports whether the entry's turn at i is node n.
func (e *pathEntry) matches(i int, n *storage.TurnNode) bool {
	return i >= 0 && i < len(e.keys) && e.keys[i] == n.Key && e.started[i].Equal(n.Started)
}

// prefix is the entry's first n turns.
func (e *pathEntry) prefix(n int) *pathEntry {
	return &pathEntry{keys: e.keys[:n:n], started: e.started[:n:n], turns: e.turns[:n:n]}
}

// extend is the entry followed by more turns.
func (e *pathEntry) extend(keys []string, started []time.Time, turns []*trace.Turn) *pathEntry {
	return &pathEntry{keys: append(e.keys[:len(e.keys):len(e.keys)], keys...),
		started: append(e.started[:len(e.started):len(e.started)], started...),
		turns:   append(e.turns[:len(e.turns):len(e.turns)], turns...)}
}

// index is the position of turn key on the path, or -1.
func (e *pathEntry) index(key string) int {
	for i := len(e.keys) - 1; i >= 0; i-- {
		if e.keys[i] == key {
			return i
		}
	}
	return -1
}

// branchPath returns the branch's path, root first, with the turns as core.Restore needs
// them (no requests). The entry is shared: callers must not change it or its turns.
func (a *Service) branchPath(ctx context.Context, conv, branch string) (*pathEntry, error) {
	st := a.cache.state(conv + "\x00" + branch)
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := a.check(ctx, st, conv, branch); err != nil {
		return nil, err
	}
	return st.path, nil
}

// check brings st to the store's current path: as cached when the tip is the same, cut
// back after an undo, extended by the turns committed since (a redo, or turns of another
// writer), and otherwise loaded whole. The live session follows an undo or a redo of its
// own turns; any other change drops it (caller holds st.mu).
func (a *Service) check(ctx context.Context, st *branchState, conv, branch string) error {
	tail, total, err := a.store.BranchPathTail(ctx, conv, branch, 2)
	if err != nil {
		return err
	}
	e := st.path
	switch {
	case total == 0:
		if e == nil || len(e.keys) != 0 {
			a.moveLive(st, e, 0, nil)
			st.path = &pathEntry{}
		}
		return nil
	case e == nil:
	case len(e.keys) >= total && e.matches(total-1, tail[len(tail)-1]):
		// the same path, or an undo moved the tip back along it
		if len(e.keys) > total {
			a.moveLive(st, e, total, nil)
			st.path = e.prefix(total)
		}
		return nil
	case len(e.keys) < total && len(e.keys) > 0:
		// turns committed after the cached tip: read just those, if the tip is still on
		// the path
		n := total - len(e.keys)
		newer, _, err := a.store.BranchPathTail(ctx, conv, branch, n+1)
		if err != nil {
			return err
		}
		if len(newer) == n+1 && e.matches(len(e.keys)-1, newer[0]) {
			keys := make([]string, n)
			started := make([]time.Time, n)
			for i, nd := range newer[1:] {
				keys[i], started[i] = nd.Key, nd.Started
			}
			turns, err := a.store.LoadTurnsWith(ctx, keys, storage.LoadOptions{NoRequests: true})
			if err != nil {
				return err
			}
			a.moveLive(st, e, total, keys)
			st.path = e.extend(keys, started, turns)
			return nil
		}
	}
	p, err := a.store.LoadBranchRangeWith(ctx, conv, branch, 0, 0, storage.LoadOptions{NoRequests: true})
	if err != nil {
		return err
	}
	ne := &pathEntry{keys: p.Keys, turns: p.Turns, started: make([]time.Time, len(p.Nodes))}
	for i, n := range p.Nodes {
		ne.started[i] = n.Started
	}
	st.path, st.live = ne, nil
	return nil
}

// moveLive moves the live session from path e to its first n turns followed by the turns
// added (the session's tip moves by undo and redo); a move it cannot make drops the
// session, to be restored again when next needed.
func (a *Service) moveLive(st *branchState, e *pathEntry, n int, added []string) {
	l := st.live
	if l == nil || e == nil {
		st.live = nil
		return
	}
	if back := len(e.keys) - n; back > 0 {
		undone := l.run.s.Undo(back, true)
		if len(undone) != back {
			st.live = nil
			return
		}
		for i := len(e.keys) - 1; i >= n; i-- {
			l.redo = append(l.redo, e.keys[i])
		}
	}
	for _, k := range added {
		if len(l.redo) == 0 || l.redo[len(l.redo)-1] != k || len(l.run.s.Redo(1, true)) != 1 {
			st.live = nil
			return
		}
		l.redo = l.redo[:len(l.redo)-1]
	}
}

// liveState returns the branch's path and its session (as configured: the conversation's
// agent, no strategy override), restoring the session when none is kept. With take, the
// session is handed to the caller alone (a turn is about to run on it) and must be given
// back with giveBack; otherwise it is shared and only read.
func (a *Service) liveState(ctx context.Context, conv, branch string, take bool) (*branchState, *pathEntry, *liveSession, error) {
	ag, err := a.conversationAgent(ctx, conv, "")
	if err != nil {
		return nil, nil, nil, err
	}
	key := agentKey(ag)
	st := a.cache.state(conv + "\x00" + branch)
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := a.check(ctx, st, conv, branch); err != nil {
		return nil, nil, nil, err
	}
	l := st.live
	if l == nil || l.agentKey != key {
		run, err := a.restoreAgent(ag, conv, branch, 0, st.path.turns)
		if err != nil {
			return nil, nil, nil, err
		}
		l = &liveSession{run: run, agentKey: key}
		if keepsLive(run.s) {
			st.live = l
		}
	}
	if take {
		st.live = nil
	}
	return st, st.path, l, nil
}

// giveBack returns a session taken by liveState after a turn ran on it: when the turn
// was committed (key, at started) and nothing else moved the branch meanwhile, the path
// grows by the turn and the session is kept. Any doubt drops it.
func (a *Service) giveBack(st *branchState, from *pathEntry, l *liveSession, key string, t *trace.Turn) {
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case st.live != nil:
		// another session was built meanwhile; keep that one
	case t == nil && st.path == from:
		st.live = l
	case t != nil && key != "" && st.path == from:
		st.path = from.extend([]string{key}, []time.Time{t.Started}, []*trace.Turn{t})
		l.redo = nil
		st.live = l
	}
}

// agentKey identifies the definition of an agent, so a session built from an agent file
// that changed since is not reused.
func agentKey(ag demo.Agent) string {
	k := ag.Name + "\x00" + ag.Source
	if ag.Source != "" && ag.Source != "built-in" {
		if fi, err := os.Stat(ag.Source); err == nil {
			k += fmt.Sprintf("\x00%d\x00%d", fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return k
}

// keepsLive reports whether a session may be kept between turns: one whose children
// consolidate episodes into L2 memory carries state a restore would not have.
func keepsLive(s *core.Session) bool {
	if s.Options().Lifespan == core.LifespanEpisodic {
		return false
	}
	for _, cs := range s.NamedSessions() {
		if cs.Options().Lifespan == core.LifespanEpisodic {
			return false
		}
	}
	return true
}

// cachedTurns are the turns keys from the branch's cached path, when it holds them all
// (the undone turns of an undo just made through this service, typically); else nil.
func (a *Service) cachedTurns(conv, branch string, keys []string) []*trace.Turn {
	st := a.cache.state(conv + "\x00" + branch)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.path == nil {
		return nil
	}
	out := make([]*trace.Turn, len(keys))
	for i, k := range keys {
		at := st.path.index(k)
		if at < 0 {
			return nil
		}
		out[i] = st.path.turns[at]
	}
	return out
}
