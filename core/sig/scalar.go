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
// a map of one or two keys is a single allocation holding the map, its arrays and its
// values' boxes. A parse's result is most of its cost, and most predictors have one or
// two outputs of these types.
func NewScalarMap(keys []string, vals []Scalar) *Map {
	n := len(keys)
	if n > 2 {
		m, v := MakeMap(keys)
		for i := range v {
			v[i] = vals[i].Value()
		}
		return m
	}
	b := &scalarBlock{}
	b.m.keys, b.m.vals = b.k[:n:n], b.v[:n:n]
	for i, v := range vals[:n] {
		b.k[i] = keys[i]
		b.v[i] = boxIn(v, &b.box[i])
	}
	return &b.m
}

// scalarBlock is a map of up to two scalars in one allocation.
type scalarBlock struct {
	m   Map
	k   [2]string
	v   [2]any
	box [2]string // the values' boxes (see boxIn)
}

// boxIn is v.Value() with the boxed value stored in *box instead of a new allocation:
// the interface's data word points into it. A str is stored as it is; an int or a float
// in the string's second word, its length, which the collector never reads as a
// pointer (the first word is left nil).
//
// This is the package's one use of unsafe. It is GC-safe: box points into the block the
// map is allocated in, which the interface's data pointer then keeps alive (the
// collector follows interior pointers and scans the block as its type says). box must
// be heap memory that is not written afterwards (a boxed value is immutable).
func boxIn(v Scalar, box *string) any {
	var e any
	p := (*[2]uintptr)(unsafe.Pointer(box))
	switch v.kind {
	case scalarBool:
		return v.bits == 1 // bools are boxed without allocating
	case scalarInt:
		e = int64(0) // a constant's interface: no allocation
		p[1] = uintptr(v.bits)
	case scalarFloat:
		e = float64(0)
		p[1] = uintptr(v.bits)
	default:
		*box = v.s
		e = ""
		// An interface is two words: its dynamic type and a pointer to its value.
		(*[2]unsafe.Pointer)(unsafe.Pointer(&e))[1] = unsafe.Pointer(box)
		return e
	}
	(*[2]unsafe.Pointer)(unsafe.Pointer(&e))[1] = unsafe.Pointer(&p[1])
	return e
}
