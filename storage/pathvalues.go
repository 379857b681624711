package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sessionbench/sessionbench/core/trace"
)

// Packs (pathpack.go, stored as rows: packrows.go) are kept exact without being kept up
// to date. A committed turn never changes and turn ids are never reused, so a pack
// ending at turn T holds exactly the first turns of every path through T:
// LoadPathValues uses a branch's pack when T is still on the branch's path (the tip
// moved on from T: the turns after it are read from their rows; an undo moved it back:
// the pack's first turns are used), else the pack without its last row when that is
// (an undo, then other turns), and reads every row otherwise (a fork, an edit). A read
// that found its pack missing or behind the tip by packLagTurns keeps the path it read,
// and the branch's next WarmBranch (a prefetch) or WritePathPack (a turn's model call)
// writes the pack's rows the path changed: in the background while the user types or
// the model thinks, one commit per pack, not per turn.

const (
	// packMinTurns is the shortest path packed: a shorter one reads its rows in a few
	// milliseconds.
	packMinTurns = 256
	// packLagTurns is how far behind its branch's tip a pack may fall before the next
	// read packs the path again. Repacking writes the last row and the turns after it,
	// at most packRowTurns+packLagTurns turns' values whatever the branch's length; a
	// read of the turns after the pack costs about 35 µs a turn.
	packLagTurns = 8
	// packsPerConversation is how many of a conversation's branches keep a pack, those
	// packed last: a pack copies its branch's values, and a user works on a few branches
	// at a time.
	packsPerConversation = 3
)

// PathValues is a branch's whole path as a session is restored from it: each turn's
// key and start time, and the turn with its calls' values (what a LoadOptions.ValuesOnly
// read gives), root first. Its slices have room for the turns a session kept for the
// branch adds next (pathRoom), which the caller may append there.
type PathValues struct {
	Total   int
	Keys    []string
	Started []time.Time
	Turns   []*trace.Turn
	// Packed is how many of the first turns came from the branch's pack, the rest from
	// their rows.
	Packed int
}

// pendingPack is a path LoadPathValues read, for WarmBranch to pack and write. Its
// turns are shared with the caller, who does not change them (LoadPathValues' contract,
// as core.Restore's): encoding them later, in the background, only reads them too.
type pendingPack struct {
	branchID int64
	ids      []int64
	turns    []*trace.Turn
	anew     bool // the pack read was damaged: its rows are all written again
}

// packQueue holds the paths waiting for their branch's WarmBranch, by conversation and
// branch name, the last few queued (a path read by a preview alone may wait for a
// WarmBranch that never comes, holding its turns); a newer path of the same branch
// replaces one waiting.
type packQueue struct {
	mu      sync.Mutex
	pending map[string]*pendingPack
	order   []string // oldest first
}

// maxPendingPacks bounds the paths held for packing.
const maxPendingPacks = 4

func (q *packQueue) put(key string, p *pendingPack) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pending == nil {
		q.pending = map[string]*pendingPack{}
	}
	q.drop(key)
	q.pending[key] = p
	q.order = append(q.order, key)
	if len(q.order) > maxPendingPacks {
		q.drop(q.order[0])
	}
}

// packKey is the queue's key of a conversation's branch.
func packKey(convID, branch string) string { return convID + "\x00" + branch }

func (q *packQueue) has(key string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pending[key] != nil
}

func (q *packQueue) take(key string) *pendingPack {
	q.mu.Lock()
	defer q.mu.Unlock()
	p := q.pending[key]
	q.drop(key)
	return p
}

// drop forgets key's path (q.mu held).
func (q *packQueue) drop(key string) {
	delete(q.pending, key)
	q.order = slices.DeleteFunc(q.order, func(k string) bool { return k == key })
}

// LoadPathValues reads a branch's whole path for restoring a session: from the branch's
// pack and the rows of the turns after it when the pack is on the path, from every row
// otherwise. What it returns is what LoadBranchRangeWith(ctx, convID, branch, 0, 0,
// LoadOptions{ValuesOnly: true}) returns, turn for turn. The turns are shared with the
// store until the branch's WarmBranch has packed them: the caller must not change them
// (core.Restore does not).
func (s *Store) LoadPathValues(ctx context.Context, convID, branch string) (*PathValues, error) {
	b, err := branchByName(ctx, s.r, convID, branch)
	if err != nil {
		return nil, err
	}
	return s.pathValues(ctx, s.r, b)
}

