package proxy

import (
	"encoding/json"
	"testing"

	"github.com/sessionbench/sessionbench/core/limits/limitstest"
	"github.com/sessionbench/sessionbench/core/recognize"
)

// FuzzRequestRecognition: what the proxy reads from a request body (parseChatRequest,
// then the recognition of the messages) takes any bytes without panicking, nesting past
// limits.Depth and large contents included, with a short error.
func FuzzRequestRecognition(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"system","content":"Your input fields are:\n1. ` + "`q`" + ` (str):\nYour output fields are:\n1. ` + "`a`" + ` (str):"},{"role":"user","content":[{"type":"text","text":"[[ ## q ## ]]\nhi"}]}],"stop":"x","stream":true}`))
	for _, v := range limitstest.JSON() {
		content, _ := json.Marshal(v)
		f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":` + string(content) + `}]}`))
		f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":` + v + `,"tool_calls":` + v + `}],"stop":` + v + `}`))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, msgs, _, err := parseChatRequest(body)
		limitstest.CheckError(t, err)
		if err != nil {
			return
		}
		r := recognize.Parse(msgs)
		if len(r.Reason) > limitstest.MaxError || len(r.Mismatch) > limitstest.MaxError {
			t.Errorf("reason of %d bytes, mismatch of %d", len(r.Reason), len(r.Mismatch))
		}
	})
}
