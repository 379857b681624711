package storage

import (
	"bytes"
	"context"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// A turn's calls are journaled as continuations of the same predictor's call in the turn
// before (journalCall). A sink that committed that turn has its calls at hand (prevCalls);
// a new sink (the first turn of a process, or of a new ui/sessions Service) takes the
// base from the stored turn instead, without reading its requests back: a stored list
// is a chain of nodes whose hashes name their prefixes (chainHash), so the hashes of the
// last few nodes of the base call's request and history, one small query, say how much
// of them a new call repeats, once its own elements are hashed.

// seedFrom is the size (request messages plus history entries) from which a call is
// journaled against a stored base: a smaller call costs less in full than the query.
const seedFrom = 64

// seedDepth is how many of the last nodes of a stored list are candidates for the end of
// the prefix a new call shares with it: a request repeats its predecessor up to its last
// message (the new input), a history all of it.
const seedDepth = 4

// storedBase is a stored call as seededCall needs it: its id, and the depth and short
// chain hash of the last few prefixes of its request and history (deepest first).
type storedBase struct {
	call       string
	msgs, hist []prefixHash
	gen        int64 // the write cache's resets before the read (seedPath)
}

type prefixHash struct {
	depth int
	hash  []byte // hash16.short of the list's first depth elements
	id    int64  // the node ending them
}

// loadBase reads the hashes of the stored call of turn at path (the last, when it has
// several); nil when there is none, or nothing to share.
func loadBase(ctx context.Context, q querier, wc *writeCache, turn int64, path string) *storedBase {
	gen := wc.resets.Load()
	rows, err := q.QueryContext(ctx, `WITH c AS (SELECT call_key, messages_node, history_node FROM calls
			WHERE turn_id = ?1 AND path = ?2 ORDER BY seq DESC LIMIT 1),
		up(id, kind, k) AS (
			SELECT id, kind, 0 FROM (SELECT messages_node AS id, 'm' AS kind FROM c UNION ALL SELECT history_node, 'h' FROM c)
				WHERE id IS NOT NULL
			UNION ALL SELECT l.parent_id, up.kind, up.k + 1 FROM list_nodes l JOIN up ON l.id = up.id
				WHERE up.k < ?3 AND l.parent_id IS NOT NULL)
		SELECT (SELECT call_key FROM c), up.kind, l.depth, l.hash, l.id FROM up JOIN list_nodes l ON l.id = up.id
		ORDER BY l.depth DESC`, turn, path, seedDepth-1)
	if err != nil {
		return nil // the call is journaled in full: always right
	}
	defer rows.Close()
	b := &storedBase{gen: gen}
	for rows.Next() {
		var kind string
		var p prefixHash
		if err := rows.Scan(&b.call, &kind, &p.depth, &p.hash, &p.id); err != nil {
			return nil
		}
		if kind == "m" {
			b.msgs = append(b.msgs, p)
		} else {
			b.hist = append(b.hist, p)
		}
	}
	if rows.Err() != nil || b.call == "" {
		return nil
	}
	return b
}

// sharedPrefix is the length of the deepest of the stored prefixes that items begin
// with (0 for none). Where items repeat known (the last list this process stored under
// the same key, as the write cache holds it), its nodes give the chain hashes; the rest
// of items is hashed, as far as the deepest candidate.
func sharedPrefix(stored []prefixHash, known listPath, items []listItem) (depth int, chain []hash16, node int64) {
	top := 0
	for _, p := range stored {
		if p.depth <= len(items) {
			top = max(top, p.depth)
		}
	}
	if top == 0 {
		return 0, nil, 0
	}
	same := 0
	for same < top && same < known.l.Len() && same < known.nodes.len() && items[same] == known.l.at(same) {
		same++
	}
	// the hash of every prefix, for the cache (seedPath)
	chain = make([]hash16, top)
	var h hash16
	for d := 1; d <= top; d++ {
		if d <= same {
			h = known.nodes.at(d - 1).hash
		} else {
			h = chainHash(h, items[d-1].key(), contentHash(items[d-1].Body))
		}
		chain[d-1] = h
	}
	for _, p := range stored { // deepest first
		if p.depth <= top && bytes.Equal(chain[p.depth-1].short(), p.hash) {
			return p.depth, chain[:p.depth], p.id
		}
	}
	return 0, nil, 0
}

// lastStored is what the write cache holds of the last lists stored under key (and for a
// history, their entries' JSON), or nothing while a write transaction holds the cache:
// a record does not wait for another branch's commit. What it returns is never changed
// afterwards (the cache replaces, never edits, what it published), so it is read after
// the lock is let go.
func (c *writeCache) lastStored(key string) (listPath, []entryJSON) {
	if !c.mu.TryLock() {
		return listPath{}, nil
	}
	defer c.mu.Unlock()
	return c.paths[key], c.entries[key]
}

// keepEntries makes now, entries rendered outside a transaction, the cache's last under
// key, unless the cache changed since it gave was (or is busy): the commit that follows
// renders none of them again (entryJSON is what values render to, whatever the database
// holds).
func (c *writeCache) keepEntries(key string, was, now []entryJSON) {
	if !c.mu.TryLock() {
		return
	}
	defer c.mu.Unlock()
	cur := c.entries[key]
	if len(cur) != len(was) || len(cur) > 0 && &cur[0] != &was[0] {
		return
	}
	if c.entries == nil {
		c.entries = map[string][]entryJSON{}
	}
	c.entries[key] = now
}

// seeding is a call's seededCall done ahead (PrepareCall): the request and history it
// was done for, and its result once done is closed (nil ref: the call is recorded whole).
type seeding struct {
	done chan struct{}
	msgs lm.MessageList
	hist []*sig.Map
	ref  *journalBase
}

// fits says whether c still sends what the seeding was done for (a call that fell back to
// another adapter sends another request).
func (sd *seeding) fits(c *trace.Call) bool {
	if !c.Messages.Equal(sd.msgs) || len(c.History.Messages) != len(sd.hist) {
		return false
	}
	for i, m := range c.History.Messages {
		if m != sd.hist[i] { // a history is shared structure: the very same entries
			return false
		}
	}
	return true
}

// PrepareCall is told that call c of the turn in flight is about to ask its model: when
// RecordCall will seed it (the first turn of a sink, against the stored turn before),
// the seeding (reading the base's hashes, rendering and hashing the call's history: a
// millisecond or two at a thousand turns) is done now, in the background, while the
// model thinks, and the record made when the model answers only takes its result. c is
// read here, not later: the engine goes on filling it in.
func (b *BranchSink) PrepareCall(ctx context.Context, c *trace.Call) {
	if c == nil {
		return
	}
	b.mu.Lock()
	r := b.runs[b.began]
	committed := r != nil && b.prev != 0 && b.prev == r.h.Parent
	b.mu.Unlock()
	if r == nil || committed || r.h.Parent == 0 || c.Messages.Len()+len(c.History.Messages) < seedFrom {
		return
	}
	snap := &trace.Call{Path: c.Path, Messages: c.Messages, History: c.History}
	sd := &seeding{done: make(chan struct{}), msgs: snap.Messages, hist: snap.History.Messages}
	r.seedMu.Lock()
	if r.seeds == nil {
		r.seeds = map[*trace.Call]*seeding{}
	}
	r.seeds[c] = sd
	r.seedMu.Unlock()
	go func() {
		defer close(sd.done)
		// The store's warm-up waits (storage/warm.go): a seeding the call's record will
		// wait for goes first. A process's first turn made its first call ahead
		// (ui/sessions/speculate.go) starts its warm-up with that call, before this
		// seeding, and the two on two cores left the record waiting.
		defer b.s.warm.wantWriter()()
		r.seedMu.Lock()
		defer r.seedMu.Unlock()
		b.s.readyCache(ctx)
		_, sd.ref = r.seededCall(ctx, b.s, snap, true)
	}()
}

// readyCache begins the write cache when no write transaction of the process has yet
// (the first turn of a process, when nothing prefetched the branch): what seededCall
// puts into a cache not begun is refused (seedPath), for the first begin empties it,
// and the turn's commit then reads back every text the call shares with the turn
// before (at 1,000 turns of an agent with no window, a 2,000-message request: about
// 20 ms of CPU). A transaction begun and rolled back does it, beside the model's answer.
func (s *Store) readyCache(ctx context.Context) {
	if s.readOnly != "" || s.wc == nil || s.wc.resets.Load() > 0 {
		return
	}
	_ = s.trial(ctx, false, func(*wtx) error { return nil }) // a failure leaves the seed refused: the commit looks the prefix up
}

// seeded is seededCall for RecordCall: PrepareCall's result when it was done for what c
// sends (waiting for it to be done: it would be done again otherwise), else done now.
func (r *run) seeded(ctx context.Context, s *Store, c *trace.Call) (*trace.Call, *journalBase) {
	r.seedMu.Lock()
	sd := r.seeds[c]
	delete(r.seeds, c)
	r.seedMu.Unlock()
	if sd != nil {
		<-sd.done
		if sd.fits(c) {
			if sd.ref == nil {
				return c, nil
			}
			return continuation(c, *sd.ref)
		}
	}
	r.seedMu.Lock()
	defer r.seedMu.Unlock()
	return r.seededCall(ctx, s, c, false)
}

// seededCall is journalCall against the stored call of the same predictor in the turn r
// follows, read the first time r records a call of that path (holding seedMu). What it
// finds stored of the call's request and history goes into the write cache for the
// turn's commit (seedPath), waiting for the cache when wait is set.
func (r *run) seededCall(ctx context.Context, s *Store, c *trace.Call, wait bool) (*trace.Call, *journalBase) {
	if r.h.Parent == 0 || c.Messages.Len()+len(c.History.Messages) < seedFrom {
		return c, nil
	}
	b, ok := r.bases[c.Path]
	if !ok {
		b = loadBase(ctx, s.r, s.wc, r.h.Parent, c.Path)
		if r.bases == nil {
			r.bases = map[string]*storedBase{}
		}
		r.bases[c.Path] = b
	}
	if b == nil {
		return c, nil
	}
	k, h := 0, 0
	if n := deepest(b.msgs); n > 0 {
		key := "m\x00" + c.Path
		known, _ := s.wc.lastStored(key)
		items := messageItems(c.Messages.Sub(0, min(n, c.Messages.Len())))
		var chain []hash16
		var last int64
		k, chain, last = sharedPrefix(b.msgs, known, items)
		s.wc.seedPath(b.gen, key, messagesOf(c.Messages.Sub(0, k)), items, chain, last, wait)
	}
	if n := deepest(b.hist); n > 0 {
		key := "h\x00" + c.Path
		known, entries := s.wc.lastStored(key)
		// rendered as insertCall renders them; entries the cache rendered are not again
		// (capped: rendering more entries must not write past the end of the cache's
		// array, which only the writer extends, holding the cache)
		seen := &writeCache{entries: map[string][]entryJSON{key: entries[:len(entries):len(entries)]}}
		items := historyItems(seen, key, sig.History{Messages: c.History.Messages[:min(n, len(c.History.Messages))]}).from(0)
		var chain []hash16
		var last int64
		h, chain, last = sharedPrefix(b.hist, known, items)
		s.wc.keepEntries(key, entries, seen.entries[key])
		s.wc.seedPath(b.gen, key, entriesOf(seen.entries[key][:h]), items, chain, last, wait)
	}
	return continuation(c, journalBase{Turn: r.h.Parent, Call: b.call, Msgs: k, Hist: h})
}

func deepest(ps []prefixHash) int {
	if len(ps) == 0 {
		return 0
	}
	return ps[0].depth // loadBase orders them deepest first
}
