package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/trace"
)

type discardRecorder struct{}

func (discardRecorder) Begin(string, string, time.Time) func(context.Context, *trace.Call) error {
	return func(context.Context, *trace.Call) error { return nil }
}

// BenchmarkDirect posts a DSPy request to a local upstream; BenchmarkThroughProxy posts it
// through the proxy, which forwards, recognises and builds the record (storage left out):
// the ratio is the proxy's own cost per call.
func BenchmarkDirect(b *testing.B) { benchPost(b, false) }

func BenchmarkThroughProxy(b *testing.B) { benchPost(b, true) }

func benchPost(b *testing.B, via bool) {
	rq := requests[1]
	msgs, _ := rq.ad.Format(rq.req)
	mj, _ := json.Marshal(msgs)
	body := []byte(`{"model":"m","messages":` + string(mj) + `}`)
	completion := completionFor(rq.ad, rq.req.Signature, rq.outputs)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":` + jsonText(completion) + `}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`))
	}))
	defer up.Close()
	url := up.URL + "/v1/chat/completions"
	if via {
		srv, err := New(Options{Upstream: Upstream{BaseURL: up.URL + "/v1"}, Recorder: discardRecorder{}})
		if err != nil {
			b.Fatal(err)
		}
		px := httptest.NewServer(srv)
		defer px.Close()
		url = px.URL + "/v1/chat/completions"
	}
	b.ReportAllocs()
	for b.Loop() {
		resp, err := http.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
