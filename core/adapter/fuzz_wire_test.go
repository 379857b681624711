package adapter

import (
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/limits/limitstest"
	"github.com/sessionbench/sessionbench/core/sig"
)

// wireSeed is a wire request whose input q holds v (JSON text).
func wireSeed(v string) string {
	return `{"adapter":"chat","signature":{"instructions":"x","inputs":[{"name":"q","type":"str"}],` +
		`"outputs":[{"name":"a","type":"list[str]"}]},"demos":[{"q":"a","a":["b"]}],"inputs":{"q":` + v + `},"completion":"[[ ## a ## ]]\n['x']"}`
}

// FuzzDecodeWireRequest: the wire command's decoder (wire format and parse) refuses or
// reads any bytes without panicking, deep and large ones included, with a short error;
// a request that decodes formats and parses.
func FuzzDecodeWireRequest(f *testing.F) {
	f.Add([]byte(wireSeed(`"hello"`)))
	for _, v := range limitstest.JSON() {
		f.Add([]byte(wireSeed(v)))
		f.Add([]byte(v))
	}
	f.Add([]byte(strings.Replace(wireSeed(`"x"`), `"type":"str"`, `"type":"`+limitstest.Deep("list[", "]", 300)+`"`, 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := DecodeWireRequest(data)
		limitstest.CheckError(t, err)
		if err != nil {
			return
		}
		a, err := New(req.Adapter, req.Raw)
		if err != nil {
			return
		}
		_, err = a.Format(Request{Signature: req.Signature, Demos: req.Demos, Inputs: req.Inputs})
		limitstest.CheckError(t, err)
		if req.HasCompl {
			_, err = a.Parse(req.Signature, req.Completion)
			limitstest.CheckError(t, err)
		}
	})
}

// FuzzRepairDeep: json_repair and Python literals in replies, nested past their limits
// or large, end in a value or an error, never a crash.
func FuzzRepairDeep(f *testing.F) {
	for _, v := range limitstest.JSON() {
		f.Add(v)
		f.Add("[[ ## tags ## ]]\n" + v)
	}
	f.Add(limitstest.Deep("(", ")", 300))
	s := fuzzSig()
	f.Fuzz(func(t *testing.T, text string) {
		_, err := RepairJSON(text)
		limitstest.CheckError(t, err)
		for _, a := range []Adapter{Chat{}, JSON{}} {
			_, err := a.Parse(s, text)
			limitstest.CheckError(t, err)
		}
	})
}

// pydantic-core cuts input values longer than 50 bytes to 25 + "..." + 24, never inside
// a UTF-8 sequence; a reply of many bad items lists the first errors and counts the rest.
func TestValidationErrorIsBounded(t *testing.T) {
	cases := []struct{ in, want string }{
		{"'short'", "'short'"},
		{"'" + strings.Repeat("x", 60) + "'", "'" + strings.Repeat("x", 24) + "..." + strings.Repeat("x", 23) + "'"},
		{"'" + strings.Repeat("é", 30) + "'", "'" + strings.Repeat("é", 12) + "..." + strings.Repeat("é", 11) + "'"},
	}
	for _, c := range cases {
		if got := truncateInput(c.in); got != c.want {
			t.Errorf("truncateInput(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	_, err := ParseValue(sig.MustType("list[int]"), "["+strings.Repeat("'a',", 1000)+"]")
	if err == nil || !strings.Contains(err.Error(), "1000 validation errors") || !strings.HasSuffix(err.Error(), "(980 more errors not shown)") {
		t.Errorf("got %.400v", err)
	}
}
