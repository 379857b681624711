package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// hash16 is the first half of a SHA-256: ample against accidental collisions for content
// addressing, and half the index size.
type hash16 [16]byte

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

// putContent stores body once and returns its id.
func putContent(ctx context.Context, tx *sql.Tx, body string) (int64, error) {
	h := contentHash(body)
	var id int64
	err := tx.QueryRowContext(ctx, "SELECT id FROM contents WHERE hash = ?", h[:]).Scan(&id)
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("look up content: %w", err)
	}
	res, err := tx.ExecContext(ctx, "INSERT INTO contents(hash, body) VALUES (?, ?)", h[:], []byte(body))
	if err != nil {
		return 0, fmt.Errorf("store content: %w", err)
	}
	return res.LastInsertId()
}

// nullContent stores body unless it is empty (NULL then).
func nullContent(ctx context.Context, tx *sql.Tx, body string) (sql.NullInt64, error) {
	if body == "" {
		return sql.NullInt64{}, nil
	}
	id, err := putContent(ctx, tx, body)
	return sql.NullInt64{Int64: id, Valid: err == nil}, err
}

// listItem is one element of a stored list: a chat message, or a history entry (role "h").
type listItem struct {
	Role, Body string
}

// putList stores an ordered list as a path in the shared prefix tree and returns the id of
// its last node (NULL for an empty list) and the list's hash. Only the elements after the
// longest prefix already stored are written, which is what makes a long session cost about
// its unique bytes: each request repeats the conversation so far and adds a few messages.
func putList(ctx context.Context, tx *sql.Tx, items []listItem) (sql.NullInt64, hash16, error) {
	var zero hash16
	if len(items) == 0 {
		return sql.NullInt64{}, zero, nil
	}
	chain := make([]hash16, len(items))
	prev := zero
	for i, it := range items {
		prev = chainHash(prev, it.Role, contentHash(it.Body))
		chain[i] = prev
	}
	lookup := func(i int) (int64, bool, error) {
		var id int64
		err := tx.QueryRowContext(ctx, "SELECT id FROM list_nodes WHERE hash = ?", chain[i][:]).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, false, nil
		}
		return id, err == nil, err
	}
	// Stored prefixes are closed under shortening, so the longest one is found by binary
	// search; the whole list (a replayed or repeated request) is tried first.
	if id, ok, err := lookup(len(items) - 1); err != nil || ok {
		return sql.NullInt64{Int64: id, Valid: ok}, chain[len(chain)-1], err
	}
	lo, hi := 0, len(items)-1 // items[:lo] stored, items[:hi+1] not
	var parent sql.NullInt64
	for lo < hi {
		mid := (lo + hi) / 2 // probe prefix of length mid+1
		id, ok, err := lookup(mid)
		if err != nil {
			return sql.NullInt64{}, zero, fmt.Errorf("look up list: %w", err)
		}
		if ok {
			lo, parent = mid+1, sql.NullInt64{Int64: id, Valid: true}
		} else {
			hi = mid
		}
	}
	if lo > 0 && !parent.Valid {
		id, _, err := lookup(lo - 1)
		if err != nil {
			return sql.NullInt64{}, zero, fmt.Errorf("look up list: %w", err)
		}
		parent = sql.NullInt64{Int64: id, Valid: true}
	}
	for i := lo; i < len(items); i++ {
		cid, err := putContent(ctx, tx, items[i].Body)
		if err != nil {
			return sql.NullInt64{}, zero, err
		}
		res, err := tx.ExecContext(ctx,
			"INSERT INTO list_nodes(hash, parent_id, role, content_id, depth) VALUES (?, ?, ?, ?, ?)",
			chain[i][:], parent, items[i].Role, cid, i+1)
		if err != nil {
			return sql.NullInt64{}, zero, fmt.Errorf("store list element %d: %w", i, err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return sql.NullInt64{}, zero, err
		}
		parent = sql.NullInt64{Int64: id, Valid: true}
	}
	return parent, chain[len(chain)-1], nil
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

// loadContents fetches bodies by id, one query.
func loadContents(ctx context.Context, q querier, ids []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := q.QueryContext(ctx,
		"SELECT id, body FROM contents WHERE id IN (SELECT value FROM json_each(?))", idsJSON(ids))
	if err != nil {
		return nil, fmt.Errorf("load contents: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var body sql.RawBytes
		if err := rows.Scan(&id, &body); err != nil {
			return nil, fmt.Errorf("load contents: %w", err)
		}
		out[id] = string(body)
	}
	return out, rows.Err()
}

// loadLists reassembles the lists ending at the given nodes with two queries. Lists that
// extend one another share one backing array (each node's slot after it is claimed by its
// first child only), so a branch whose every request repeats the conversation so far
// costs memory linear in its unique messages, not quadratic.
func loadLists[T any](ctx context.Context, q querier, leaves []int64, conv func(role, body string) (T, error)) (map[int64][]T, error) {
	out := map[int64][]T{}
	if len(leaves) == 0 {
		return out, nil
	}
	// The walk carries ids only (its de-duplication index stays small); the columns are
	// read once per node by rowid afterwards.
	rows, err := q.QueryContext(ctx, `WITH RECURSIVE n(id) AS (
			SELECT value FROM json_each(?)
			UNION SELECT l.parent_id FROM list_nodes l JOIN n ON l.id = n.id WHERE l.parent_id IS NOT NULL)
		SELECT l.id, l.parent_id, l.role, l.content_id, l.depth FROM n JOIN list_nodes l ON l.id = n.id`,
		idsJSON(leaves))
	if err != nil {
		return nil, fmt.Errorf("load lists: %w", err)
	}
	type node struct {
		id, parent, content int64
		role                string
		depth               int
	}
	var nodes []node
	var cids []int64
	roles := map[string]string{} // a handful of distinct roles: one string each
	for rows.Next() {
		var n node
		var parent sql.NullInt64
		var role sql.RawBytes
		if err := rows.Scan(&n.id, &parent, &role, &n.content, &n.depth); err != nil {
			rows.Close()
			return nil, fmt.Errorf("load lists: %w", err)
		}
		r, ok := roles[string(role)]
		if !ok {
			r = string(role)
			roles[r] = r
		}
		n.parent, n.role = parent.Int64, r
		nodes = append(nodes, n)
		cids = append(cids, n.content)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load lists: %w", err)
	}
	bodies, err := loadContents(ctx, q, cids)
	if err != nil {
		return nil, err
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].depth < nodes[j].depth })
	claimed := make(map[int64]bool, len(nodes))
	for _, n := range nodes {
		v, err := conv(n.role, bodies[n.content])
		if err != nil {
			return nil, fmt.Errorf("list element %d: %w", n.id, err)
		}
		base := out[n.parent] // nil for a first element
		if claimed[n.parent] {
			base = append(make([]T, 0, len(base)+1), base...)
		}
		claimed[n.parent] = true
		out[n.id] = append(base, v)
	}
	return out, nil
}

