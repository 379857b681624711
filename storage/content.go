package storage

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"strconv"

	"github.com/sessionbench/sessionbench/core/lm"
)

// hash16 is the first half of a SHA-256: ample against accidental collisions for content
// addressing, and half the index size.
type hash16 [16]byte

// short is the part of h stored and indexed (schema 9): lookups compare what they find.
func (h hash16) short() []byte { return h[:8] }

func contentHash(body string) hash16 {
	s := sha256.Sum256([]byte(body))
	var h hash16
	copy(h[:], s[:16])
	return h
}

// chainHash names the list whose last element is (role, content) after the list parent:
// equal lists, and only equal lists, get equal hashes, so a list is found by its hash.
func chainHash(parent hash16, role string, content hash16) hash16 {
	d := sha256.New()
	d.Write(parent[:])
	d.Write([]byte(role))
	d.Write([]byte{0})
	d.Write(content[:])
	var h hash16
	copy(h[:], d.Sum(nil)[:16])
	return h
}

// querier is what reads need; both *sql.DB and *sql.Tx have it.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// putContent stores body once and returns its id and hash. A new body is stored as a
// delta against a recent content of the same kind (see delta.go) when that is much
// smaller; kind "" stores it whole.
func putContent(ctx context.Context, wc *writeCache, tx *wtx, kind, body string) (contentRef, error) {
	r, _, err := storeContent(ctx, wc, tx, kind, body)
	return r, err
}

// storeContent is putContent, also saying whether it inserted the content (then no list
// node refers to it yet).
func storeContent(ctx context.Context, wc *writeCache, tx *wtx, kind, body string) (contentRef, bool, error) {
	if r, ok := wc.content(body); ok {
		return r, false, nil
	}
	r := contentRef{hash: contentHash(body)}
	id, ok, err := findContent(ctx, tx, r.hash, body)
	if err != nil {
		return r, false, fmt.Errorf("look up content: %w", err)
	}
	if !ok {
		base, stored := wc.delta(kind, body)
		res, err := tx.ExecContext(ctx, "INSERT INTO contents(hash, body, base_id) VALUES (?, ?, ?)",
			r.hash.short(), stored, sql.NullInt64{Int64: base, Valid: base != 0})
		if err != nil {
			return r, false, fmt.Errorf("store content: %w", err)
		}
		if id, err = res.LastInsertId(); err != nil {
			return r, false, err
		}
		if base == 0 {
			wc.addBase(kind, id, body)
		}
	}
	r.id = id
	wc.stContents[body] = r
	return r, !ok, nil
}

// findContent looks body up by its hash, comparing the texts found under it.
func findContent(ctx context.Context, tx *wtx, h hash16, body string) (int64, bool, error) {
	rows, err := tx.QueryContext(ctx, `SELECT c.id, c.body, c.base_id IS NOT NULL, b.body
		FROM contents c LEFT JOIN contents b ON b.id = c.base_id WHERE c.hash = ?`, h.short())
	if err != nil {
		return 0, false, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var delta bool
		var stored, base sql.RawBytes
		if err := rows.Scan(&id, &stored, &delta, &base); err != nil {
			return 0, false, err
		}
		if !delta && string(stored) == body {
			return id, true, nil
		}
		if delta {
			if text, err := undelta(base, stored); err == nil && text == body {
				return id, true, nil
			}
		}
	}
	return 0, false, rows.Err()
}

// nullContent stores body unless it is empty (NULL then).
func nullContent(ctx context.Context, wc *writeCache, tx *wtx, kind, body string) (sql.NullInt64, error) {
	if body == "" {
		return sql.NullInt64{}, nil
	}
	r, err := putContent(ctx, wc, tx, kind, body)
	return sql.NullInt64{Int64: r.id, Valid: err == nil}, err
}

// listItem is one element of a stored list: a chat message, or a history entry (role "h").
// Extra is a message's other keys (lm.Message.Extra).
type listItem struct {
	Role, Body, Extra string
}

