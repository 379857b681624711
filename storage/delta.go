package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
)

// A conversation's new texts mostly repeat recent ones of the same kind: a request's
// last user message is the previous one's template (field markers, the instructions at
// its end) around a new question; a history entry repeats the previous entry's keys and
// much of its values. Such a text is stored as a delta against one of them (its base,
// stored whole): a list of operations, each a uvarint n<<1|copy, then for a copy the
// uvarint offset of n bytes of the base to repeat, for an insert the n bytes themselves.
// A delta is read with its base in the same query (loadContents), never through a chain.
// (Schema 8 stored a shared prefix and suffix instead; migration 10 rewrote those.)

// deltaMin is the shortest text worth a delta; deltaBases the recent whole texts of a kind
// a new text is compared with; deltaMatch the shortest run of the base worth a copy;
// deltaMaxBase the longest text kept as a base.
const (
	deltaMin     = 48
	deltaBases   = 4
	deltaMatch   = 6
	deltaMaxBase = 1 << 16
)

// baseRef is a content stored whole, a base for deltas, with an index of its 4-byte
// grams: head[h] is the last position of a gram hashing to h, prev the one before it.
type baseRef struct {
	id   int64
	body string
	head []int32
	prev []int32
}

func newBase(id int64, body string) baseRef {
	b := baseRef{id: id, body: body, prev: make([]int32, len(body))}
	size := 64
	for size < len(body) {
		size <<= 1
	}
	b.head = make([]int32, size)
	for i := range b.head {
		b.head[i] = -1
	}
	for i := 0; i+4 <= len(body); i++ {
		h := gram(body, i) & uint32(size-1)
		b.prev[i], b.head[h] = b.head[h], int32(i)
	}
	return b
}

func gram(s string, i int) uint32 {
	return (uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16 | uint32(s[i+3])<<24) * 2654435761
}

// encode is body as a delta against b, or ok false when it would not be below limit bytes.
func (b *baseRef) encode(body string, limit int) ([]byte, bool) {
	d := make([]byte, 0, limit)
	lit := 0
	flush := func(end int) {
		if end > lit {
			d = binary.AppendUvarint(d, uint64(end-lit)<<1)
			d = append(d, body[lit:end]...)
		}
	}
	mask := uint32(len(b.head) - 1)
	for i := 0; i+deltaMatch <= len(body); {
		best, bestLen, steps := 0, 0, 0
		for j := b.head[gram(body, i)&mask]; j >= 0 && steps < 16; j, steps = b.prev[j], steps+1 {
			n := 0
			for int(j)+n < len(b.body) && i+n < len(body) && b.body[int(j)+n] == body[i+n] {
				n++
			}
			if n > bestLen {
				best, bestLen = int(j), n
			}
		}
		if bestLen < deltaMatch {
			i++
			continue
		}
		flush(i)
		d = binary.AppendUvarint(d, uint64(bestLen)<<1|1)
		d = binary.AppendUvarint(d, uint64(best))
		i += bestLen
		lit = i
		if len(d) >= limit {
			return nil, false
		}
	}
	flush(len(body))
	return d, len(d) < limit
}

// delta picks the base of kind that gives the smallest delta of body and returns it with
// the delta; base 0 (and body itself) when none is below three quarters of the text.
func (c *writeCache) delta(kind, body string) (int64, []byte) {
	if kind == "" || len(body) < deltaMin {
		return 0, []byte(body)
	}
	var best []byte
	var base baseRef
	limit := len(body) * 3 / 4
	for _, b := range c.bases(kind) {
		if d, ok := b.encode(body, limit); ok {
			best, base, limit = d, b, len(d)
		}
	}
	if best == nil {
		return 0, []byte(body)
	}
	if back, err := undelta([]byte(base.body), best); err != nil || back != body {
		return 0, []byte(body) // cannot happen; a whole text is always right
	}
	return base.id, best
}

var errDelta = errors.New("corrupt delta")

// undelta rebuilds a text from its base and its stored delta.
func undelta(base, d []byte) (string, error) {
	out := make([]byte, 0, 2*len(d))
	for len(d) > 0 {
		v, n := binary.Uvarint(d)
		if n <= 0 {
			return "", errDelta
		}
		d = d[n:]
		size := v >> 1
		if v&1 == 0 {
			if size > uint64(len(d)) {
				return "", errDelta
			}
			out = append(out, d[:size]...)
			d = d[size:]
			continue
		}
		off, n := binary.Uvarint(d)
		if n <= 0 || off > uint64(len(base)) || size > uint64(len(base))-off {
			return "", errDelta
		}
		d = d[n:]
		out = append(out, base[off:off+size]...)
	}
	return string(out), nil
}

// bases are the recent whole texts of kind, the running transaction's first.
func (c *writeCache) bases(kind string) []baseRef {
	if b, ok := c.stBases[kind]; ok {
		return b
	}
	return c.baseSets[kind]
}

// addBase makes a text just stored whole a base of its kind, the oldest giving way.
func (c *writeCache) addBase(kind string, id int64, body string) {
	if kind == "" || len(body) < deltaMin || len(body) > deltaMaxBase {
		return
	}
	old := c.bases(kind)
	if len(old) >= deltaBases {
		old = old[len(old)-deltaBases+1:]
	}
	c.stBases[kind] = append(append(make([]baseRef, 0, deltaBases), old...), newBase(id, body))
}

// undeltaV8 rebuilds a text from a schema-8 delta: the lengths of the prefix and of the
// suffix it shares with its base, then the bytes in between (migration 10 only).
func undeltaV8(base, d []byte) (string, error) {
	p, n := binary.Uvarint(d)
	if n <= 0 {
		return "", errDelta
	}
	d = d[n:]
	s, n := binary.Uvarint(d)
	if n <= 0 || p > uint64(len(base)) || s > uint64(len(base))-p {
		return "", errDelta
	}
	d = d[n:]
	out := make([]byte, 0, int(p)+len(d)+int(s))
	out = append(out, base[:p]...)
	out = append(out, d...)
	out = append(out, base[uint64(len(base))-s:]...)
	return string(out), nil
}

// rewriteDeltas turns schema 8's deltas into copies and inserts (migration 10).
func rewriteDeltas(ctx context.Context, tx *wtx) error {
	rows, err := tx.QueryContext(ctx, `SELECT c.id, c.body, b.body FROM contents c JOIN contents b ON b.id = c.base_id`)
	if err != nil {
		return fmt.Errorf("rewrite deltas: %w", err)
	}
	type delta struct {
		id   int64
		body []byte
	}
	var out []delta
	for rows.Next() {
		var id int64
		var d, base []byte
		if err := rows.Scan(&id, &d, &base); err != nil {
			rows.Close()
			return fmt.Errorf("rewrite deltas: %w", err)
		}
		text, err := undeltaV8(base, d)
		if err != nil {
			rows.Close()
			return fmt.Errorf("rewrite deltas: content %d: %w", id, err)
		}
		b := newBase(0, string(base))
		nd, ok := b.encode(text, len(text)+16) // may not shrink: still a delta of its base
		if !ok {
			nd = binary.AppendUvarint(nil, uint64(len(text))<<1)
			nd = append(nd, text...)
		}
		out = append(out, delta{id, nd})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("rewrite deltas: %w", err)
	}
	for _, d := range out {
		if _, err := tx.ExecContext(ctx, "UPDATE contents SET body = ? WHERE id = ?", d.body, d.id); err != nil {
			return fmt.Errorf("rewrite deltas: content %d: %w", d.id, err)
		}
	}
	return nil
}