// Raw HTTP request bodies repeat every message of the request, JSON-escaped. To keep them
// byte-exact without paying for them again, a body is stored as a template: literal
// segments and references to the call's own messages, re-escaped on load. The encoding is
// verified at write time; a body that does not reproduce exactly is stored literally.

// encodeRawRequest returns the template of raw over msgs, or ok=false.
func encodeRawRequest(raw string, msgs []string) (string, bool) {
	var parts []any
	cur := 0
	for i, m := range msgs {
		if len(m) < 32 {
			continue // a short message is cheaper as a literal
		}
		for _, html := range []bool{true, false} {
			esc := jsonString(m, html)
			at := strings.Index(raw[cur:], esc)
			if at < 0 {
				continue
			}
			ref := i + 1
			if !html {
				ref = -ref
			}
			parts = append(parts, raw[cur:cur+at], ref)
			cur += at + len(esc)
			break
		}
	}
	if len(parts) == 0 {
		return "", false
	}
	parts = append(parts, raw[cur:])
	b, err := json.Marshal(parts)
	if err != nil {
		return "", false
	}
	tpl := string(b)
	if back, err := decodeRawRequest(tpl, msgs); err != nil || back != raw {
		return "", false
	}
	return tpl, true
}

// decodeRawRequest rebuilds a body from its template.
func decodeRawRequest(tpl string, msgs []string) (string, error) {
	dec := json.NewDecoder(strings.NewReader(tpl))
	dec.UseNumber()
	var parts []any
	if err := dec.Decode(&parts); err != nil {
		return "", fmt.Errorf("raw request template: %w", err)
	}
	var b strings.Builder
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			b.WriteString(v)
		case json.Number:
			n, err := v.Int64()
			if err != nil {
				return "", fmt.Errorf("raw request template: bad reference %s", v)
			}
			html := n > 0
			if n < 0 {
				n = -n
			}
			if n < 1 || int(n) > len(msgs) {
				return "", fmt.Errorf("raw request template: message %d out of range (%d messages)", n, len(msgs))
			}
			b.WriteString(jsonString(msgs[n-1], html))
		default:
			return "", fmt.Errorf("raw request template: unexpected part %T", p)
		}
	}
	return b.String(), nil
}

// jsonString is s as a JSON string literal, as encoding/json writes it (with or without
// its HTML escaping of <, > and &).
func jsonString(s string, html bool) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(s); err != nil {
		return ""
	}
	return strings.TrimSuffix(buf.String(), "\n")
}
