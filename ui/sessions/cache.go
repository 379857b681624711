package sessions

import (
	"context"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/lm"
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
	// first is what the store holds as the branch's FirstCall, as far as this service
	// knows (speculate.go: tip "" when it does not), under a lock of its own: it is
	// noted while a restore holds mu.
	first struct {
		mu      sync.Mutex
		tip     string
		history lm.MessageList
	}
}

// liveSession is a restored session and what it was built with.
type liveSession struct {
	run      *turnRun
	agentKey string
	first    int // the index of the first turn the session was restored from
	// redo holds the keys of the turns an undo took off the session, most recent
	// last, as its own redo stack holds them.
	redo []string
}

// pathEntry is one branch path, root first, or its last turns: keys[0] is the turn at
// index base (a session restored for a windowed agent reads only the last turns). What
// it holds never changes, so a reader still holding an old entry is safe: a longer path
// is a new entry, which may share its arrays (extend).
type pathEntry struct {
	base    int
	keys    []string
	started []time.Time
	turns   []*trace.Turn
	// grown is set once an entry extending this one was made: that first extension
	// wrote past this entry's end, so a second copies.
	grown atomic.Bool
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

// states are the branches cached, by conv + "\x00" + branch.
func (c *branchCache) states() map[string]*branchState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.entries)
}

// length is the branch's length at the entry's tip.
func (e *pathEntry) length() int { return e.base + len(e.keys) }

// covers reports whether the entry holds the last want turns (want 0: all of them; want
// < 0: whatever it holds).
func (e *pathEntry) covers(want int) bool {
	return e.base == 0 || want < 0 || want > 0 && len(e.keys) >= want
}

// turn is the turn at index i of the branch (i must be held).
func (e *pathEntry) turn(i int) *trace.Turn { return e.turns[i-e.base] }

// matches reports whether the entry's turn at index i is node n.
func (e *pathEntry) matches(i int, n *storage.TurnNode) bool {
	i -= e.base
	return i >= 0 && i < len(e.keys) && e.keys[i] == n.Key && e.started[i].Equal(n.Started)
}

// prefix is the entry up to index n (n > base).
func (e *pathEntry) prefix(n int) *pathEntry {
	n -= e.base
	return &pathEntry{base: e.base, keys: e.keys[:n:n], started: e.started[:n:n], turns: e.turns[:n:n]}
}

// extend is the entry followed by more turns. The first extension of an entry appends
// to its arrays where they have room (no entry sees past this one's end: prefix caps
// the arrays it shares), so a turn costs the cache what it adds, not a copy of the
// branch (0.6 MB a Send at 10,000 turns); a second extension of the same entry copies.
func (e *pathEntry) extend(keys []string, started []time.Time, turns []*trace.Turn) *pathEntry {
	k, s, t := e.keys, e.started, e.turns
	if !e.grown.CompareAndSwap(false, true) {
		k, s, t = k[:len(k):len(k)], s[:len(s):len(s)], t[:len(t):len(t)]
	}
	return &pathEntry{base: e.base, keys: append(k, keys...), started: append(s, started...), turns: append(t, turns...)}
}

// index is the position of turn key on the branch, or -1 (also when the entry does not
// hold it).
func (e *pathEntry) index(key string) int {
	for i := len(e.keys) - 1; i >= 0; i-- {
		if e.keys[i] == key {
			return e.base + i
		}
	}
	return -1
}

// branchPath returns the branch's whole path, root first, with the turns as core.Restore
// needs them (no requests). The entry is shared: callers must not change it or its turns.
func (a *Service) branchPath(ctx context.Context, conv, branch string) (*pathEntry, error) {
	st := a.cache.state(conv + "\x00" + branch)
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := a.check(ctx, st, conv, branch, 0); err != nil {
		return nil, err
	}
	return st.path, nil
}

// sessionRead is how a path is read for restoring sessions and rendering strategies: the
// calls' values, without their requests or what they saw (a keep-predictor's history
// grows with the branch, so reading every call's made the first turn of a process cost
// O(n²) on a long branch), nor their usage, params, attempts or score, which no session
// reads (half the columns, half the time of a long branch's restore). pageRead is how
// the workbench reads a page of turns: with the calls' usage and params, which it shows.
var (
	sessionRead = storage.LoadOptions{ValuesOnly: true}
	pageRead    = storage.LoadOptions{NoRequests: true, NoHistories: true}
)

