package sig

import (
	"encoding/json"
	"sync/atomic"
)

// Rendering is how an adapter renders a map as a history message (its user and
// assistant texts), kept with the map. A history entry is rendered again in every later
// request of its conversation; rendering it anew each time made a request's work and
// garbage grow with the conversation, not only its bytes. Kept with the entry, the text
// lives as long as the entry and no longer.
//
// Key names everything else the texts depend on (the adapter and the fields rendered):
// a reader uses a rendering only under the key it was made with. The map's own values
// are covered by the map: Set, Delete and UnmarshalJSON drop the rendering, and a reader
// keeps one only for a map whose values cannot change in place (SetRendering's doc).
type Rendering struct {
	Key             string
	User, Assistant string
	// Next is a rendering under another key, nil if none: an entry can be shown in
	// two ways in turn (the ChatAdapter and its JSONAdapter fallback, two signatures).
	Next *Rendering
}

// Rendering is the rendering last kept with m, nil if none (or m is nil).
func (m *Map) Rendering() *Rendering {
	if m == nil {
		return nil
	}
	return m.rendering.Load()
}

// SetRendering keeps r with m (a nil m keeps nothing). Keep one only when each of m's
// values is immutable (ScalarValues): a list or map value changed in place would
// leave it stale.
func (m *Map) SetRendering(r *Rendering) {
	if m != nil {
		m.rendering.Store(r)
	}
}

// dropRendering forgets m's rendering: m's values are changing.
func (m *Map) dropRendering() {
	if m.rendering.Load() != nil && m.rendering.Swap(nil) != nil {
		renderingsDropped.Add(1)
	}
}

// renderingsDropped counts the renderings dropped because their map changed.
var renderingsDropped atomic.Uint64

// RenderingsDropped counts the renderings dropped so far, in every map, because the
// map's values changed (Set, Delete, UnmarshalJSON). What is built from renderings
// (adapter.RequestCache) holds while the count stays the same: every map whose
// rendering was used still has its values. History entries are rarely changed, so the
// count rarely moves.
func RenderingsDropped() uint64 { return renderingsDropped.Load() }

// ScalarValues reports whether each of m's values is None, a bool, a number or a
// string: values nothing can change in place.
func (m *Map) ScalarValues() bool {
	if m == nil {
		return true
	}
	for _, v := range m.vals {
		switch v.(type) {
		case nil, string, bool, int, int64, float64, json.Number:
		default:
			return false
		}
	}
	return true
}
