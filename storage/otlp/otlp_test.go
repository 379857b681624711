package otlp

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// receiver is an OTLP/HTTP collector: it decodes each export request with the official
// protobuf types.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*coltracepb.ExportTraceServiceRequest
	paths    []string
	headers  []http.Header
	status   int
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{status: http.StatusOK}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var m coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &m); err != nil {
			t.Errorf("collector: %v", err)
		}
		r.mu.Lock()
		r.requests = append(r.requests, &m)
		r.paths = append(r.paths, req.URL.Path)
		r.headers = append(r.headers, req.Header.Clone())
		status := r.status
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(status)
		if status == http.StatusOK {
			b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
			w.Write(b)
		}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) spans() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, req := range r.requests {
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				out = append(out, ss.Spans...)
			}
		}
	}
	return out
}

func attrs(kvs []*commonpb.KeyValue) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = v.IntValue
		case *commonpb.AnyValue_DoubleValue:
			m[kv.Key] = v.DoubleValue
		case *commonpb.AnyValue_ArrayValue:
			var l []string
			for _, e := range v.ArrayValue.Values {
				l = append(l, e.GetStringValue())
			}
			m[kv.Key] = l
		}
	}
	return m
}

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func sampleTurn() *trace.Turn {
	temp, max := 0.0, 256
	plan := &trace.Call{ID: "c1", Path: "question -> plan", PredictorType: "Predict", Adapter: "chat", Model: "gpt-4o-mini-2024-07-18",
		Params:   lm.Params{Model: "gpt-4o-mini", Temperature: &temp, MaxTokens: &max, Stop: []string{"[[ ## completed ## ]]"}},
		Messages: lm.MessagesOf([]lm.Message{{Role: "system", Content: "Your input fields are: ..."}, {Role: "user", Content: "[[ ## question ## ]]\nhi"}}),
		Inputs:   sig.NewMap("question", "hi"), Outputs: sig.NewMap("plan", "p"), Completion: "[[ ## plan ## ]]\np\n\n[[ ## completed ## ]]",
		Usage:   lm.Usage{PromptTokens: 100, CompletionTokens: 10, CachedTokens: 64, TotalTokens: 110},
		Started: t0.Add(10 * time.Millisecond), Latency: 300 * time.Millisecond, Recovered: trace.RecoveredExact}
	tool := &trace.Call{ID: "c3", Path: "research.query", Messages: lm.MessagesOf([]lm.Message{{Role: "user", Content: "q"}}), Model: "m",
		Started: t0.Add(400 * time.Millisecond), Latency: 100 * time.Millisecond, Error: "upstream answered 429 Too Many Requests",
		Tries: []lm.Try{{N: 1, Status: 429}}}
	module := &trace.Call{ID: "c2", Path: "research", Started: t0.Add(350 * time.Millisecond), Latency: 300 * time.Millisecond,
		Children: []*trace.Call{tool}}
	return &trace.Turn{Index: 2, Inputs: sig.NewMap("question", "hi"), Outputs: sig.NewMap("answer", "a"),
		Calls: []*trace.Call{plan, module}, Started: t0, Ended: t0.Add(time.Second)}
}

