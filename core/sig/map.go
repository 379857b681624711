// Package sig holds the leaf data of the engine: ordered value maps, Python-faithful
// value rendering, type annotations in Python spelling, and signatures.
//
// Values are plain Go data with JSON kinds kept apart: nil (None), bool, string,
// int64 (int), float64 (float), json.Number (an int too large for int64), []any (list),
// *Map (dict, insertion-ordered) and History. An int never silently becomes a float:
// JSON `2.0` decodes to float64 and renders `2.0`, JSON `2` to int64 and renders `2`.
package sig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/sessionbench/sessionbench/core/limits"
	"github.com/sessionbench/sessionbench/core/py"
)

// Map is an insertion-ordered string-keyed map, the Go form of a Python dict.
// The zero value is not usable; use NewMap. A nil *Map behaves as empty for reads.
//
// Most maps hold a handful of fields (a turn's inputs, a call's outputs, a history
// entry) and a long session keeps hundreds of thousands of them, so keys and values are
// two parallel slices searched in order; only a map that grows past indexFrom keys gets
// an index.
type Map struct {
	keys  []string
	vals  []any          // vals[i] is keys[i]'s value
	index map[string]int // key -> position; nil while the map is small
	// rendering is the map rendered as a history message (rendering.go); Set and
	// Delete drop it. One word: the map stays in the size class it had.
	rendering atomic.Pointer[Rendering]
}

// indexFrom is the size past which a map indexes its keys.
const indexFrom = 16

// NewMap builds a map from alternating key, value arguments: NewMap("q", "hi", "n", 3).
// Go ints are normalised to int64 and float32 to float64 so values keep one representation.
func NewMap(kv ...any) *Map {
	m := &Map{keys: make([]string, 0, len(kv)/2), vals: make([]any, 0, len(kv)/2)}
	for i := 0; i+1 < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			k = fmt.Sprint(kv[i])
		}
		m.Set(k, Normalize(kv[i+1]))
	}
	return m
}

// NewMapOf builds a map of distinct keys and their values (already normalised), sized
// exactly in one step: what a parse that found every field returns.
func NewMapOf(keys []string, vals []any) *Map {
	m, v := MakeMap(keys)
	copy(v, vals)
	return m
}

// MakeMap is NewMapOf for a caller that writes the values in place: it returns the map
// of the distinct keys and the slice of their values (nil until written), which the
// caller fills before the map is shared. A parse then copies no value.
func MakeMap(keys []string) (*Map, []any) {
	// Up to smallMap keys, one allocation of the map and arrays of exactly their size
	// (the bytes of three separate ones, in one: most maps hold one to four fields).
	// The arrays are full: an added key reallocates.
	switch len(keys) {
	case 0, 1:
		b := &struct {
			m Map
			k [1]string
			v [1]any
		}{}
		return b.m.fill(b.k[:], b.v[:], keys)
	case 2:
		b := &struct {
			m Map
			k [2]string
			v [2]any
		}{}
		return b.m.fill(b.k[:], b.v[:], keys)
	case 3:
		b := &struct {
			m Map
			k [3]string
			v [3]any
		}{}
		return b.m.fill(b.k[:], b.v[:], keys)
	case smallMap:
		b := &struct {
			m Map
			k [smallMap]string
			v [smallMap]any
		}{}
		return b.m.fill(b.k[:], b.v[:], keys)
	}
	n := len(keys)
	m := &Map{keys: append(make([]string, 0, n), keys...), vals: make([]any, n)}
	if n > indexFrom {
		m.reindex()
	}
	return m, m.vals
}

// fill makes m the map of keys over the arrays k and v (as long as keys, or one longer
// when keys is empty).
func (m *Map) fill(k []string, v []any, keys []string) (*Map, []any) {
	n := copy(k, keys)
	m.keys, m.vals = k[:n:n], v[:n:n]
	return m, m.vals
}

// smallMap is the size up to which NewMapOf allocates a map in one piece.
const smallMap = 4

// find is k's position, or -1.
func (m *Map) find(k string) int {
	if m.index != nil {
		if i, ok := m.index[k]; ok {
			return i
		}
		return -1
	}
	for i, kk := range m.keys {
		if kk == k {
			return i
		}
	}
	return -1
}

func (m *Map) reindex() {
	m.index = make(map[string]int, len(m.keys))
	for i, k := range m.keys {
		m.index[k] = i
	}
}

// Len reports the number of keys.
func (m *Map) Len() int {
	if m == nil {
		return 0
	}
	return len(m.keys)
}