// key is what names the element in a list besides its content: its role, and its extra
// keys when it has any (so two messages differing only in those are different elements).
// Hashes of lists without extra keys are those of schema 7.
func (it listItem) key() string {
	if it.Extra == "" {
		return it.Role
	}
	return it.Role + "\x00" + it.Extra
}

// elems is a list's elements as putList takes them: listItems, or a request's messages,
// which are made into listItems only past what the request shares with the one stored
// before it (a request repeats the conversation: at 10,000 turns, copying its 20,000
// messages into items and comparing them one by one cost a commit more than storing it).
type elems struct {
	kind  elemKind
	items []listItem
	msgs  lm.MessageList
	ents  []entryJSON // a history's entries, as historyItems rendered them
}

type elemKind int

const (
	kindItems elemKind = iota
	kindMessages
	kindEntries
)

func itemsOf(items []listItem) elems       { return elems{items: items} }
func messagesOf(msgs lm.MessageList) elems { return elems{kind: kindMessages, msgs: msgs} }
func entriesOf(ents []entryJSON) elems     { return elems{kind: kindEntries, ents: ents} }

func (e elems) Len() int {
	switch e.kind {
	case kindMessages:
		return e.msgs.Len()
	case kindEntries:
		return len(e.ents)
	}
	return len(e.items)
}

// at is element i.
func (e elems) at(i int) listItem {
	switch e.kind {
	case kindMessages:
		m := e.msgs.At(i)
		return listItem{Role: m.Role, Body: m.Content, Extra: m.Extra}
	case kindEntries:
		return listItem{Role: "h", Body: e.ents[i].json}
	}
	return e.items[i]
}

// from is the elements from i on, as listItems.
func (e elems) from(i int) []listItem {
	switch e.kind {
	case kindMessages:
		return messageItems(e.msgs.Sub(i, e.msgs.Len()))
	case kindEntries:
		out := make([]listItem, len(e.ents)-i)
		for j, en := range e.ents[i:] {
			out[j] = listItem{Role: "h", Body: en.json}
		}
		return out
	}
	return e.items[i:]
}

// head is the first n elements.
func (e elems) head(n int) elems {
	switch e.kind {
	case kindMessages:
		return messagesOf(e.msgs.Sub(0, n))
	case kindEntries:
		return entriesOf(e.ents[:n:n])
	}
	return itemsOf(e.items[:n:n])
}

// commonPrefix is how many elements e and p begin with: two requests are compared as
// message lists (whose texts mostly are the same strings, compared as raw memory), two
// histories by their entries' JSON (mostly the same strings too).
func (e elems) commonPrefix(p elems) int {
	n := min(e.Len(), p.Len())
	switch {
	case e.kind == kindMessages && p.kind == kindMessages:
		return e.msgs.CommonPrefix(p.msgs)
	case e.kind == kindEntries && p.kind == kindEntries:
		if n > 0 && &e.ents[0] == &p.ents[0] {
			// views of one array of a key's entries, which historyItems only ever
			// extends past what a view holds: the same entries as far as both go
			return n
		}
		for i := range n {
			if e.ents[i].json != p.ents[i].json {
				return i
			}
		}
		return n
	}
	for i := range n {
		if e.at(i) != p.at(i) {
			return i
		}
	}
	return n
}

// storedList is where putList put a list: the path ending at head (the whole list, or
// the part before the run), then, when tailLen > 0, the last tailLen elements of the path
// ending at tail (the run).
type storedList struct {
	head, tail sql.NullInt64
	tailLen    int
}

