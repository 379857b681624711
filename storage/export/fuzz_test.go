package export

import (
	"testing"

	"github.com/sessionbench/sessionbench/core/limits/limitstest"
	"github.com/sessionbench/sessionbench/core/savefile"
)

// saveSeed is a small dspy-session version 2 file whose first turn's input holds v.
func saveSeed(v string) string {
	return `{"version":2,"history_field":"history","turns":[{"index":0,"inputs":{"q":` + v + `},"outputs":{"a":"b"},` +
		`"history_snapshot":{"messages":[]},"score":null}],"node_states":{}}`
}

// FuzzImport: what import reads (savefile.Decode, then BuildImport) refuses or takes
// any bytes without panicking, deep and large ones included, with a short error.
func FuzzImport(f *testing.F) {
	f.Add([]byte(saveSeed(`"hello"`)))
	f.Add([]byte(`{"version":1,"turns":[{"inputs":{},"outputs":{}}]}`))
	for _, v := range limitstest.JSON() {
		f.Add([]byte(saveSeed(v)))
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := savefile.Decode(data)
		limitstest.CheckError(t, err)
		if err != nil {
			return
		}
		_, err = BuildImport(file)
		limitstest.CheckError(t, err)
	})
}