// Keys returns the keys in insertion order (a copy).
func (m *Map) Keys() []string {
	if m == nil {
		return nil
	}
	return append([]string(nil), m.keys...)
}

// Get returns the value at k and whether the key is present (a present key may hold nil).
func (m *Map) Get(k string) (any, bool) {
	if m == nil {
		return nil, false
	}
	if i := m.find(k); i >= 0 {
		return m.vals[i], true
	}
	return nil, false
}

// Has reports whether k is present.
func (m *Map) Has(k string) bool {
	_, ok := m.Get(k)
	return ok
}

// String returns the value at k rendered with Python's str() ("" when absent).
func (m *Map) String(k string) string {
	v, ok := m.Get(k)
	if !ok {
		return ""
	}
	return py.Text(v)
}

// Set stores v at k, keeping k's original position when it already exists.
func (m *Map) Set(k string, v any) {
	m.dropRendering()
	if i := m.find(k); i >= 0 {
		m.vals[i] = v
		return
	}
	m.keys = append(m.keys, k)
	m.vals = append(m.vals, v)
	switch {
	case m.index != nil:
		m.index[k] = len(m.keys) - 1
	case len(m.keys) > indexFrom:
		m.reindex()
	}
}

// Delete removes k if present.
func (m *Map) Delete(k string) {
	if m == nil {
		return
	}
	i := m.find(k)
	if i < 0 {
		return
	}
	m.dropRendering()
	// New arrays: a shallow copy (Filter) may share the old ones.
	m.keys = append(m.keys[:i:i], m.keys[i+1:]...)
	m.vals = append(m.vals[:i:i], m.vals[i+1:]...)
	if m.index != nil {
		m.reindex()
	}
}

// Range calls f for each entry in order until f returns false.
func (m *Map) Range(f func(k string, v any) bool) {
	if m == nil {
		return
	}
	for i, k := range m.keys {
		if !f(k, m.vals[i]) {
			return
		}
	}
}

// Clone returns a deep copy (nested maps, lists and histories are copied too).
func (m *Map) Clone() *Map {
	if m == nil {
		return nil
	}
	c := &Map{keys: append([]string(nil), m.keys...), vals: make([]any, len(m.vals))}
	for i, v := range m.vals {
		c.vals[i] = Clone(v)
	}
	if m.index != nil {
		c.reindex()
	}
	return c
}

// Filter returns a shallow copy holding only the keys for which keep returns true.
func (m *Map) Filter(keep func(k string) bool) *Map {
	c := NewMap()
	m.Range(func(k string, v any) bool {
		if keep(k) {
			c.Set(k, v)
		}
		return true
	})
	return c
}

// Equal reports deep equality, including key order and value kinds (py.Same); a nil
// map equals an empty one.
func (m *Map) Equal(o *Map) bool {
	return m.Len() == 0 && o.Len() == 0 || py.Same(m, o)
}

// Entry is the i-th key and value in insertion order (py.Indexed).
func (m *Map) Entry(i int) (string, any) { return m.keys[i], m.vals[i] }

// MarshalJSON writes standard JSON in insertion order.
func (m *Map) MarshalJSON() ([]byte, error) {
	return []byte(py.CompactJSON(m)), nil
}

// UnmarshalJSON reads a JSON object keeping key order and number kinds.
func (m *Map) UnmarshalJSON(data []byte) error {
	v, err := DecodeJSON(data)
	if err != nil {
		return err
	}
	mm, ok := v.(*Map)
	if !ok {
		return fmt.Errorf("expected a JSON object, got %s", KindName(v))
	}
	m.keys, m.vals, m.index = mm.keys, mm.vals, mm.index
	m.dropRendering()
	return nil
}

// History is DSPy's dspy.History: a list of field -> value messages.
type History struct {
	Messages []*Map
}

// PyModel makes a History the pydantic model it is to package py: class History, one
// field "messages".
func (h History) PyModel() (string, py.Dict) {
	msgs := make([]any, len(h.Messages))
	for i, m := range h.Messages {
		msgs[i] = m
	}
	return "History", NewMap("messages", msgs)
}

// Clone deep-copies the history.
func (h History) Clone() History {
	out := History{Messages: make([]*Map, len(h.Messages))}
	for i, m := range h.Messages {
		out.Messages[i] = m.Clone()
	}
	return out
}

// Share is h for a reader that does not change its messages: the messages are shared,
// and appending to the copy does not write into h's array.
func (h History) Share() History {
	return History{Messages: h.Messages[:len(h.Messages):len(h.Messages)]}
}