// putList stores an ordered list in the shared prefix tree. A list that extends one
// already stored (each request repeats the conversation so far and adds a few messages)
// is a path from the root, and costs only its new elements: what makes a long session
// cost about its unique bytes. A list that does not (a sliding window starts one turn
// later each time) keeps its stored prefix (the system message, demos) as head and the
// rest as a run: the continuation of the run of the list stored before it under the same
// key (the same predictor's previous request), so consecutive windows share their nodes
// too (key "" stores the list as one path). The prefix is found through the write cache, element by element, when it holds
// the first element's node (the usual case: the previous request put it there);
// otherwise by the chain hashes.
func putList(ctx context.Context, wc *writeCache, tx *wtx, key string, l elems) (storedList, error) {
	n := l.Len()
	if n == 0 {
		return storedList{}, nil
	}
	// The first lo elements are stored, ending at parent; path holds their nodes. The
	// previous list under key gives the nodes of what it shares with this one (texts
	// compare at once when they are the same strings, as repeated texts mostly are).
	prev := wc.path(key)
	lo := min(l.commonPrefix(prev.l), prev.nodes.len())
	if lo > 0 && prev.nodes.at(lo-1).id == 0 {
		// a list seeded from the turn before's hashes (seedPath) knows the nodes of its
		// whole prefix only: a list sharing less of it is found as if nothing were cached
		lo = 0
	}
	path := prev.nodes.prefix(lo) // pushing leaves the previous list's nodes as they are
	// items are the elements past that prefix, the only ones made into listItems:
	// items[i] is element base+i.
	base := lo
	items := l.from(base)
	cached := func() {
		parent := nodeRef{}
		if lo > 0 {
			parent = path.at(lo - 1)
		}
		for ; lo < n; lo++ {
			it := items[lo-base]
			c, ok := wc.content(it.Body)
			if !ok {
				return
			}
			nd, ok := wc.node(nodeKey{parent.id, it.key(), c.id})
			if !ok {
				return
			}
			parent = nd
			path.push(nd)
		}
	}
	cached()
	if lo == 0 && key != "" && n >= runFrom {
		// A window that slid on: the run of the previous list goes on, which the chain
		// hashes would not find (that list began an element earlier).
		if sl, ok, err := putRun(ctx, wc, tx, key, nodeRef{}, items); err != nil || ok {
			if ok {
				wc.stPaths[key] = listPath{l: l.head(0), nodes: path}
			}
			return sl, err
		}
	}
	if lo == 0 {
		if _, found, err := storedPrefix(ctx, wc, tx, items); err != nil || found == 0 {
			if err != nil {
				return storedList{}, err
			}
		} else {
			cached() // storedPrefix put the prefix's nodes in the cache
		}
	}
	parent := nodeRef{}
	if lo > 0 {
		parent = path.at(lo - 1)
	}
	rest := items[lo-base:]
	if key != "" && len(rest) >= runFrom {
		if sl, ok, err := putRun(ctx, wc, tx, key, parent, rest); err != nil || ok {
			if ok {
				wc.stPaths[key] = listPath{l: l.head(lo), nodes: path}
			}
			return sl, err
		}
	}
	last, nodes, err := appendNodes(ctx, wc, tx, key, parent, rest)
	if err != nil {
		return storedList{}, err
	}
	if key != "" && len(rest) >= runFrom {
		wc.stRuns[key] = nodeRun{nodes: nodes} // a run the next list under this key may continue
	}
	for _, nd := range nodes {
		path.push(nd)
	}
	wc.stPaths[key] = listPath{l: l, nodes: path}
	return storedList{head: sql.NullInt64{Int64: last.id, Valid: true}}, nil
}

