// Package py is Python's value semantics, as the reference libraries (DSPy,
// dspy-session, the template adapter, json_repair, pydantic) observe them, in one place:
// str(), repr(), json.dumps, float repr, str.strip/splitlines/expandtabs,
// inspect.cleandoc, textwrap.dedent, ast.literal_eval, str.format_map and ==.
//
// It is a leaf: it imports nothing of ours. Values are the engine's plain value kinds —
// nil (None), bool, string, int64 and json.Number (int), float64, []any (list) — plus
// two interfaces through which it reads the containers of package sig: Dict (an
// insertion-ordered dict) and Model (a pydantic model such as dspy.History). A nil pointer
// of either is None.
package py

import "reflect"

// Dict is an insertion-ordered dict with string keys.
type Dict interface {
	Len() int
	Get(k string) (any, bool)
	Range(f func(k string, v any) bool)
}

// Model is a pydantic model instance: its class name and its fields in order.
type Model interface {
	PyModel() (class string, fields Dict)
}

// isNil reports a nil pointer behind an interface (a nil *sig.Map is None).
func isNil(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// TypeName is type(v).__name__.
func TypeName(v any) string {
	switch t := v.(type) {
	case nil:
		return "NoneType"
	case string:
		return "str"
	case bool:
		return "bool"
	case int64, int, jsonNumber:
		return "int"
	case float64:
		return "float"
	case []any:
		return "list"
	case Model:
		if isNil(v) {
			return "NoneType"
		}
		name, _ := t.PyModel()
		return name
	case Dict:
		if isNil(v) {
			return "NoneType"
		}
		return "dict"
	}
	return reflect.TypeOf(v).String()
}

// Equal is Python's == for the value kinds: numbers compare by value (1 == 1.0 == True),
// lists element by element, dicts by their keys and values in any order.
func Equal(a, b any) bool { return equal(a, b, false) }

// Same is deep equality that keeps what Python's == forgets: the kinds (1, 1.0 and True
// differ) and the order of a dict's keys. Values that are Same render, serialise and
// validate alike (sig.Map.Equal; a stored default, a replayed history).
func Same(a, b any) bool { return equal(a, b, true) }

// Indexed is a Dict whose entries can be read by position (sig.Map), so Same compares
// two of them in order without copying their keys.
type Indexed interface {
	Dict
	Entry(i int) (key string, value any)
}

// equal is Equal, or Same when strict: the one deep comparison of values.
func equal(a, b any, strict bool) bool {
	if !strict {
		na, aNum := number(a)
		nb, bNum := number(b)
		if aNum || bNum {
			return aNum && bNum && na == nb
		}
	}
	if isNil(a) {
		a = nil
	}
	if isNil(b) {
		b = nil
	}
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i], strict) {
				return false
			}
		}
		return true
	case Model:
		y, ok := b.(Model)
		if !ok {
			return false
		}
		cx, fx := x.PyModel()
		cy, fy := y.PyModel()
		return cx == cy && equal(fx, fy, strict)
	case Dict:
		y, ok := b.(Dict)
		if !ok || x.Len() != y.Len() {
			return false
		}
		if strict {
			return sameOrder(x, y)
		}
		eq := true
		x.Range(func(k string, v any) bool {
			w, found := y.Get(k)
			eq = found && equal(v, w, false)
			return eq
		})
		return eq
	}
	return a == b
}

// sameOrder compares two dicts of one length entry by entry, in order.
func sameOrder(x, y Dict) bool {
	ix, okx := x.(Indexed)
	iy, oky := y.(Indexed)
	if okx && oky {
		for i := 0; i < x.Len(); i++ {
			kx, vx := ix.Entry(i)
			ky, vy := iy.Entry(i)
			if kx != ky || !equal(vx, vy, true) {
				return false
			}
		}
		return true
	}
	var keys []string
	var vals []any
	y.Range(func(k string, v any) bool { keys, vals = append(keys, k), append(vals, v); return true })
	i, eq := 0, true
	x.Range(func(k string, v any) bool {
		eq = keys[i] == k && equal(v, vals[i], true)
		i++
		return eq
	})
	return eq
}

// number is a value's numeric value when Python treats it as a number (bool included).
func number(v any) (float64, bool) {
	switch t := v.(type) {
	case bool:
		if t {
			return 1, true
		}
		return 0, true
	case int64:
		return float64(t), true
	case int:
		return float64(t), true
	case float64:
		return t, true
	case jsonNumber:
		f, err := t.Float64()
		return f, err == nil
	}
	return 0, false
}
