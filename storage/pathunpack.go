package storage

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math"
	"time"
	"unsafe"

	"github.com/sessionbench/sessionbench/core/limits"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// Decoding a path pack (its layout: pathpack.go).

// packReader decodes a pack. The first error sticks: later reads return zero values,
// and the caller checks err once per turn.
type packReader struct {
	data string // the pack; decoded strings are its substrings
	pos  int
	strs []string
	// boxed holds each string of strs as a value once boxed (a string in an any is an
	// allocation of its own, and a turn's question reappears in its calls' inputs)
	boxed []any
	keys  []string // a map's keys, read before the map is made (MakeMap copies them)
	// turns and calls are allocated in slabs, not one by one: a restore decodes
	// thousands, and the slabs live as long as the path they hold does
	turnSlab []trace.Turn
	callSlab []trace.Call
	err      error
}

// fromSlab hands out the next element of slab, a new slab of n when it is used up.
func fromSlab[T any](slab *[]T, n int) *T {
	if len(*slab) == 0 {
		*slab = make([]T, n)
	}
	e := &(*slab)[0]
	*slab = (*slab)[1:]
	return e
}

// decodePack decodes the first want turns of a pack (all it holds when want is larger)
// with their ids, and says how many it holds. The decoded strings share pack's bytes
// (a copy of a row is 2.6 KB a turn, a page fault per two turns in a new process): the
// caller gives pack up, and never changes it afterwards.
func decodePack(pack []byte, want int) (ids []int64, turns []*trace.Turn, held int, err error) {
	if err := checkPack(pack); err != nil {
		return nil, nil, 0, err
	}
	data := unsafe.String(unsafe.SliceData(pack), len(pack)-4)
	h := &packReader{data: data, pos: len(packMagic)}
	h.uint() // the format, checked
	total, nseg := h.uint(), h.uint()
	if h.err != nil || total > uint64(len(data)) || nseg > uint64(len(data)) {
		return nil, nil, 0, errPackCorrupt
	}
	type segment struct{ first, turns, off, end int }
	segs := make([]segment, nseg)
	first := 0
	for i := range segs {
		n, size := h.uint(), h.uint()
		if h.err != nil || n > total || size > uint64(len(data)) {
			return nil, nil, 0, errPackCorrupt
		}
		segs[i] = segment{first: first, turns: int(n), end: int(size)}
		first += int(n)
	}
	off := h.pos
	for i := range segs {
		segs[i].off, segs[i].end = off, off+segs[i].end
		off = segs[i].end
	}
	if first != int(total) || off != len(data) {
		return nil, nil, 0, errPackCorrupt
	}
	held = int(total)
	want = min(want, held)
	ids, turns = make([]int64, want), make([]*trace.Turn, want)
	for len(segs) > 0 && segs[len(segs)-1].first >= want {
		segs = segs[:len(segs)-1]
	}
	// one after the other: a stored row is one segment (packRows.decode decodes the
	// rows at once)
	for i, sg := range segs {
		r := &packReader{data: data[:sg.end], pos: sg.off}
		n := min(sg.turns, want-sg.first)
		for j := sg.first; j < sg.first+n; j++ {
			if ids[j], turns[j], err = r.turn(); err != nil {
				return nil, nil, 0, err
			}
		}
		if n == sg.turns && r.pos != sg.end {
			return nil, nil, 0, fmt.Errorf("%w: segment %d ends at byte %d, not %d", errPackCorrupt, i, r.pos, sg.end)
		}
	}
	return ids, turns, held, nil
}

