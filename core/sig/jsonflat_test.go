package sig

import (
	"reflect"
	"testing"
)

// The flat-object path reads what it takes exactly as the general path does, and leaves
// everything else to it.
func TestDecodeFlat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		flat bool // read by the flat path
	}{
		{`{}`, true},
		{` { } `, true},
		{`{"question":"why was I charged twice?"}`, true},
		{"{\"a\" : \"x\" ,\n\t\"b\":true,\"c\":false,\"d\":null}", true},
		{`{"a":"1","a":"2","b":""}`, true}, // a repeated key keeps its place, the last value
		{`{"é":"ünïcode ✓"}`, true},
		{`{"a":"line\nbreak, \"quoted\", \\ \/ \b\f\r\t"}`, true},
		{`{"a":"\u00e9\u003c\ud83d\ude00 \ud800 \udc00x \ud800\u0041"}`, true}, // pairs; lone halves
		{`{"a":"\u00g0"}`, false},
		{`{"a":"\x"}`, false},
		{`{"a":"tab` + "\t" + `"}`, false}, // a control character (refused by the general path)
		{"{\"a\":\"\xff\"}", false},        // invalid UTF-8 (replaced by the general path)
		{`{"n":0,"m":-12,"f":1.5e-3,"g":-0.0,"big":123456789012345678901234567890}`, true},
		{`{"a":01}`, false},
		{`{"a":1.}`, false},
		{`{"a":-}`, false},
		{`{"a":1e}`, false},
		{`{"a":1x}`, false},
		{`{"a":{"b":"c"}}`, false},
		{`{"a":["b"]}`, false},
		{`{"a":"b"} x`, false},
		{`{"a":"b",}`, false},
		{`{"a":tru}`, false},
		{`{"a":truex}`, false},
		{`{"a" "b"}`, false},
		{`{"a":"b"`, false},
		{`["a"]`, false},
		{`"a"`, false},
		{``, false},
	} {
		got, ok := decodeFlat([]byte(tc.in))
		if ok != tc.flat {
			t.Errorf("%q: flat %v, want %v", tc.in, ok, tc.flat)
		}
		want, err := decodeTokens([]byte(tc.in))
		if ok && (err != nil || !reflect.DeepEqual(any(got), want)) {
			t.Errorf("%q: flat %#v, general %#v (%v)", tc.in, got, want, err)
		}
	}
}

// FuzzDecodeFlat: whatever the flat path reads, the general path reads the same.
func FuzzDecodeFlat(f *testing.F) {
	for _, s := range []string{`{"a":"b","c":true,"d":null}`, `{}`, `{"a":"b","a":"c"}`, `{"a":"\u00e9\ud83d\ude00\n"}`, `{"a":1.5e3,"b":-0}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := decodeFlat(data)
		if !ok {
			return
		}
		want, err := decodeTokens(data)
		if err != nil || !reflect.DeepEqual(any(got), want) {
			t.Fatalf("%q: flat %#v, general %#v (%v)", data, got, want, err)
		}
	})
}

// BenchmarkDecodeJSON is what restoring a branch decodes per call: its inputs and outputs.
func BenchmarkDecodeJSON(b *testing.B) {
	in := []byte(`{"question":"question 123: why was I charged twice in month 3?","intent":"billing","reply":"About \"question 123\": clear the cookies, reset the password again and tell us the time of the failure."}`)
	flat := []byte(`{"question":"question 123: why was I charged twice in month 3?","intent":"billing","reply":"Clear the cookies, reset the password again and tell us the time of the failure."}`)
	for _, c := range []struct {
		name string
		data []byte
	}{{"flat", flat}, {"escaped", in}} {
		b.Run(c.name+"/DecodeJSON", func(b *testing.B) {
			for b.Loop() {
				if _, err := DecodeJSON(c.data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/general", func(b *testing.B) {
			for b.Loop() {
				if _, err := decodeTokens(c.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
