package adapter

import (
	"testing"

	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

// Issue 16: json_repair's rules for unquoted keys, several top-level values and a missing
// comma between members, as DSPy 3.3.1's JSONAdapter meets them.
func TestRepairLoadsRules(t *testing.T) {
	cases := []struct{ rule, in, want string }{
		// unquoted keys: read up to ':' or whitespace; a word followed by neither ':' nor
		// ',' is dropped and scanning restarts at the next quote or alphanumeric
		{"key", `{note} {"k": 1}`, `{"k":1}`},
		{"key", `{my key: 1}`, `{"key":1}`},
		{"key", `Use {placeholders} wisely. {"summary": "ok"}`, `{"summary":"ok"}`},
		{"key", `{a.b c: 1}`, `{"c":1}`},
		{"key", `{name: "x", count: 3}`, `{"name":"x","count":3}`},
		{"key", `{name : "x"}`, `{"name":"x"}`},
		// several top-level values
		{"values", `{} {"a": 1}`, `{"a":1}`},
		{"values", `[] {"a": 1}`, `{"a":1}`},
		{"values", `{"a": 1} {"a": 2}`, `{"a":2}`},
		{"values", `{"a": 1}, {"a": 2}`, `[{"a":1},{"a":2}]`},
		{"values", `{"a": 1} ,{"a": 2}`, `[{"a":1},{"a":2}]`},
		{"values", `{"a": 1} {"b": 2}`, `[{"a":1},{"b":2}]`},
		{"values", `{"a": 1, "b": 2} {"b": 3, "a": 4}`, `{"b":3,"a":4}`},
		{"values", `{"a": 1} {}`, `{"a":1}`},
		{"values", `[1, 2] [3]`, `[[1,2],[3]]`},
		{"values", `[1] [2]`, `[2]`},
		// a missing comma between members
		{"comma", `{"a": "x" "b": "y"}`, `{"a":"x","b":"y"}`},
		{"comma", `{'a': 'x' 'b': 'y'}`, `{"a":"x","b":"y"}`},
		{"comma", `{"a": "x"  "b" : "y"}`, `{"a":"x","b":"y"}`},
		{"comma", `{"a": "say "hi" now", "b": 1}`, `{"a":"say \"hi\" now","b":1}`},
	}
	for _, c := range cases {
		if got := py.CompactJSON(RepairLoads(c.in)); got != c.want {
			t.Errorf("%s: %s gives %s, want %s", c.rule, c.in, got, c.want)
		}
	}
}

// The JSONAdapter takes the first object of comma-separated values.
func TestParseJSONSeveralValues(t *testing.T) {
	s := sig.New("S", "x", []sig.Field{field("q", "str", "")}, []sig.Field{field("answer", "str", "")})
	for _, c := range []struct{ in, want string }{
		{`{"answer": "first"}, {"answer": "second"}`, "first"},
		{`{"answer": "first"} {"answer": "second"}`, "second"},
		{`{} {"answer": "only"}`, "only"},
	} {
		out, err := ParseJSON(s, c.in)
		if err != nil || out.String("answer") != c.want {
			t.Errorf("%s: %v %v, want %s", c.in, out, err, c.want)
		}
	}
}