// appendNodes stores items as a chain below parent (found in the cache or the table when
// already there) and returns the last node and the chain. key is the list's (putList),
// which with the role is the kind of its new contents. Below a node it has just
// inserted, or for a text it has just stored, it inserts without looking: a new node has
// no children and a new text no nodes (parent_id and content_id are foreign keys, so no
// node outlives what it refers to, to be taken for a node of a reused id).
func appendNodes(ctx context.Context, wc *writeCache, tx *wtx, key string, parent nodeRef, items []listItem) (nodeRef, []nodeRef, error) {
	nodes := make([]nodeRef, 0, len(items))
	fresh := false // parent was inserted here
	for i, it := range items {
		c, newText, err := storeContent(ctx, wc, tx, key+"\x00"+it.Role, it.Body)
		if err != nil {
			return parent, nil, err
		}
		k := nodeKey{parent.id, it.key(), c.id}
		if n, ok := wc.node(k); ok {
			parent, fresh = n, false
			nodes = append(nodes, n)
			continue
		}
		chain := chainHash(parent.hash, it.key(), c.hash)
		pid, extra := sql.NullInt64{Int64: parent.id, Valid: parent.id != 0}, sql.NullString{String: it.Extra, Valid: it.Extra != ""}
		var id int64
		ok := false
		if !fresh && !newText {
			if id, ok, err = lookupID(tx.QueryRowContext(ctx,
				"SELECT id FROM list_nodes WHERE hash = ? AND parent_id IS ? AND role = ? AND content_id = ? AND extra IS ?",
				chain.short(), pid, it.Role, c.id, extra)); err != nil {
				return parent, nil, fmt.Errorf("look up list: %w", err)
			}
		}
		fresh = !ok
		if !ok {
			res, err := tx.ExecContext(ctx, "INSERT INTO list_nodes(hash, parent_id, role, content_id, depth, extra) VALUES (?, ?, ?, ?, ?, ?)",
				chain.short(), pid, it.Role, c.id, parent.depth+1, extra)
			if err != nil {
				return parent, nil, fmt.Errorf("store list element %d: %w", i, err)
			}
			if id, err = res.LastInsertId(); err != nil {
				return parent, nil, err
			}
		}
		parent = nodeRef{id: id, hash: chain, depth: parent.depth + 1, role: it.key(), content: c.id}
		wc.stNodes[k] = parent
		nodes = append(nodes, parent)
	}
	return parent, nodes, nil
}

