package storage

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"reflect"
	"time"

	"github.com/sessionbench/sessionbench/core/limits"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// A path pack is a branch's path as a session restores it (LoadOptions.ValuesOnly: each
// turn's values with its calls' values, its id and start time) in one value, written
// beside the rows it copies (pathvalues.go says when, and how it is kept exact). A new
// process restoring a long unwindowed branch otherwise reads every turn's and every
// call's row: at 1,000 turns most of a `sessionbench run`'s wait, and the cost is the
// rows times their columns, each column fetched through the driver. A branch's pack is
// stored as rows of packRowTurns turns, each row a pack of its own (packrows.go, which
// decodes the rows at once), decoded here without JSON.
//
// Layout: packMagic, the format, the number of turns and of segments, each segment's
// number of turns and bytes, the segments (their turns in order), and a CRC-32C of all
// that. Integers are varints; a string is uvarint 0 and its bytes (length first) the
// first time its segment has it, and uvarint i+1 for the i-th string the segment
// introduced after that (a turn's question reappears in its calls' inputs, every call
// names the same predictors). A list or a map has its length plus one, 0 for nil (a
// load tells nil from empty and the pack gives back what the load gave). Decoded
// strings share the pack's one string: restoring allocates the values' structures only.
const (
	packMagic  = "SBPK"
	packFormat = 2
	// packSegmentTurns is how many turns a segment holds: segments are decoded at once,
	// each with strings of its own. A stored row (packRowTurns) is one segment.
	packSegmentTurns = 256
)

// value tags
const (
	vNil byte = iota
	vFalse
	vTrue
	vString
	vInt
	vFloat
	vNumber // json.Number: a number beyond int64 or float64, kept as its text
	vList
	vMap
	vHistory
)

// castagnoli is the pack's checksum polynomial (CRC-32C, hardware on amd64 and arm64):
// a pack damaged in any byte is read from the rows instead.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errPackCorrupt marks a pack that cannot be decoded; the caller reads the rows instead.
var errPackCorrupt = errors.New("path pack is corrupt")

// packWriter encodes a pack.
type packWriter struct {
	buf  []byte
	strs map[string]uint64
	err  error // the first thing refused (fail)
}

// encodePack packs turns (ids and turns in path order, as a ValuesOnly read gives them).
// A turn carrying more than a ValuesOnly read gives (a request, a history, usage) is
// refused: a pack holds only what it can give back exactly.
func encodePack(ids []int64, turns []*trace.Turn) ([]byte, error) {
	if len(ids) != len(turns) {
		return nil, fmt.Errorf("storage: pack %d ids for %d turns: %w", len(ids), len(turns), ErrInvalid)
	}
	var segs [][]byte
	for lo := 0; lo < len(turns); lo += packSegmentTurns {
		w := &packWriter{buf: make([]byte, 0, 256*packSegmentTurns), strs: map[string]uint64{}}
		for i := lo; i < min(lo+packSegmentTurns, len(turns)); i++ {
			if w.turn(ids[i], turns[i]); w.err != nil {
				return nil, fmt.Errorf("storage: pack turn %d: %w", ids[i], w.err)
			}
		}
		segs = append(segs, w.buf)
	}
	w := &packWriter{buf: make([]byte, 0, 32+8*len(segs))}
	w.buf = append(w.buf, packMagic...)
	w.uint(packFormat)
	w.uint(uint64(len(turns)))
	w.uint(uint64(len(segs)))
	for i, seg := range segs {
		w.uint(uint64(min(packSegmentTurns, len(turns)-i*packSegmentTurns)))
		w.uint(uint64(len(seg)))
	}
	for _, seg := range segs {
		w.buf = append(w.buf, seg...)
	}
	return binary.LittleEndian.AppendUint32(w.buf, crc32.Checksum(w.buf, castagnoli)), nil
}

func (w *packWriter) uint(v uint64) { w.buf = binary.AppendUvarint(w.buf, v) }
func (w *packWriter) int(v int64)   { w.buf = binary.AppendVarint(w.buf, v) }

func (w *packWriter) str(s string) {
	if i, ok := w.strs[s]; ok {
		w.uint(i + 1)
		return
	}
	w.strs[s] = uint64(len(w.strs))
	w.uint(0)
	w.uint(uint64(len(s)))
	w.buf = append(w.buf, s...)
}

func (w *packWriter) bool(b bool) {
	if b {
		w.buf = append(w.buf, 1)
	} else {
		w.buf = append(w.buf, 0)
	}
}

// length writes n, or nil's mark.
func (w *packWriter) length(n int, isNil bool) {
	if isNil {
		w.uint(0)
	} else {
		w.uint(uint64(n) + 1)
	}
}

func (w *packWriter) time(t time.Time) {
	if t.IsZero() {
		w.uint(0)
		return
	}
	n := t.UnixNano()
	if !time.Unix(0, n).Equal(t) {
		w.fail(fmt.Errorf("time %v is out of a pack's range: %w", t, ErrInvalid))
		return
	}
	w.uint(1)
	w.int(n)
}

