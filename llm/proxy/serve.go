package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
)

// ModelServer serves a model (the offline demo model) over the chat-completions
// protocol, streamed or not, so the proxy has an upstream when no provider is
// configured. It is for loopback use by the proxy only.
func ModelServer(model lm.LM) http.Handler {
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isChat(r) {
			writeJSONError(w, http.StatusNotFound, fmt.Sprintf("%s serves POST /chat/completions only, not %s %s", model.Name(), r.Method, r.URL.Path))
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, DefaultMaxRecord))
		if err != nil {
			writeJSONError(w, http.StatusBadRequest, "reading the request: "+err.Error())
			return
		}
		req, msgs, params, err := parseChatRequest(body)
		if err != nil || len(msgs) == 0 {
			writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("a chat-completions request with messages is needed (%v)", err))
			return
		}
		id := fmt.Sprintf("chatcmpl-sb%d", n.Add(1))
		created := time.Now().Unix()
		name := params.Model
		if name == "" {
			name = model.Name()
		}
		chunk := func(delta map[string]any, finish any, usage *lm.Usage) []byte {
			m := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": name,
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
			if usage != nil {
				m["choices"] = []any{}
				m["usage"] = wireUsageOf(*usage)
			}
			b, _ := json.Marshal(m)
			return b
		}
		lreq := lm.Request{Messages: lm.ListOf(msgs), Params: params}
		if req.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Cache-Control", "no-cache")
			fl, _ := w.(http.Flusher)
			first := true
			lreq.OnDelta = func(d string) {
				delta := map[string]any{"content": d}
				if first {
					delta["role"], first = "assistant", false
				}
				fmt.Fprintf(w, "data: %s\n\n", chunk(delta, nil, nil))
				if fl != nil {
					fl.Flush()
				}
			}
			resp, err := model.Call(r.Context(), lreq)
			if err != nil {
				fmt.Fprintf(w, "data: %s\n\n", mustJSON(map[string]any{"error": map[string]any{"message": err.Error(), "type": "server_error"}}))
				return
			}
			fmt.Fprintf(w, "data: %s\n\n", chunk(map[string]any{}, "stop", nil))
			fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", chunk(nil, nil, &resp.Usage))
			return
		}
		resp, err := model.Call(r.Context(), lreq)
		if err != nil {
			writeJSONError(w, http.StatusInternalServerError, err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(mustJSON(map[string]any{"id": id, "object": "chat.completion", "created": created, "model": name,
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": resp.Text},
				"finish_reason": "stop"}},
			"usage": wireUsageOf(resp.Usage)}))
	})
}

func wireUsageOf(u lm.Usage) map[string]any {
	return map[string]any{"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens, "total_tokens": u.TotalTokens}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func writeJSONError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(mustJSON(map[string]any{"error": map[string]any{"message": strings.TrimSpace(msg), "type": "invalid_request_error"}}))
}
