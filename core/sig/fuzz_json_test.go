package sig

import (
	"testing"

	"github.com/sessionbench/sessionbench/core/limits/limitstest"
)

// FuzzDecodeJSON: the ordered JSON decoder behind every JSON input refuses or reads any
// bytes without panicking (nesting past limits.Depth is refused before decoding), and
// what it reads encodes back to JSON it reads again.
func FuzzDecodeJSON(f *testing.F) {
	f.Add([]byte(`{"b":1,"a":[2.0,{"c":null}],"d":"é"}`))
	for _, v := range limitstest.JSON() {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := DecodeJSON(data)
		limitstest.CheckError(t, err)
		if err != nil {
			return
		}
		m := NewMap("v", v)
		out, _ := m.MarshalJSON()
		if _, err := DecodeJSON(out); err != nil {
			t.Fatalf("%s does not read back: %v", out, err)
		}
	})
}