func (w *packWriter) float(f float64) {
	w.buf = binary.LittleEndian.AppendUint64(w.buf, math.Float64bits(f))
}

// fail keeps the first error; the writer goes on writing, and encodePack checks it
// once a turn.
func (w *packWriter) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

func (w *packWriter) turn(id int64, t *trace.Turn) {
	if t == nil {
		w.fail(fmt.Errorf("a nil turn: %w", ErrInvalid))
		return
	}
	w.int(id)
	w.int(int64(t.Index))
	w.time(t.Started)
	w.time(t.Ended)
	w.str(string(t.Status))
	w.str(t.Error)
	w.bool(t.Explicit)
	w.bool(t.Score != nil)
	if t.Score != nil {
		w.float(*t.Score)
	}
	w.value(t.Inputs, 0)
	w.value(t.Outputs, 0)
	w.length(len(t.History.Messages), t.History.Messages == nil)
	for _, m := range t.History.Messages {
		w.value(m, 0)
	}
	w.length(len(t.Calls), t.Calls == nil)
	for _, c := range t.Calls {
		w.call(c, 0)
	}
	w.length(len(t.Attempts), t.Attempts == nil)
	for _, a := range t.Attempts {
		w.attempt(a)
	}
}

func (w *packWriter) call(c *trace.Call, depth int) {
	switch {
	case c == nil:
		w.fail(fmt.Errorf("a nil call: %w", ErrInvalid))
		return
	case depth > limits.Depth:
		w.fail(fmt.Errorf("call %s is nested deeper than %d: %w", c.ID, limits.Depth, ErrInvalid))
		return
	case c.Messages.Len() > 0 || c.History.Messages != nil || c.Completion != "" || c.RawRequest != "" ||
		c.RawResponse != "" || c.Tries != nil || c.Score != nil || !reflect.ValueOf(c.Params).IsZero() ||
		!reflect.ValueOf(c.Usage).IsZero():
		w.fail(fmt.Errorf("call %s carries more than its values: %w", c.ID, ErrInvalid))
		return
	}
	for _, s := range []string{c.ID, c.Path, c.PredictorType, c.Adapter, c.Model} {
		w.str(s)
	}
	w.value(c.Inputs, 0)
	w.value(c.Outputs, 0)
	w.time(c.Started)
	w.int(int64(c.Latency))
	w.str(c.Error)
	w.str(c.Recovered)
	w.length(len(c.Children), c.Children == nil)
	for _, ch := range c.Children {
		w.call(ch, depth+1)
	}
}

func (w *packWriter) attempt(a *trace.Attempt) {
	if a == nil {
		w.fail(fmt.Errorf("a nil attempt: %w", ErrInvalid))
		return
	}
	w.str(a.Step)
	w.int(int64(a.N))
	w.float(a.Score)
	w.time(a.Time)
	w.str(a.Summary)
	w.value(a.Details, 0)
	w.bool(a.Best)
	w.str(a.Error)
	w.length(len(a.Calls), a.Calls == nil)
	for _, s := range a.Calls {
		w.str(s)
	}
}

// value writes one value of sig's canonical set (sig.Normalize); any other kind is
// refused.
func (w *packWriter) value(v any, depth int) {
	if depth > limits.Depth {
		w.fail(fmt.Errorf("a value is nested deeper than %d: %w", limits.Depth, ErrInvalid))
		return
	}
	switch t := v.(type) {
	case nil:
		w.buf = append(w.buf, vNil)
	case bool:
		if t {
			w.buf = append(w.buf, vTrue)
		} else {
			w.buf = append(w.buf, vFalse)
		}
	case string:
		w.buf = append(w.buf, vString)
		w.str(t)
	case int64:
		w.buf = append(w.buf, vInt)
		w.int(t)
	case float64:
		w.buf = append(w.buf, vFloat)
		w.float(t)
	case json.Number:
		w.buf = append(w.buf, vNumber)
		w.str(string(t))
	case []any:
		w.buf = append(w.buf, vList)
		w.length(len(t), t == nil)
		for _, e := range t {
			w.value(e, depth+1)
		}
	case *sig.Map:
		if t == nil {
			w.buf = append(w.buf, vNil)
			return
		}
		w.buf = append(w.buf, vMap)
		w.uint(uint64(t.Len()))
		for i := range t.Len() { // the keys first: the reader sizes the map with them
			k, _ := t.Entry(i)
			w.str(k)
		}
		for i := range t.Len() {
			_, e := t.Entry(i)
			w.value(e, depth+1)
		}
	case sig.History:
		w.buf = append(w.buf, vHistory)
		w.length(len(t.Messages), t.Messages == nil)
		for _, m := range t.Messages {
			w.value(m, depth+1)
		}
	default:
		w.fail(fmt.Errorf("a value of type %T cannot be packed: %w", v, ErrInvalid))
	}
}