// storedPrefix finds the longest stored prefix of items without the cache: stored
// prefixes are closed under shortening, so it is found by binary search over the chain
// hashes (the whole list, a replayed or repeated request, is tried first). The nodes of
// that prefix go into the cache, so the next list sharing it is found there. The path
// found is compared with items (cachePath); in the unlikely case that it is another list
// whose hashes collide, none is used (the list is stored anew).
func storedPrefix(ctx context.Context, wc *writeCache, tx *wtx, items []listItem) (nodeRef, int, error) {
	chain := make([]hash16, len(items))
	prev := hash16{}
	for i, it := range items {
		prev = chainHash(prev, it.key(), contentHash(it.Body))
		chain[i] = prev
	}
	lookup := func(i int) (int64, bool, error) {
		id, ok, err := lookupID(tx.QueryRowContext(ctx, "SELECT id FROM list_nodes WHERE hash = ? AND depth = ?", chain[i].short(), i+1))
		if err != nil {
			err = fmt.Errorf("look up list: %w", err)
		}
		return id, ok, err
	}
	if id, ok, err := lookup(len(items) - 1); err != nil {
		return nodeRef{}, 0, err
	} else if ok {
		return wc.cachePath(ctx, tx, id, items, chain, len(items))
	}
	lo, hi := 0, len(items)-1 // items[:lo] stored, items[:hi+1] not
	for lo < hi {
		mid := (lo + hi) / 2 // probe prefix of length mid+1
		_, ok, err := lookup(mid)
		if err != nil {
			return nodeRef{}, 0, err
		}
		if ok {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == 0 {
		return nodeRef{}, 0, nil
	}
	id, _, err := lookup(lo - 1)
	if err != nil {
		return nodeRef{}, 0, err
	}
	return wc.cachePath(ctx, tx, id, items, chain, lo)
}

// cachePath puts the nodes of the stored list items[:n], ending at node last, into the
// cache (one walk up the tree), and returns that last node; n 0 when the path there is
// not items[:n] (its hashes only collide).
func (c *writeCache) cachePath(ctx context.Context, tx *wtx, last int64, items []listItem, chain []hash16, n int) (nodeRef, int, error) {
	c.readBack.Add(1)
	path, err := walkUp(ctx, tx, last)
	if err != nil {
		return nodeRef{}, 0, err
	}
	if len(path) != n {
		return nodeRef{}, 0, nil
	}
	for i, nd := range path {
		if it := items[nd.depth-1]; nd.depth != n-i || nd.role != it.Role || nd.extra != it.Extra || nd.body != it.Body {
			return nodeRef{}, 0, nil
		}
	}
	for _, nd := range path {
		it := items[nd.depth-1]
		c.stNodes[nodeKey{nd.parent, it.key(), nd.content}] = nodeRef{id: nd.id, hash: chain[nd.depth-1], depth: nd.depth, role: it.key(), content: nd.content}
		c.stContents[it.Body] = contentRef{id: nd.content, hash: contentHash(it.Body)}
	}
	return nodeRef{id: last, hash: chain[n-1], depth: n, role: items[n-1].key()}, n, nil
}

// storedNode is a list node as stored, with its text: parent is 0 for a list's first
// element, hash the stored (short) chain hash.
type storedNode struct {
	id, parent, content int64
	depth               int
	role, extra, body   string
	hash                []byte
}

// walkUp reads the path ending at node last, from last up to the list's first element,
// with the elements' texts (one query). The walk carries ids only (a recursive CTE
// copies what it carries through its queue); each node and its text are read once,
// after it, the walk's order kept by the CROSS JOINs.
func walkUp(ctx context.Context, tx *wtx, last int64) ([]storedNode, error) {
	rows, err := tx.QueryContext(ctx, `WITH RECURSIVE up(id, parent_id) AS (
			SELECT id, parent_id FROM list_nodes WHERE id = ?
			UNION ALL SELECT l.id, l.parent_id FROM list_nodes l JOIN up ON l.id = up.parent_id)
		SELECT l.id, coalesce(l.parent_id, 0), l.content_id, l.depth, l.role, coalesce(l.extra, ''), l.hash,
			c.body, c.base_id IS NOT NULL, b.body
		FROM up CROSS JOIN list_nodes l ON l.id = up.id CROSS JOIN contents c ON c.id = l.content_id
			LEFT JOIN contents b ON b.id = c.base_id`, last)
	if err != nil {
		return nil, fmt.Errorf("look up list: %w", err)
	}
	defer rows.Close()
	var path []storedNode
	for rows.Next() {
		var nd storedNode
		var delta bool
		var body, base sql.RawBytes
		if err := rows.Scan(&nd.id, &nd.parent, &nd.content, &nd.depth, &nd.role, &nd.extra, &nd.hash, &body, &delta, &base); err != nil {
			return nil, fmt.Errorf("look up list: %w", err)
		}
		nd.body = string(body)
		if delta {
			if nd.body, err = undelta(base, body); err != nil {
				return nil, fmt.Errorf("look up list: content %d: %w", nd.content, err)
			}
		}
		path = append(path, nd)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("look up list: %w", err)
	}
	return path, nil
}

// idsJSON renders ids as a JSON array for json_each(?), which keeps a set of ids one
// bound parameter (no SQL built from strings, no parameter-count limit). Repeated ids are
// sent once: an IN over json_each builds a temporary index of every element.
func idsJSON(ids []int64) string {
	seen := make(map[int64]struct{}, len(ids))
	b := make([]byte, 0, 8*len(ids)+2)
	b = append(b, '[')
	for _, id := range ids {
		if _, dup := seen[id]; dup {
			continue
		}
		seen[id] = struct{}{}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, ']'))
}

// loadContents fetches texts by id (a delta with its base), one query.
func loadContents(ctx context.Context, q querier, ids []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := q.QueryContext(ctx, `SELECT c.id, c.body, c.base_id IS NOT NULL, b.body
		FROM contents c LEFT JOIN contents b ON b.id = c.base_id WHERE c.id IN (SELECT value FROM json_each(?))`, idsJSON(ids))
	if err != nil {
		return nil, fmt.Errorf("load contents: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var delta bool
		var body, base sql.RawBytes
		if err := rows.Scan(&id, &body, &delta, &base); err != nil {
			return nil, fmt.Errorf("load contents: %w", err)
		}
		if !delta {
			out[id] = string(body)
			continue
		}
		text, err := undelta(base, body)
		if err != nil {
			return nil, fmt.Errorf("load contents: content %d: %w", id, err)
		}
		out[id] = text
	}
	return out, rows.Err()
}
