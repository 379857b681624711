package core

import "github.com/sessionbench/sessionbench/core/sig"

// copyMap is a deep copy of the entries of m that keep accepts (nil keeps every one),
// then key k set to v as given, not copied (k "" sets nothing): in k's place when m has
// it, else last, as Clone, Filter and Set would make it; a nil m is empty. A turn copies its inputs and
// outputs several times over; built in one step, a map of up to four keys is one
// allocation (sig.MakeMap) instead of three to eight.
func copyMap(m *sig.Map, keep func(k string) bool, k string, v any) *sig.Map {
	var kb [8]string
	var vb [8]any
	keys, vals := kb[:0], vb[:0]
	set := k == ""
	for i := range m.Len() {
		key, val := m.Entry(i)
		switch {
		case keep != nil && !keep(key):
			continue
		case key == k:
			val, set = v, true
		default:
			val = sig.Clone(val)
		}
		keys, vals = append(keys, key), append(vals, val)
	}
	if !set {
		keys, vals = append(keys, k), append(vals, v)
	}
	out, ov := sig.MakeMap(keys)
	copy(ov, vals)
	return out
}

// cloneMap is m.Clone() (nil stays nil) made as copyMap makes it.
func cloneMap(m *sig.Map) *sig.Map {
	if m == nil {
		return nil
	}
	return copyMap(m, nil, "", nil)
}