// LoadPathValuesAt is LoadPathValues at a head of the branch just read (TurnHold.Head,
// BranchHead), without reading the branch again: the path that ends at that tip, which
// never changes, whatever the branch did since. Its pack is read on the connection that
// read the head (hotReads), which a new process has open and warm, where a reader's
// first read opens its connection and reads the schema (0.5 ms). A branch whose head
// this store has not read (its id unknown) is read as LoadPathValues reads it, as it is
// now.
func (s *Store) LoadPathValuesAt(ctx context.Context, convID, branch string, tip *TurnNode, total int) (*PathValues, error) {
	v, ok := s.branchIDs.Load(branchKey(convID, branch))
	if !ok || tip == nil {
		return s.LoadPathValues(ctx, convID, branch)
	}
	id, err := parseTurnKey(tip.Key)
	if err != nil {
		return nil, err
	}
	b := &Branch{ID: v.(int64), ConvID: convID, Name: branch, Length: total, tipID: sql.NullInt64{Int64: id, Valid: true}}
	return s.pathValues(ctx, s.hotReads(ctx), b)
}

// pathValues is LoadPathValues of branch b as read, reading its pack and the rows after
// it on q.
func (s *Store) pathValues(ctx context.Context, q querier, b *Branch) (*PathValues, error) {
	n := b.Length
	if n < packMinTurns {
		return s.pathValuesOfRows(ctx, q, b, repackNone)
	}
	rows, err := readPackRows(ctx, q, b.ID, true)
	if errors.Is(err, errPackCorrupt) {
		return s.pathValuesOfRows(ctx, q, b, repackAnew)
	}
	if err != nil {
		return nil, fmt.Errorf("storage: read the path pack of branch %q: %w", b.Name, err)
	}
	ids, turns, nodes, err := s.packedPrefix(ctx, q, b, rows)
	if errors.Is(err, errPackCorrupt) {
		return s.pathValuesOfRows(ctx, q, b, repackAnew)
	}
	if err != nil {
		return nil, err
	}
	p := len(turns)
	if p == 0 {
		return s.pathValuesOfRows(ctx, q, b, repackRows)
	}
	pv := &PathValues{Total: n, Packed: p}
	if p < n {
		rest, err := s.turnsOn(ctx, q, nodes, LoadOptions{ValuesOnly: true})
		if err != nil {
			return nil, err
		}
		for _, nd := range nodes {
			ids = append(ids, nd.id.Int64)
		}
		turns = append(turns, rest...)
	}
	if n-p >= packLagTurns || p < min(rows.held(), n) {
		s.queuePack(b.ConvID, b.Name, b.ID, ids, turns, false)
	}
	pv.Turns = slices.Grow(turns, pathRoom(n))
	pv.Keys = make([]string, n, n+pathRoom(n))
	pv.Started = make([]time.Time, n, n+pathRoom(n))
	for i, t := range turns {
		pv.Keys[i], pv.Started[i] = turnKey(ids[i]), t.Started
	}
	return pv, nil
}

// pathRoom is the room PathValues leaves after a path of n turns: the next Sends' turns
// are appended there (ui/sessions' path cache) instead of copying the path, which on
// the first Send of a process ran while the collector caught up with the restore and
// cost its allocation's share of the marking (0.3-2.3 ms at 1,000 turns, one Send in
// four).
func pathRoom(n int) int { return 32 + n/8 }

// repack says what pathValuesOfRows does with the path it read.
type repack int

const (
	repackNone repack = iota // nothing: the path is too short to pack
	repackRows               // keep it for packing, keeping the pack's rows that hold its first turns
	repackAnew               // keep it for packing, writing every row again (the pack is damaged)
)

// pathValuesOfRows is LoadPathValues from every row of branch b as read (on q, unless
// branchRange reads them in chunks); the path read is kept for WarmBranch to pack as
// pack says.
func (s *Store) pathValuesOfRows(ctx context.Context, q querier, b *Branch, pack repack) (*PathValues, error) {
	p, err := s.branchRange(ctx, q, b, 0, 0, LoadOptions{ValuesOnly: true})
	if err != nil {
		return nil, err
	}
	n := len(p.Nodes)
	pv := &PathValues{Total: p.Total, Keys: slices.Grow(p.Keys, pathRoom(n)), Turns: slices.Grow(p.Turns, pathRoom(n)),
		Started: make([]time.Time, n, n+pathRoom(n))}
	ids := make([]int64, len(p.Nodes))
	for i, nd := range p.Nodes {
		pv.Started[i], ids[i] = nd.Started, nd.id.Int64
	}
	if pack != repackNone && len(p.Turns) >= packMinTurns {
		s.queuePack(b.ConvID, b.Name, b.ID, ids, p.Turns, pack == repackAnew)
	}
	return pv, nil
}

