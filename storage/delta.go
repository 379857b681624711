package storage

import (
	"encoding/binary"
	"errors"
)

// A conversation's new texts mostly repeat a recent one of the same kind: a request's
// last user message is the previous one's template (field markers, the instructions at
// its end) around a new question; a history entry repeats the previous entry's keys. Such
// a text is stored as a delta against that one (its base, stored whole): the lengths of
// the prefix and of the suffix they share, and the bytes in between. A delta is read
// with its base in the same query (loadContents), never through a chain.

// deltaMin is the shortest text worth a delta; deltaBases the recent whole texts of a kind
// a new text is compared with.
const (
	deltaMin   = 48
	deltaBases = 4
)

// baseRef is a content stored whole, a base for deltas.
type baseRef struct {
	id   int64
	body string
}

// delta picks the base of kind that shares most of body and returns it with the delta;
// base 0 (and body itself) when none saves at least half of the text.
func (c *writeCache) delta(kind, body string) (int64, []byte) {
	if kind == "" || len(body) < deltaMin {
		return 0, []byte(body)
	}
	var best baseRef
	bestP, bestS, bestN := 0, 0, len(body)/2
	for _, b := range c.bases(kind) {
		p, s := shared(b.body, body)
		if n := uvarintLen(p) + uvarintLen(s) + len(body) - p - s; n < bestN {
			best, bestP, bestS, bestN = b, p, s, n
		}
	}
	if best.id == 0 {
		return 0, []byte(body)
	}
	d := make([]byte, 0, bestN)
	d = binary.AppendUvarint(d, uint64(bestP))
	d = binary.AppendUvarint(d, uint64(bestS))
	d = append(d, body[bestP:len(body)-bestS]...)
	if back, err := undelta([]byte(best.body), d); err != nil || back != body {
		return 0, []byte(body) // cannot happen; a whole text is always right
	}
	return best.id, d
}

// shared is the length of the common prefix of a and b, and of their common suffix in
// what is left after it.
func shared(a, b string) (p, s int) {
	n := min(len(a), len(b))
	for p < n && a[p] == b[p] {
		p++
	}
	for s < n-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	return p, s
}

func uvarintLen(v int) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

var errDelta = errors.New("corrupt delta")

// undelta rebuilds a text from its base and its stored delta.
func undelta(base, d []byte) (string, error) {
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

// bases are the recent whole texts of kind, the running transaction's first.
func (c *writeCache) bases(kind string) []baseRef {
	if b, ok := c.stBases[kind]; ok {
		return b
	}
	return c.baseSets[kind]
}

// addBase makes a text just stored whole a base of its kind, the oldest giving way.
func (c *writeCache) addBase(kind string, id int64, body string) {
	if kind == "" || len(body) < deltaMin {
		return
	}
	old := c.bases(kind)
	if len(old) >= deltaBases {
		old = old[len(old)-deltaBases+1:]
	}
	c.stBases[kind] = append(append(make([]baseRef, 0, deltaBases), old...), baseRef{id, body})
}
