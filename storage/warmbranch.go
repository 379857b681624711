package storage

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// WarmBranch puts the request and history lists of the calls of the branch's tip turn
// into the write cache, as committing that turn left them in the process that ran it. The
// next turn's requests repeat them, so its commit finds the shared prefix in the cache;
// in a process that has not written on the branch yet, it would otherwise look the prefix
// up and read every text of it back (a third of a first Send's time on a 10,000-turn
// unwindowed branch). The workbench calls it (through Prefetch) while the user types. (A
// turn nobody prefetched for has what its commit needs of each list put in the cache as
// its calls begin instead: BranchSink.PrepareCall, seedPath.) It reads
// the stored lists as they are, their nodes and texts (a history's entries are decoded,
// for the render cache), and writes nothing but the branch's path pack when a restore
// made one (pathvalues.go). A list stored as a run (a sliding window's)
// is left out: it is short, and the commit looks its elements up.
func (s *Store) WarmBranch(ctx context.Context, convID, branch string) error {
	return s.warmLists(ctx, convID, branch, false)
}

// WarmBranchSmall is WarmBranch for the calls too small to be seeded against the turn
// before (seedFrom: a windowed agent's, mostly), whose lists a turn's commit would
// otherwise look up: a turn nobody prefetched for starts it as its first model call
// begins, the larger calls being seeded as each begins (BranchSink.PrepareCall), for a
// fraction of what reading their lists back costs.
func (s *Store) WarmBranchSmall(ctx context.Context, convID, branch string) error {
	return s.warmLists(ctx, convID, branch, true)
}

func (s *Store) warmLists(ctx context.Context, convID, branch string, small bool) error {
	if s.readOnly != "" || s.wc == nil {
		return nil
	}
	leave, ok := s.warm.join() // Close waits for it
	if !ok {
		return nil
	}
	defer leave()
	// The lists are found by a hot read (hotread.go: a reader beside a turn's would
	// open another connection, parsing its statements again), outside a transaction;
	// each is then read in a write transaction of its own, for the
	// write cache (see writeCache), rolled back: nothing to commit (a list removed
	// meanwhile is not found there). One a list, each cached as soon as it is read: a
	// transaction holds the writer connection and the cache, so the turn that started
	// the warm-up can commit between two lists rather than after all of them, and a
	// call it records between two lists finds those cached so far.
	lists, err := branchLists(ctx, s.hotReads(ctx), convID, branch, small)
	if len(lists) > 0 {
		release := s.warm.wantWriter()
		for _, l := range lists {
			if err != nil {
				break
			}
			err = s.trial(ctx, true, func(tx *wtx) error { return cacheWarmList(ctx, s.wc, tx, l) })
		}
		s.wc.prepare(ctx, s.w) // the connection is free again
		release()
	}
	// then the path pack the branch's restore made: this turn's records and commit
	// wait for the cache, the next process's restore for the pack
	return errors.Join(err, s.writePack(ctx, convID, branch))
}

// warmList is a stored list WarmBranch caches: the last node of a call's request or
// history, and the write cache's key for it.
type warmList struct {
	key  string
	last int64
}

// branchLists are the stored lists of the calls of the branch's tip turn, in the order
// the calls were recorded (a list stored as a run is left out; with small, so are the
// lists of a call of seedFrom elements or more).
func branchLists(ctx context.Context, q querier, convID, branch string, small bool) ([]warmList, error) {
	br, err := branchByName(ctx, q, convID, branch)
	if err != nil || !br.tipID.Valid {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, `SELECT path, history_node, history_tail_len, messages_node, messages_tail_len,
			coalesce((SELECT depth FROM list_nodes WHERE id = c.history_node), 0) + history_tail_len +
			coalesce((SELECT depth FROM list_nodes WHERE id = c.messages_node), 0) + messages_tail_len
		FROM calls c WHERE turn_id = ?`, br.tipID.Int64)
	if err != nil {
		return nil, fmt.Errorf("storage: warm branch: %w", err)
	}
	defer rows.Close()
	var lists []warmList
	for rows.Next() {
		var path string
		var hist, msgs sql.NullInt64
		var histTail, msgsTail, size int
		if err := rows.Scan(&path, &hist, &histTail, &msgs, &msgsTail, &size); err != nil {
			return nil, fmt.Errorf("storage: warm branch: %w", err)
		}
		if small && size >= seedFrom {
			continue
		}
		if hist.Valid && histTail == 0 {
			lists = append(lists, warmList{"h\x00" + path, hist.Int64})
		}
		if msgs.Valid && msgsTail == 0 {
			lists = append(lists, warmList{"m\x00" + path, msgs.Int64})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: warm branch: %w", err)
	}
	return lists, nil
}

// cacheWarmList caches list l, unless this process has a list under its key already (it
// stored one since: a newer one than the tip's when its turn committed meanwhile).
func cacheWarmList(ctx context.Context, wc *writeCache, tx *wtx, l warmList) error {
	if wc.path(l.key).l.Len() > 0 {
		return nil
	}
	if err := cacheStoredList(ctx, wc, tx, l.key, l.last); err != nil {
		return fmt.Errorf("storage: warm branch: %w", err)
	}
	return nil
}

// cacheStoredList caches the stored list ending at node last as the list last stored under key,
// as putList leaves the list it stored: its elements and their nodes, and the nodes and
// texts by content. A path whose stored hashes are not those of its elements (a damaged
// file) is left out from there on: only what was checked is cached.
func cacheStoredList(ctx context.Context, wc *writeCache, tx *wtx, key string, last int64) error {
	up, err := walkUp(ctx, tx, last)
	if err != nil || len(up) == 0 {
		return err
	}
	n := len(up)
	items, nodes := make([]listItem, 0, n), make([]nodeRef, 0, n)
	parent := nodeRef{}
	for i := n - 1; i >= 0; i-- { // from the root
		nd := up[i]
		if nd.depth != parent.depth+1 || nd.parent != parent.id {
			return nil
		}
		body := nd.body
		it := listItem{Role: nd.role, Body: body, Extra: nd.extra}
		ch := contentHash(body)
		chain := chainHash(parent.hash, it.key(), ch)
		if !bytes.Equal(chain.short(), nd.hash) {
			return nil
		}
		k := nodeKey{parent.id, it.key(), nd.content}
		parent = nodeRef{id: nd.id, hash: chain, depth: nd.depth, role: it.key(), content: nd.content}
		wc.stNodes[k] = parent
		wc.stContents[body] = contentRef{id: nd.content, hash: ch}
		items, nodes = append(items, it), append(nodes, parent)
	}
	wc.stPaths[key] = listPath{l: itemsOf(items), nodes: nodePathOf(nodes)}
	if strings.HasPrefix(key, "h\x00") {
		wc.entries[key] = storedEntries(items)
	}
	return nil
}

// storedEntries is what historyItems keeps of a history's entries (entryJSON), made from
// their stored JSON, as far as each entry decodes to values that render it again exactly:
// the next commit then renders none of the entries it repeats. (Only an entry's values
// tell that it did not change, so they are decoded here, in the background, rather
// than in the commit.)
func storedEntries(items []listItem) []entryJSON {
	out := make([]entryJSON, 0, len(items))
	for _, it := range items {
		m, err := decodeHistoryEntry(it.Role, it.Body)
		if err != nil {
			break
		}
		if b, err := m.MarshalJSON(); err != nil || string(b) != it.Body {
			break
		}
		out = append(out, snapshot(m, it.Body))
	}
	return out
}