// anyPath returns the branch's path as cached, which may hold only its last turns (a
// session restored for a windowed agent reads no more); with nothing cached, the whole
// path.
func (a *Service) anyPath(ctx context.Context, conv, branch string) (*pathEntry, error) {
	st := a.cache.state(conv + "\x00" + branch)
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := a.check(ctx, st, conv, branch, -1); err != nil {
		return nil, err
	}
	return st.path, nil
}

// check brings st to the store's current path, holding at least its last want turns
// (want 0: the whole path; want < 0: as cached, the whole path when loaded): as cached when the tip is the same, cut back after an undo,
// extended by the turns committed since (a redo, or turns of another writer), and
// otherwise loaded (the last want turns, or the whole path). The live session follows an
// undo or a redo of its own turns; any other change drops it (caller holds st.mu).
func (a *Service) check(ctx context.Context, st *branchState, conv, branch string, want int) error {
	return a.checkAt(ctx, st, conv, branch, want, nil)
}

// branchTip is a branch's tip as BranchTip reads it.
type branchTip struct {
	node  *storage.TurnNode
	total int
}

// checkAt is check given the branch's tip as just read (nil: check reads it).
func (a *Service) checkAt(ctx context.Context, st *branchState, conv, branch string, want int, head *branchTip) error {
	if st.path == nil {
		// nothing cached (the first use in the process): the tip is the one just read,
		// or whatever is read
		return a.load(ctx, st, conv, branch, want, 0, false, head)
	}
	if head == nil {
		tip, total, err := a.store.BranchTip(ctx, conv, branch)
		if err != nil {
			return err
		}
		head = &branchTip{tip, total}
	}
	tip, total := head.node, head.total
	e := st.path
	sameTip := false
	switch {
	case total == 0:
		if e.length() != 0 {
			a.moveLive(st, e, 0, nil)
			st.path = &pathEntry{}
		}
		return nil
	case e.length() >= total && e.matches(total-1, tip):
		// the same path, or an undo moved the tip back along it
		if e.length() > total {
			a.moveLive(st, e, total, nil)
			st.path = e.prefix(total)
		}
		if st.path.covers(want) {
			return nil
		}
		sameTip = true
	case e.length() < total && len(e.keys) > 0:
		// turns committed after the cached tip: read just those, if the tip is still on
		// the path
		n := total - e.length()
		newer, _, err := a.store.BranchPathTail(ctx, conv, branch, n+1)
		if err != nil {
			return err
		}
		if len(newer) == n+1 && e.matches(e.length()-1, newer[0]) {
			keys := make([]string, n)
			started := make([]time.Time, n)
			for i, nd := range newer[1:] {
				keys[i], started[i] = nd.Key, nd.Started
			}
			turns, err := a.store.LoadTurnsWith(ctx, keys, sessionRead)
			if err != nil {
				return err
			}
			a.moveLive(st, e, total, keys)
			st.path = e.extend(keys, started, turns)
			if st.path.covers(want) {
				return nil
			}
			sameTip = true
		}
	}
	return a.load(ctx, st, conv, branch, want, total, sameTip, head)
}

