package sig

import (
	"math"
	"runtime"
	"strconv"
	"testing"

	"github.com/sessionbench/sessionbench/core/py"
)

func TestNewScalarMap(t *testing.T) {
	cases := []struct {
		name string
		keys []string
		vals []Scalar
		want *Map
	}{
		{"none", nil, nil, NewMap()},
		{"str", []string{"a"}, []Scalar{StrScalar("hello")}, NewMap("a", "hello")},
		{"empty str", []string{"a"}, []Scalar{StrScalar("")}, NewMap("a", "")},
		{"str and float", []string{"intent", "confidence"}, []Scalar{StrScalar("technical"), FloatScalar(0.9)},
			NewMap("intent", "technical", "confidence", 0.9)},
		{"int and bool", []string{"n", "ok"}, []Scalar{IntScalar(-7), BoolScalar(true)}, NewMap("n", int64(-7), "ok", true)},
		{"false and a large int", []string{"ok", "n"}, []Scalar{BoolScalar(false), IntScalar(math.MinInt64)},
			NewMap("ok", false, "n", int64(math.MinInt64))},
		{"-0.0 and NaN", []string{"z", "nan"}, []Scalar{FloatScalar(math.Copysign(0, -1)), FloatScalar(math.NaN())},
			NewMap("z", math.Copysign(0, -1), "nan", math.NaN())},
		{"small numbers", []string{"f", "n"}, []Scalar{FloatScalar(0), IntScalar(3)}, NewMap("f", 0.0, "n", int64(3))},
		{"two strs", []string{"a", "b"}, []Scalar{StrScalar("x"), StrScalar("yz")}, NewMap("a", "x", "b", "yz")},
		{"one float", []string{"f"}, []Scalar{FloatScalar(2.5)}, NewMap("f", 2.5)},
		{"one bool", []string{"ok"}, []Scalar{BoolScalar(true)}, NewMap("ok", true)},
		{"two bools", []string{"a", "b"}, []Scalar{BoolScalar(false), BoolScalar(true)}, NewMap("a", false, "b", true)},
		{"three keys", []string{"a", "b", "c"}, []Scalar{StrScalar("x"), FloatScalar(1.5), IntScalar(2)},
			NewMap("a", "x", "b", 1.5, "c", int64(2))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := NewScalarMap(c.keys, c.vals)
			if py.Repr(m) != py.Repr(c.want) {
				t.Fatalf("got %s, want %s", py.Repr(m), py.Repr(c.want))
			}
			for i, k := range c.keys {
				got, _ := m.Get(k)
				want := c.vals[i].Value()
				if KindName(got) != KindName(want) {
					t.Errorf("%s is %s, want %s", k, KindName(got), KindName(want))
				}
				if f, ok := want.(float64); ok && math.Float64bits(got.(float64)) != math.Float64bits(f) {
					t.Errorf("%s = %v, want the bits of %v", k, got, f)
				} else if !ok && got != want {
					t.Errorf("%s = %#v, want %#v", k, got, want)
				}
			}
			// A map grows and shrinks like any other: its arrays are full.
			m.Set("added", "z")
			if len(c.keys) > 0 {
				m.Delete(c.keys[0])
			}
			if m.Len() != max(len(c.keys), 1) || !m.Has("added") {
				t.Errorf("after a set and a delete: %s", py.Repr(m))
			}
		})
	}
}

// A map of one or two scalars is one allocation.
func TestNewScalarMapAllocates(t *testing.T) {
	keys, vals := []string{"intent", "confidence"}, []Scalar{StrScalar("technical"), FloatScalar(0.9)}
	if n := testing.AllocsPerRun(100, func() { NewScalarMap(keys, vals) }); n != 1 {
		t.Errorf("%v allocations, want 1", n)
	}
}

// The boxed values live in the map's block: they stay intact when only they are kept,
// through collections that reuse the memory of everything else, in every block shape.
func TestScalarMapValuesOutliveTheMap(t *testing.T) {
	shapes := []func(i int) []Scalar{
		func(i int) []Scalar {
			return []Scalar{StrScalar(strconv.Itoa(i) + " text"), FloatScalar(float64(i) + 0.5)}
		},
		func(i int) []Scalar {
			return []Scalar{StrScalar(strconv.Itoa(i) + " a"), StrScalar(strconv.Itoa(i) + " b")}
		},
		func(i int) []Scalar { return []Scalar{IntScalar(int64(i) << 20), FloatScalar(float64(i) + 0.25)} },
		func(i int) []Scalar { return []Scalar{StrScalar(strconv.Itoa(i) + " alone")} },
	}
	for si, shape := range shapes {
		const n = 2000
		kept := make([]any, 0, 2*n)
		for i := range n {
			vals := shape(i)
			m := NewScalarMap([]string{"a", "b"}[:len(vals)], vals)
			m.Range(func(_ string, v any) bool {
				kept = append(kept, v)
				return true
			})
		}
		for range 3 {
			runtime.GC()
			garbage := make([]*Map, 0, 1000)
			for i := range 1000 {
				garbage = append(garbage, NewScalarMap([]string{"x", "y"}, []Scalar{StrScalar(strconv.Itoa(i) + " junk"), IntScalar(int64(i))}))
			}
			runtime.KeepAlive(garbage)
		}
		for i, k := 0, 0; i < n; i++ {
			for _, want := range shape(i) {
				if got := kept[k]; got != want.Value() {
					t.Fatalf("shape %d: value %d became %#v, want %#v", si, i, got, want.Value())
				}
				k++
			}
		}
	}
}