// checkPack checks a pack's magic, checksum and format, which decoding it checks first:
// a pack damaged in any byte fails it.
func checkPack(pack []byte) error {
	if len(pack) < len(packMagic)+4 || string(pack[:len(packMagic)]) != packMagic {
		return errPackCorrupt
	}
	body := pack[:len(pack)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(pack[len(body):]) {
		return fmt.Errorf("%w: its checksum does not match", errPackCorrupt)
	}
	if f, n := binary.Uvarint(body[len(packMagic):]); n <= 0 || f != packFormat {
		return fmt.Errorf("%w: format %d, want %d", errPackCorrupt, f, packFormat)
	}
	return nil
}

func (r *packReader) fail() {
	if r.err == nil {
		r.err = fmt.Errorf("%w at byte %d", errPackCorrupt, r.pos)
	}
}

func (r *packReader) uint() uint64 {
	if r.err != nil {
		return 0
	}
	var v uint64
	var s uint
	for i := 0; i < binary.MaxVarintLen64; i++ {
		if r.pos >= len(r.data) {
			break
		}
		b := r.data[r.pos]
		r.pos++
		if b < 0x80 {
			if i == binary.MaxVarintLen64-1 && b > 1 {
				break
			}
			return v | uint64(b)<<s
		}
		v |= uint64(b&0x7f) << s
		s += 7
	}
	r.fail()
	return 0
}

func (r *packReader) int() int64 {
	u := r.uint()
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x
}

func (r *packReader) byte() byte {
	if r.err != nil || r.pos >= len(r.data) {
		r.fail()
		return 0
	}
	b := r.data[r.pos]
	r.pos++
	return b
}

func (r *packReader) bool() bool { return r.byte() != 0 }

func (r *packReader) str() string {
	s, _ := r.strIndex()
	return s
}

// strIndex reads a string and its place in strs (-1 when there is none: a corrupt pack).
func (r *packReader) strIndex() (string, int) {
	i := r.uint()
	if i > 0 {
		if i > uint64(len(r.strs)) {
			r.fail()
			return "", -1
		}
		return r.strs[i-1], int(i - 1)
	}
	n := r.uint()
	if r.err != nil || n > uint64(len(r.data)-r.pos) {
		r.fail()
		return "", -1
	}
	s := r.data[r.pos : r.pos+int(n)]
	r.pos += int(n)
	r.strs = append(r.strs, s)
	return s, len(r.strs) - 1
}

// boxedStr reads a string as a value, boxed once per distinct string.
func (r *packReader) boxedStr() any {
	s, i := r.strIndex()
	if i < 0 {
		return s
	}
	for len(r.boxed) <= i {
		r.boxed = append(r.boxed, nil)
	}
	if r.boxed[i] == nil {
		r.boxed[i] = s
	}
	return r.boxed[i]
}

// length reads a length written by packWriter.length: n, and whether it was nil. A
// length no pack of this size could hold is corruption.
func (r *packReader) length() (int, bool) {
	n := r.uint()
	if n == 0 {
		return 0, true
	}
	if n-1 > uint64(len(r.data)-r.pos) {
		r.fail()
		return 0, true
	}
	return int(n - 1), false
}

func (r *packReader) time() time.Time {
	switch r.uint() {
	case 0:
		return time.Time{}
	case 1:
		return time.Unix(0, r.int()).UTC()
	}
	r.fail()
	return time.Time{}
}

func (r *packReader) float() float64 {
	if r.err != nil || len(r.data)-r.pos < 8 {
		r.fail()
		return 0
	}
	b := r.data[r.pos : r.pos+8]
	r.pos += 8
	return math.Float64frombits(uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56)
}

// turn reads the next turn and its id.
func (r *packReader) turn() (int64, *trace.Turn, error) {
	id := r.int()
	t := fromSlab(&r.turnSlab, 64) // zeroed: set field by field, as calls are
	t.Index = int(r.int())
	t.Started, t.Ended = r.time(), r.time()
	t.Status, t.Error = trace.Status(r.str()), r.str()
	t.Explicit = r.bool()
	if r.bool() {
		f := r.float()
		t.Score = &f
	}
	t.Inputs = r.mapValue()
	t.Outputs = r.mapValue()
	t.History.Messages = r.maps()
	if n, isNil := r.length(); !isNil {
		t.Calls = make([]*trace.Call, n)
		for i := range t.Calls {
			t.Calls[i] = r.call(0)
		}
	}
	if n, isNil := r.length(); !isNil {
		t.Attempts = make([]*trace.Attempt, n)
		for i := range t.Attempts {
			t.Attempts[i] = r.attempt()
		}
	}
	if r.err != nil {
		return 0, nil, r.err
	}
	return id, t, nil
}

func (r *packReader) maps() []*sig.Map {
	n, isNil := r.length()
	if isNil {
		return nil
	}
	out := make([]*sig.Map, n)
	for i := range out {
		out[i] = r.mapValue()
	}
	return out
}

// mapValue reads a value that must be a map or nil.
func (r *packReader) mapValue() *sig.Map {
	v := r.value(0)
	m, ok := v.(*sig.Map)
	if !ok && v != nil {
		r.fail()
	}
	return m
}

func (r *packReader) call(depth int) *trace.Call {
	if depth > limits.Depth {
		r.fail()
	}
	if r.err != nil {
		return nil
	}
	// field by field into the slab's zeroed element: a whole struct assigned costs a
	// copy of its 440 bytes a call; the fields not set (the request: Messages) are
	// what a ValuesOnly read leaves there
	c := fromSlab(&r.callSlab, 128)
	c.ID, c.Path, c.PredictorType, c.Adapter, c.Model = r.str(), r.str(), r.str(), r.str(), r.str()
	c.Inputs = r.mapValue()
	c.Outputs = r.mapValue()
	c.Started = r.time()
	c.Latency = time.Duration(r.int())
	c.Error = r.str()
	c.Recovered = r.str()
	if n, isNil := r.length(); !isNil {
		c.Children = make([]*trace.Call, n)
		for i := range c.Children {
			c.Children[i] = r.call(depth + 1)
		}
	}
	return c
}

func (r *packReader) attempt() *trace.Attempt {
	a := &trace.Attempt{Step: r.str(), N: int(r.int()), Score: r.float(), Time: r.time(), Summary: r.str()}
	a.Details = r.mapValue()
	a.Best = r.bool()
	a.Error = r.str()
	if n, isNil := r.length(); !isNil {
		a.Calls = make([]string, n)
		for i := range a.Calls {
			a.Calls[i] = r.str()
		}
	}
	return a
}

func (r *packReader) value(depth int) any {
	if depth > limits.Depth {
		r.fail()
	}
	switch r.byte() {
	case vNil:
		return nil
	case vFalse:
		return false
	case vTrue:
		return true
	case vString:
		return r.boxedStr()
	case vInt:
		return r.int()
	case vFloat:
		return r.float()
	case vNumber:
		return json.Number(r.str())
	case vList:
		n, isNil := r.length()
		if isNil {
			return []any(nil)
		}
		out := make([]any, n)
		for i := range out {
			out[i] = r.value(depth + 1)
		}
		return out
	case vMap:
		n := r.uint()
		if r.err != nil || n > uint64(len(r.data)-r.pos) {
			r.fail()
			return nil
		}
		keys := r.keys[:0]
		for range n {
			keys = append(keys, r.str())
			if r.err != nil {
				return nil
			}
		}
		m, vals := sig.MakeMap(keys)
		r.keys = keys[:0] // nested maps below reuse it: MakeMap has copied the keys
		for i := range vals {
			vals[i] = r.value(depth + 1)
		}
		return m
	case vHistory:
		n, isNil := r.length()
		h := sig.History{}
		if !isNil {
			h.Messages = make([]*sig.Map, n)
			for i := range h.Messages {
				h.Messages[i] = r.mapValue()
			}
		}
		return h
	}
	r.fail()
	return nil
}