// load reads the branch's path into st: its last want turns (want <= 0: the whole path),
// those through head's tip when the branch's head was just read (nil: the path read
// reads the branch). sameTip says the cached path ended at the tip of total turns, so
// its live session stays when the path read ends there too (caller holds st.mu).
func (a *Service) load(ctx context.Context, st *branchState, conv, branch string, want, total int, sameTip bool, head *branchTip) error {
	defer pauseGC()()
	var ne *pathEntry
	var read int
	if want > 0 {
		var p *storage.BranchPage
		var err error
		// the whole path when it is shorter
		if head != nil {
			p, err = a.store.LoadBranchRangeAt(ctx, conv, branch, head.node, head.total, -want, want, sessionRead)
		} else {
			p, err = a.store.LoadBranchRangeWith(ctx, conv, branch, -want, want, sessionRead)
		}
		if err != nil {
			return err
		}
		ne = &pathEntry{base: p.From, keys: p.Keys, turns: p.Turns, started: make([]time.Time, len(p.Nodes))}
		for i, n := range p.Nodes {
			ne.started[i] = n.Started
		}
		read = p.Total
	} else {
		// the whole path: from the branch's pack where it has one (storage/pathvalues.go)
		var p *storage.PathValues
		var err error
		if head != nil {
			p, err = a.store.LoadPathValuesAt(ctx, conv, branch, head.node, head.total)
		} else {
			p, err = a.store.LoadPathValues(ctx, conv, branch)
		}
		if err != nil {
			return err
		}
		ne = &pathEntry{keys: p.Keys, turns: p.Turns, started: p.Started}
		read = p.Total
	}
	if !sameTip || read != total || len(ne.keys) == 0 || ne.keys[len(ne.keys)-1] != st.path.keys[len(st.path.keys)-1] {
		st.live = nil // the session kept was of another path
	}
	st.path = ne
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
	if back := e.length() - n; back > 0 {
		undone := l.run.s.Undo(back, true)
		if len(undone) != back || !l.run.s.Exact() {
			// a session restored from the branch's last turns no longer holds what the
			// next turn reads
			st.live = nil
			return
		}
		for i := e.length() - 1; i >= n; i-- {
			l.redo = append(l.redo, e.keys[i-e.base])
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
// agent, no strategy override), restoring the session when none is kept. Unless full is
// set, the path may hold only the branch's last turns, as many as the agent's histories
// read (windowed agents: see core.RestoreTail). With take, the session is handed to the
// caller alone (a turn is about to run on it) and must be given back with giveBack;
// otherwise it is shared and only read.
func (a *Service) liveState(ctx context.Context, conv, branch string, take, full bool) (*branchState, *pathEntry, *liveSession, error) {
	return a.liveStateAt(ctx, conv, branch, take, full, nil)
}

// liveStateAt is liveState on the branch as hold read it under the branch's lock (nil:
// as read now).
func (a *Service) liveStateAt(ctx context.Context, conv, branch string, take, full bool, hold *storage.TurnHold) (*branchState, *pathEntry, *liveSession, error) {
	st := a.cache.state(conv + "\x00" + branch)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.path == nil || st.live == nil {
		// the session is loaded and restored: the collector waits (gcpause.go)
		defer pauseGC()()
	}
	// the conversation's agent and the branch's tip, in one read (under st.mu, as check
	// reads the tip: what the read finds is compared with the cached path)
	var ref string
	var tip *storage.TurnNode
	var total int
	var err error
	if hold != nil {
		ref, tip, total = hold.Head()
	} else if ref, tip, total, err = a.store.BranchHead(ctx, conv, branch); err != nil {
		return nil, nil, nil, err
	}
	head := &branchTip{tip, total}
	ag, err := a.agentOf(conv, ref)
	if err != nil {
		return nil, nil, nil, err
	}
	key := agentKey(ag)
	want := 0
	if !full {
		want = a.tailLen(ag, key)
	}
	for {
		err := a.checkAt(ctx, st, conv, branch, want, head)
		head = nil // read again if the loop goes on
		if err != nil {
			return nil, nil, nil, err
		}
		l := st.live
		if l != nil && l.agentKey == key && (!full || st.path.base == 0 && l.first == 0) {
			break
		}
		run, exact, err := a.restoreAgent(ag, conv, branch, 0, st.path.base, st.path.turns)
		if err != nil {
			return nil, nil, nil, err
		}
		if !exact {
			// a child reads further back than the window (a predictor not called every
			// turn): hold twice as many turns
			want = a.growTail(key, want)
			continue
		}
		l = &liveSession{run: run, agentKey: key, first: st.path.base}
		st.live = nil
		if keepsLive(run.s) {
			st.live = l
		}
		if take {
			st.live = nil
		}
		return st, st.path, l, nil
	}
	l := st.live
	if take {
		st.live = nil
	}
	return st, st.path, l, nil
}

// tailLen is how many of a branch's last turns a session of agent ag is restored from:
// 0 (all) unless its history has a window, else the window with room for a few undos
// (and more once a restore found it short).
func (a *Service) tailLen(ag demo.Agent, key string) int {
	a.mu.Lock()
	n, ok := a.tails[key]
	a.mu.Unlock()
	if ok {
		return n
	}
	_, opts, err := ag.Build()
	if err != nil {
		return 0 // the restore says what is wrong
	}
	w := -1
	for _, p := range []*int{opts.MaxTurns, opts.MaxStoredTurns} {
		if p != nil && (w < 0 || *p < w) {
			w = max(*p, 0)
		}
	}
	if w >= 0 {
		n = w + undoRoom
	}
	a.mu.Lock()
	a.tails[key] = n
	a.mu.Unlock()
	return n
}

// undoRoom is how many undos a session restored from a branch's last turns can follow
// before it is restored again.
const undoRoom = 2

// growTail doubles the turns restored for agent key after a restore from want turns was
// short, and returns the new count.
func (a *Service) growTail(key string, want int) int {
	n := 2 * want
	a.mu.Lock()
	a.tails[key] = n
	a.mu.Unlock()
	return n
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
	// every file the agent is built from: an edited template file changes it too
	for _, f := range ag.Files {
		k += "\x00" + f + "\x00" + fileStamp(f)
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
		out[i] = st.path.turn(at)
	}
	return out
}