func TestExportTurn(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t)
	e, err := New(ctx, Options{Endpoint: rcv.URL, Headers: map[string]string{"Authorization": "Bearer otel-token"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(ctx)
	turn := Turn{Conversation: "c-1", Title: "support", Agent: "proxy", Branch: "main", Key: "t7", Turn: sampleTurn()}
	if err := e.Export(ctx, turn); err != nil {
		t.Fatal(err)
	}
	if rcv.paths[0] != "/v1/traces" || rcv.headers[0].Get("Authorization") != "Bearer otel-token" || rcv.headers[0].Get("Content-Type") != "application/x-protobuf" {
		t.Errorf("request %s %v", rcv.paths[0], rcv.headers[0])
	}
	res := attrs(rcv.requests[0].ResourceSpans[0].Resource.Attributes)
	if res["service.name"] != "sessionbench" {
		t.Errorf("resource %v", res)
	}
	spans := rcv.spans()
	byName := map[string]*tracepb.Span{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	root, chat, module, tool := byName["invoke_agent proxy"], byName["chat gpt-4o-mini"], byName["invoke_agent research"], byName["chat m"]
	if len(spans) != 4 || root == nil || chat == nil || module == nil || tool == nil {
		names := []string{}
		for _, s := range spans {
			names = append(names, s.Name)
		}
		t.Fatalf("spans %v", names)
	}
	// One trace; parents: the turn, then the calls, the module's inner call under it.
	for _, s := range spans {
		if !bytes.Equal(s.TraceId, root.TraceId) {
			t.Errorf("%s is in another trace", s.Name)
		}
	}
	if len(root.ParentSpanId) != 0 || !bytes.Equal(chat.ParentSpanId, root.SpanId) || !bytes.Equal(module.ParentSpanId, root.SpanId) ||
		!bytes.Equal(tool.ParentSpanId, module.SpanId) {
		t.Errorf("parent links wrong")
	}
	if root.StartTimeUnixNano != uint64(t0.UnixNano()) || root.EndTimeUnixNano != uint64(t0.Add(time.Second).UnixNano()) ||
		chat.StartTimeUnixNano != uint64(t0.Add(10*time.Millisecond).UnixNano()) || chat.EndTimeUnixNano != uint64(t0.Add(310*time.Millisecond).UnixNano()) {
		t.Errorf("times: root %d-%d chat %d-%d", root.StartTimeUnixNano, root.EndTimeUnixNano, chat.StartTimeUnixNano, chat.EndTimeUnixNano)
	}
	ra := attrs(root.Attributes)
	if ra["gen_ai.operation.name"] != "invoke_agent" || ra["gen_ai.conversation.id"] != "c-1" || ra["gen_ai.usage.input_tokens"] != int64(100) ||
		ra["sessionbench.turn.index"] != int64(2) || ra["sessionbench.turn.inputs"] != `{"question":"hi"}` {
		t.Errorf("turn attributes %v", ra)
	}
	ca := attrs(chat.Attributes)
	want := map[string]any{"gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.provider.name": "openai",
		"gen_ai.request.model": "gpt-4o-mini", "gen_ai.response.model": "gpt-4o-mini-2024-07-18", "gen_ai.usage.input_tokens": int64(100),
		"gen_ai.usage.output_tokens": int64(10), "gen_ai.usage.cache_read.input_tokens": int64(64), "gen_ai.request.temperature": 0.0,
		"gen_ai.request.max_tokens": int64(256), "sessionbench.call.path": "question -> plan", "sessionbench.call.recovered": "exact"}
	for k, v := range want {
		if ca[k] != v {
			t.Errorf("chat span %s = %v, want %v", k, ca[k], v)
		}
	}
	if chat.Kind != tracepb.Span_SPAN_KIND_CLIENT || chat.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("chat span kind %v status %v", chat.Kind, chat.Status)
	}
	var evNames []string
	for _, ev := range chat.Events {
		evNames = append(evNames, ev.Name)
	}
	if len(chat.Events) != 4 || evNames[0] != "gen_ai.system.message" || evNames[1] != "gen_ai.user.message" || evNames[2] != "gen_ai.choice" ||
		evNames[3] != "gen_ai.client.inference.operation.details" {
		t.Fatalf("events %v", evNames)
	}
	if a := attrs(chat.Events[1].Attributes); a["content"] != "[[ ## question ## ]]\nhi" || a["gen_ai.system"] != "openai" {
		t.Errorf("user message event %v", a)
	}
	if a := attrs(chat.Events[2].Attributes); a["content"] != sampleTurn().Calls[0].Completion {
		t.Errorf("choice event %v", a)
	}
	var in []message
	if err := json.Unmarshal([]byte(attrs(chat.Events[3].Attributes)["gen_ai.input.messages"].(string)), &in); err != nil ||
		len(in) != 2 || in[1].Parts[0].Content != "[[ ## question ## ]]\nhi" {
		t.Errorf("gen_ai.input.messages %v %v", in, err)
	}
	if tool.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || attrs(tool.Attributes)["error.type"] != "429" {
		t.Errorf("failed call: status %v attributes %v", tool.Status, attrs(tool.Attributes))
	}

	// The same turn exported again gets the same IDs.
	if err := e.Export(ctx, turn); err != nil {
		t.Fatal(err)
	}
	again := rcv.spans()[4:]
	for i, s := range again {
		if !bytes.Equal(s.SpanId, spans[i].SpanId) || !bytes.Equal(s.TraceId, spans[i].TraceId) {
			t.Errorf("span %s: IDs %s differ on re-export", s.Name, hex.EncodeToString(s.SpanId))
		}
	}
}

func TestExportErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := New(ctx, Options{Endpoint: "localhost:4318"}); err == nil {
		t.Error("an endpoint without a scheme was accepted")
	}
	rcv := newReceiver(t)
	rcv.status = http.StatusBadRequest
	e, err := New(ctx, Options{Endpoint: rcv.URL + "/custom/path"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(ctx)
	if err := e.Export(ctx, Turn{Conversation: "c", Turn: sampleTurn()}); err == nil {
		t.Error("a collector's refusal was not reported")
	}
	if rcv.paths[0] != "/custom/path" {
		t.Errorf("path %s", rcv.paths[0])
	}
}
