package sig

import (
	"math"
	"unsafe"
)

// Scalar is a str, int, float or bool value held unboxed, for NewScalarMap. The zero
// Scalar is the empty str.
type Scalar struct {
	s    string
	bits uint64 // the int's or the float's bits, 1 for True
	kind scalarKind
}

type scalarKind uint8

const (
	scalarStr scalarKind = iota
	scalarInt
	scalarFloat
	scalarBool
)

// StrScalar, IntScalar, FloatScalar and BoolScalar are the Scalars of a str, an int, a
// float and a bool.
func StrScalar(s string) Scalar    { return Scalar{s: s} }
func IntScalar(n int64) Scalar     { return Scalar{bits: uint64(n), kind: scalarInt} }
func FloatScalar(f float64) Scalar { return Scalar{bits: math.Float64bits(f), kind: scalarFloat} }
func BoolScalar(b bool) Scalar {
	if b {
		return Scalar{bits: 1, kind: scalarBool}
	}
	return Scalar{kind: scalarBool}
}

// Value is the scalar as a map value: string, int64, float64 or bool.
func (v Scalar) Value() any {
	switch v.kind {
	case scalarInt:
		return int64(v.bits)
	case scalarFloat:
		return math.Float64frombits(v.bits)
	case scalarBool:
		return v.bits == 1
	}
	return v.s
}

// NewScalarMap is NewMapOf for str, int, float and bool values (vals[i] is keys[i]'s):
// a map of one or two keys is a single allocation, sized to its values, holding the
// map, its arrays and its values' boxes. A parse's result is most of its cost, and most
// predictors have one or two outputs of these types.
func NewScalarMap(keys []string, vals []Scalar) *Map {
	n := len(keys)
	strs := 0
	for _, v := range vals[:n] {
		if v.kind == scalarStr {
			strs++
		}
	}
	switch {
	case n == 1:
		b := &struct {
			m Map
			k [1]string
			v [1]any
			s [1]string
			w [1]uint64
		}{}
		return fillScalarMap(&b.m, b.k[:], b.v[:], b.s[:], b.w[:], keys, vals)
	case n == 2 && strs == 2:
		b := &struct {
			m Map
			k [2]string
			v [2]any
			s [2]string
		}{}
		return fillScalarMap(&b.m, b.k[:], b.v[:], b.s[:], nil, keys, vals)
	case n == 2 && strs == 1:
		b := &struct {
			m Map
			k [2]string
			v [2]any
			s [1]string
			w [1]uint64
		}{}
		return fillScalarMap(&b.m, b.k[:], b.v[:], b.s[:], b.w[:], keys, vals)
	case n == 2:
		b := &struct {
			m Map
			k [2]string
			v [2]any
			w [2]uint64
		}{}
		return fillScalarMap(&b.m, b.k[:], b.v[:], nil, b.w[:], keys, vals)
	}
	m, v := MakeMap(keys)
	for i := range v {
		v[i] = vals[i].Value()
	}
	return m
}

// fillScalarMap makes m the map of keys and vals in the arrays of its block: k and v
// as long as keys, and a box in s for each str value and in w for each int or float.
func fillScalarMap(m *Map, k []string, v []any, s []string, w []uint64, keys []string, vals []Scalar) *Map {
	m.keys, m.vals = k[:len(k):len(k)], v[:len(v):len(v)]
	for i, x := range vals[:len(v)] {
		k[i] = keys[i]
		switch x.kind {
		case scalarBool:
			v[i] = x.bits == 1 // bools are boxed without allocating
		case scalarStr:
			v[i], s = boxIn(x, &s[0], nil), s[1:]
		default:
			v[i], w = boxIn(x, nil, &w[0]), w[1:]
		}
	}
	return m
}

// boxIn is v.Value() for a str, int or float with the boxed value stored in *s (a str)
// or *w (an int or a float) instead of a new allocation: the interface's data word
// points at it.
//
// This is the package's one use of unsafe. It is GC-safe: s and w point into the block
// the map is allocated in, which the interface's data pointer then keeps alive (the
// collector follows interior pointers and scans the block as its type says: s as
// strings, w as plain words). They must be heap memory that is not written afterwards
// (a boxed value is immutable).
func boxIn(v Scalar, s *string, w *uint64) any {
	var e any
	var data unsafe.Pointer
	switch v.kind {
	case scalarInt:
		e, data = int64(0), unsafe.Pointer(w) // a constant's interface: no allocation
		*w = v.bits
	case scalarFloat:
		e, data = float64(0), unsafe.Pointer(w)
		*w = v.bits
	default:
		e, data = "", unsafe.Pointer(s)
		*s = v.s
	}
	// An interface is two words: its dynamic type and a pointer to its value.
	(*[2]unsafe.Pointer)(unsafe.Pointer(&e))[1] = data
	return e
}