// MarshalJSON writes {"messages": [...]}.
func (h History) MarshalJSON() ([]byte, error) {
	msgs := h.Messages
	if msgs == nil {
		msgs = []*Map{}
	}
	return json.Marshal(struct {
		Messages []*Map `json:"messages"`
	}{msgs})
}

// UnmarshalJSON reads {"messages": [...]}.
func (h *History) UnmarshalJSON(data []byte) error {
	v, err := DecodeJSON(data)
	if err != nil {
		return err
	}
	hh, err := HistoryFromValue(v)
	if err != nil {
		return err
	}
	*h = hh
	return nil
}

// HistoryFromValue converts decoded JSON ({"messages": [...]}, a bare list of objects, or
// null) into a History. null means an empty history (ARCHITECTURE.md: history=None is empty).
func HistoryFromValue(v any) (History, error) {
	switch t := v.(type) {
	case nil:
		return History{}, nil
	case History:
		return t, nil
	case *History:
		return *t, nil
	case *Map:
		raw, ok := t.Get("messages")
		if !ok {
			return History{}, fmt.Errorf("history object has no \"messages\" key")
		}
		return HistoryFromValue(raw)
	case []any:
		h := History{Messages: make([]*Map, 0, len(t))}
		for i, e := range t {
			m, ok := e.(*Map)
			if !ok {
				return History{}, fmt.Errorf("history message %d is %s, want an object", i, KindName(e))
			}
			h.Messages = append(h.Messages, m)
		}
		return h, nil
	}
	return History{}, fmt.Errorf("history is %s, want {\"messages\": [...]}", KindName(v))
}

// Normalize converts Go-native values into the canonical value set (int -> int64,
// map[string]any -> *Map with sorted keys, []string -> []any, ...).
func Normalize(v any) any {
	switch t := v.(type) {
	case int:
		return int64(t)
	case int32:
		return int64(t)
	case int16:
		return int64(t)
	case int8:
		return int64(t)
	case uint8:
		return int64(t)
	case uint16:
		return int64(t)
	case uint32:
		return int64(t)
	case float32:
		return float64(t)
	case json.Number:
		return numberValue(string(t))
	case []string:
		out := make([]any, len(t))
		for i, s := range t {
			out[i] = s
		}
		return out
	case []int:
		out := make([]any, len(t))
		for i, s := range t {
			out[i] = int64(s)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = Normalize(e)
		}
		return out
	case []*Map:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = e
		}
		return out
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sortStrings(keys)
		m := NewMap()
		for _, k := range keys {
			m.Set(k, Normalize(t[k]))
		}
		return m
	case *History:
		if t == nil {
			return nil
		}
		return *t
	}
	return v
}

// Clone deep-copies a value.
func Clone(v any) any {
	switch t := v.(type) {
	case *Map:
		return t.Clone()
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = Clone(e)
		}
		return out
	case History:
		return t.Clone()
	}
	return v
}

// KindName names a value's kind the way an error message should ("a string", "an int").
func KindName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a bool"
	case string:
		return "a string"
	case int64, json.Number:
		return "an int"
	case float64:
		return "a float"
	case []any:
		return "a list"
	case *Map:
		return "an object"
	case History:
		return "a History"
	}
	return fmt.Sprintf("a %T", v)
}

// DecodeJSON decodes one JSON value keeping object key order and number kinds. Input
// nested deeper than limits.Depth is refused (a *limits.DepthError) before decoding.
func DecodeJSON(data []byte) (any, error) {
	if err := limits.CheckJSON(data); err != nil {
		return nil, err
	}
	if m, ok := decodeFlat(data); ok {
		return m, nil
	}
	return decodeTokens(data)
}

// decodeTokens is DecodeJSON's general path: encoding/json's tokens, keys kept in order.
func decodeTokens(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("unexpected data after the JSON value at offset %d", dec.InputOffset())
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	return decodeFrom(dec, tok)
}

func decodeFrom(dec *json.Decoder, tok json.Token) (any, error) {
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := NewMap()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				m.Set(k, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return m, nil
		case '[':
			out := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				out = append(out, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return out, nil
		}
		return nil, fmt.Errorf("unexpected %q at offset %d", t, dec.InputOffset())
	case json.Number:
		return numberValue(string(t)), nil
	}
	return tok, nil
}

// numberValue keeps JSON's lexical kind: a number with '.', 'e' or 'E' is a float.
func numberValue(s string) any {
	if strings.ContainsAny(s, ".eE") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return json.Number(s)
		}
		return f
	}
	i, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return json.Number(s) // an int beyond int64 stays exact as text
	}
	return i
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
