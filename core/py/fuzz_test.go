package py

import (
	"testing"

	"github.com/sessionbench/sessionbench/core/limits/limitstest"
)

// fuzzDict is the smallest SetDict: keys and values in order.
type fuzzDict struct {
	keys []string
	vals []any
}

func (d *fuzzDict) Set(k string, v any) { d.keys, d.vals = append(d.keys, k), append(d.vals, v) }
func (d *fuzzDict) Len() int            { return len(d.keys) }
func (d *fuzzDict) Get(k string) (any, bool) {
	for i, x := range d.keys {
		if x == k {
			return d.vals[i], true
		}
	}
	return nil, false
}
func (d *fuzzDict) Range(f func(string, any) bool) {
	for i, k := range d.keys {
		if !f(k, d.vals[i]) {
			return
		}
	}
}

// FuzzLiteralEval: ast.literal_eval of a model's reply gives a value or ErrNotLiteral,
// never a panic, nested past Python's parser limit or large.
func FuzzLiteralEval(f *testing.F) {
	f.Add("{'a': [1, 2.5, (True, None)], 'b': {1, 2}}")
	for _, v := range limitstest.JSON() {
		f.Add(v)
	}
	f.Add(limitstest.Deep("(", ",)", 300))
	f.Fuzz(func(t *testing.T, text string) {
		_, err := LiteralEval(text, func() SetDict { return &fuzzDict{} })
		limitstest.CheckError(t, err)
	})
}