// packedPrefix is the first turns of branch b's path from its pack rows, with their
// ids, and the path's turns after them (nodes): the whole pack when the path goes on from
// its last turn, its first b.Length turns when an undo moved the tip back into it, or
// else the pack without its last row when the path goes on from that (an undo, then
// other turns). It is none when no pack is on the path; a pack that cannot be read is
// errPackCorrupt (its rows are all there).
func (s *Store) packedPrefix(ctx context.Context, q querier, b *Branch, rows packRows) (ids []int64, turns []*trace.Turn, nodes []*TurnNode, err error) {
	n := b.Length
	if rows == nil || !b.tipID.Valid {
		return nil, nil, nil, nil
	}
	if ids, turns, err = rows.decode(n); err != nil {
		return nil, nil, nil, err
	}
	candidates := []int{len(ids)}
	if last := (len(ids) - 1) / packRowTurns * packRowTurns; last > 0 {
		candidates = append(candidates, last)
	}
	for _, p := range candidates {
		if p == n {
			if ids[n-1] == b.tipID.Int64 {
				return ids, turns, nil, nil
			}
			continue
		}
		// the turns after the pack, from its last turn on, which must be the pack's own
		nodes, err := pathWindow(ctx, q, b.tipID, n, p-1, 0)
		if err != nil {
			return nil, nil, nil, err
		}
		if len(nodes) == n-p+1 && nodes[0].id.Int64 == ids[p-1] {
			return ids[:p], turns[:p], nodes[1:], nil
		}
	}
	return nil, nil, nil, nil
}

// PathPackPending reports whether a path read for the branch waits to be packed, which
// WritePathPack does.
func (s *Store) PathPackPending(convID, branch string) bool {
	return s.packs.has(packKey(convID, branch))
}

// WritePathPack packs and writes the path waiting for the branch, if one is (WarmBranch
// does it too, once the write cache is warm); Close waits for it.
func (s *Store) WritePathPack(ctx context.Context, convID, branch string) error {
	if s.readOnly != "" {
		return nil
	}
	leave, ok := s.warm.join()
	if !ok {
		return nil
	}
	defer leave()
	return s.writePack(ctx, convID, branch)
}

// queuePack keeps a path read whole for the branch's next WarmBranch or WritePathPack to
// pack.
func (s *Store) queuePack(convID, branch string, branchID int64, ids []int64, turns []*trace.Turn, anew bool) {
	if s.readOnly != "" || len(turns) == 0 {
		return
	}
	s.packs.put(packKey(convID, branch), &pendingPack{branchID: branchID, ids: ids, turns: turns, anew: anew})
}

// writePack packs and writes the path waiting for the branch, if one is, and drops the
// packs of the conversation's other branches beyond the last few written. A path that
// cannot be packed (a value outside sig's canonical set) is left to its rows. A branch
// deleted meanwhile takes its pack with it (the insert fails on its key and nothing is
// written).
func (s *Store) writePack(ctx context.Context, convID, branch string) error {
	p := s.packs.take(packKey(convID, branch))
	if p == nil {
		return nil
	}
	// encoded before the write transaction, from the rows a reader finds: the
	// transaction encodes only what another process changed meanwhile
	plan := &packPlan{ids: p.ids, turns: p.turns, anew: p.anew}
	stored, err := readPackRows(ctx, s.r, p.branchID, false)
	if err != nil && !errors.Is(err, errPackCorrupt) {
		return fmt.Errorf("storage: read the path pack of branch %q: %w", branch, err)
	}
	if keep, _ := plan.kept(stored, err); plan.encode(keep) != nil {
		return nil
	}
	return s.writeLight(ctx, func(tx *wtx) error {
		wrote, err := writePackRows(ctx, tx, convID, p.branchID, plan)
		if errors.Is(err, ErrInvalid) {
			return nil // a value outside sig's canonical set: the path is left to its rows
		}
		if err != nil {
			return fmt.Errorf("storage: write the path pack of branch %q: %w", branch, err)
		}
		if !wrote {
			return nil
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM path_packs WHERE conv_id = ?1 AND branch_id NOT IN
			(SELECT branch_id FROM path_packs WHERE conv_id = ?1 GROUP BY branch_id ORDER BY max(written_at) DESC LIMIT ?2)`,
			convID, packsPerConversation)
		return err
	})
}
