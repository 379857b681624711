package recognize

import (
	"encoding/json"
	"testing"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/limits/limitstest"
	"github.com/sessionbench/sessionbench/core/lm"
)

// FuzzRecognize: a recorded request (the messages of a chat request, as a recording
// proxy or an import hands them over) is recognised or reported, never a panic, deep
// and large values in its fields included; the reason stays short.
func FuzzRecognize(f *testing.F) {
	seed := func(v string) {
		msgs, err := (adapter.Chat{}).Format(roundTrips[0].request())
		if err != nil {
			f.Fatal(err)
		}
		data, _ := json.Marshal(msgs)
		f.Add(data)
		data, _ = json.Marshal([]lm.Message{{Role: "system", Content: msgs[0].Content}, {Role: "user", Content: "[[ ## question ## ]]\n" + v}})
		f.Add(data)
	}
	seed("")
	for _, v := range limitstest.JSON() {
		seed(v)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var msgs []lm.Message
		if json.Unmarshal(data, &msgs) != nil {
			return
		}
		r := Parse(msgs)
		if len(r.Reason) > limitstest.MaxError || len(r.Mismatch) > limitstest.MaxError {
			t.Errorf("reason of %d bytes, mismatch of %d", len(r.Reason), len(r.Mismatch))
		}
	})
}
