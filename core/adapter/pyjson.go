package adapter

import (
	"math"
	"sort"

	"github.com/sessionbench/sessionbench/core/sig"
)

// Jsonable is DSPy's serialize_for_json (pydantic's dump_python(mode="json")) for the
// value kinds of package sig: containers are copied with every NaN or infinity inside
// them turned into None, which is what pydantic does in JSON mode. A bare float is left
// alone (pydantic keeps a top-level NaN, so str() of it is "nan").
func Jsonable(v any) any {
	switch t := v.(type) {
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = jsonableInner(e)
		}
		return out
	case *sig.Map:
		if t == nil {
			return nil
		}
		out := sig.NewMap()
		t.Range(func(k string, e any) bool {
			out.Set(k, jsonableInner(e))
			return true
		})
		return out
	case sig.History:
		msgs := make([]any, len(t.Messages))
		for i, m := range t.Messages {
			msgs[i] = jsonableInner(m)
		}
		return sig.NewMap("messages", msgs)
	}
	return v
}

func jsonableInner(v any) any {
	if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return nil
	}
	return Jsonable(v)
}

// JSONSchema is pydantic's TypeAdapter(t).json_schema() as DSPy prints it in type notes:
// keys sorted at every level with "type" first (DSPy's move_type_to_front).
func JSONSchema(t *sig.Type) *sig.Map {
	return sortSchema(pydanticSchema(t), func(a, b string) bool {
		if (a == "type") != (b == "type") {
			return a == "type"
		}
		return a < b
	}, false)
}

// PydanticJSONSchema is pydantic's own json_schema() order: keys sorted alphabetically at
// every level except the field names under "properties", which keep declaration order.
func PydanticJSONSchema(t *sig.Type) *sig.Map {
	return sortSchema(pydanticSchema(t), func(a, b string) bool { return a < b }, true)
}

func sortSchema(m *sig.Map, less func(a, b string) bool, keepProperties bool) *sig.Map {
	var walk func(v any, parent string) any
	walk = func(v any, parent string) any {
		switch t := v.(type) {
		case *sig.Map:
			keys := append([]string(nil), t.Keys()...)
			if !(keepProperties && parent == "properties") {
				sort.SliceStable(keys, func(i, j int) bool { return less(keys[i], keys[j]) })
			}
			out := sig.NewMap()
			for _, k := range keys {
				e, _ := t.Get(k)
				out.Set(k, walk(e, k))
			}
			return out
		case []any:
			out := make([]any, len(t))
			for i, e := range t {
				out[i] = walk(e, "")
			}
			return out
		}
		return v
	}
	return walk(m, "").(*sig.Map)
}

// pydanticSchema builds the schema pydantic 2 generates for the annotation (key order is
// fixed afterwards by the callers).
func pydanticSchema(t *sig.Type) *sig.Map {
	if t == nil {
		return sig.NewMap("type", "string")
	}
	typ := func(s string) *sig.Map { return sig.NewMap("type", s) }
	switch t.Kind {
	case sig.KindStr:
		return typ("string")
	case sig.KindInt:
		return typ("integer")
	case sig.KindFloat:
		return typ("number")
	case sig.KindBool:
		return typ("boolean")
	case sig.KindNone:
		return typ("null")
	case sig.KindAny:
		return sig.NewMap()
	case sig.KindHistory:
		// dspy.History: a pydantic model with messages: list[dict[str, Any]] and
		// extra="forbid".
		return sig.NewMap("type", "object", "additionalProperties", false,
			"properties", sig.NewMap("messages", sig.NewMap("type", "array",
				"items", sig.NewMap("type", "object", "additionalProperties", true), "title", "Messages")),
			"required", []any{"messages"}, "title", "History")
	case sig.KindList, sig.KindSet:
		items := sig.NewMap()
		if len(t.Args) > 0 {
			items = pydanticSchema(t.Args[0])
		}
		m := sig.NewMap("type", "array", "items", items)
		if t.Kind == sig.KindSet {
			m.Set("uniqueItems", true)
		}
		return m
	case sig.KindTuple:
		if len(t.Args) == 0 { // bare tuple: any number of anything
			return sig.NewMap("type", "array", "items", sig.NewMap())
		}
		pre := make([]any, len(t.Args))
		for i, a := range t.Args {
			pre[i] = pydanticSchema(a)
		}
		n := int64(len(t.Args))
		return sig.NewMap("type", "array", "maxItems", n, "minItems", n, "prefixItems", pre)
	case sig.KindDict:
		// dict[str, Any] and a bare dict allow any values: additionalProperties true.
		if len(t.Args) < 2 || t.Args[1].Kind == sig.KindAny {
			return sig.NewMap("type", "object", "additionalProperties", true)
		}
		return sig.NewMap("type", "object", "additionalProperties", pydanticSchema(t.Args[1]))
	case sig.KindUnion, sig.KindPipeUnion:
		anyOf := make([]any, len(t.Args))
		for i, a := range t.Args {
			anyOf[i] = pydanticSchema(a)
		}
		return sig.NewMap("anyOf", anyOf)
	case sig.KindLiteral:
		return literalSchema(t.Lits)
	}
	return sig.NewMap()
}

// literalSchema is pydantic's literal_schema: "const" for one value, "enum" otherwise,
// and a "type" when every value has the same JSON type.
func literalSchema(lits []any) *sig.Map {
	m := sig.NewMap()
	if len(lits) == 1 {
		m.Set("const", lits[0])
	} else {
		m.Set("enum", append([]any(nil), lits...))
	}
	kind := ""
	for i, l := range lits {
		k := "mixed"
		switch l.(type) {
		case string:
			k = "string"
		case bool:
			k = "boolean"
		case int64:
			k = "integer"
		case float64:
			k = "number"
		case nil:
			k = "null"
		}
		if i == 0 {
			kind = k
		} else if k != kind {
			kind = "mixed"
		}
	}
	if kind != "" && kind != "mixed" {
		m.Set("type", kind)
	}
	return m
}
