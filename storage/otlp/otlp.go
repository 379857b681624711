// Package otlp sends recorded turns to an OpenTelemetry backend (Jaeger, Grafana Tempo,
// Langfuse, Phoenix, any OTLP/HTTP collector) with the official Go SDK: each turn is a
// trace whose root span is the turn, each call a span under it (nested calls under their
// parent), described with the GenAI semantic conventions (gen_ai.* attributes; the
// input and output messages as span events).
//
// Span and trace IDs are derived from the conversation and turn (and call) IDs, so
// exporting a turn twice sends the same IDs.
package otlp

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/sessionbench/sessionbench/core/trace"
)

// Options configure an Exporter.
type Options struct {
	// Endpoint is the collector's OTLP/HTTP URL, e.g. http://localhost:4318; a URL
	// without a path gets the standard /v1/traces.
	Endpoint string
	Headers  map[string]string // e.g. the Authorization a hosted backend wants
	// Provider is gen_ai.provider.name (and the older gen_ai.system); "" is "openai",
	// the protocol every model sessionbench talks to speaks.
	Provider string
	Timeout  time.Duration // per export request; 0: 10s
}

// Turn is one recorded turn and where it belongs.
type Turn struct {
	Conversation string // conversation ID (gen_ai.conversation.id)
	Title        string
	Agent        string
	Branch       string
	Key          string // the turn's storage key; "" derives IDs from its start time
	Turn         *trace.Turn
}

// Exporter turns recorded turns into spans and sends them. Safe for concurrent use.
type Exporter struct {
	opts Options
	exp  sdktrace.SpanExporter
	tp   *sdktrace.TracerProvider
	col  *collector
	mu   sync.Mutex // one Export builds its spans at a time
}

// New checks the endpoint and builds the exporter (nothing is sent yet).
func New(ctx context.Context, o Options) (*Exporter, error) {
	u, err := url.Parse(o.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("otlp: endpoint %q must be an http:// or https:// URL, e.g. http://localhost:4318", o.Endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	if o.Provider == "" {
		o.Provider = "openai"
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(u.String()), otlptracehttp.WithTimeout(o.Timeout)}
	if len(o.Headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(o.Headers))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("otlp: %w", err)
	}
	col := &collector{}
	res := resource.NewSchemaless(semconv.ServiceName("sessionbench"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(col), sdktrace.WithIDGenerator(idGen{}),
		sdktrace.WithResource(res), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	return &Exporter{opts: o, exp: exp, tp: tp, col: col}, nil
}

// Export sends the turns, as one request, and reports the collector's refusal or the
// network's failure.
func (e *Exporter) Export(ctx context.Context, turns ...Turn) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.col.take()
	tr := e.tp.Tracer("github.com/sessionbench/sessionbench")
	for _, t := range turns {
		if t.Turn == nil {
			return errors.New("otlp: a turn without its record")
		}
		e.turnSpans(tr, t)
	}
	spans := e.col.take()
	if len(spans) == 0 {
		return nil
	}
	if err := e.exp.ExportSpans(ctx, spans); err != nil {
		return fmt.Errorf("otlp: sending %d spans to %s: %w", len(spans), e.opts.Endpoint, err)
	}
	return nil
}

// Shutdown releases the exporter's connections.
func (e *Exporter) Shutdown(ctx context.Context) error {
	return errors.Join(e.tp.Shutdown(ctx), e.exp.Shutdown(ctx))
}

// collector is a span processor that keeps ended spans until Export sends them.
type collector struct {
	mu    sync.Mutex
	spans []sdktrace.ReadOnlySpan
}

func (c *collector) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (c *collector) OnEnd(s sdktrace.ReadOnlySpan) {
	c.mu.Lock()
	c.spans = append(c.spans, s)
	c.mu.Unlock()
}
func (c *collector) Shutdown(context.Context) error   { return nil }
func (c *collector) ForceFlush(context.Context) error { return nil }

func (c *collector) take() []sdktrace.ReadOnlySpan {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.spans
	c.spans = nil
	return s
}

// idGen hands out the IDs put in the context for the span being started (derived from
// the conversation, turn and call), random ones when there are none.
type idGen struct{}

type idsKey struct{}

type ids struct {
	trace oteltrace.TraceID
	span  oteltrace.SpanID
}

func (idGen) NewIDs(ctx context.Context) (oteltrace.TraceID, oteltrace.SpanID) {
	if v, ok := ctx.Value(idsKey{}).(ids); ok {
		return v.trace, v.span
	}
	var t oteltrace.TraceID
	var s oteltrace.SpanID
	rand.Read(t[:])
	rand.Read(s[:])
	return t, s
}

func (g idGen) NewSpanID(ctx context.Context, _ oteltrace.TraceID) oteltrace.SpanID {
	_, s := g.NewIDs(ctx)
	return s
}

// derive hashes parts into IDs; a zero ID is invalid, so the last byte is never zero.
func derive(parts ...string) ids {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	var v ids
	copy(v.trace[:], h[:16])
	copy(v.span[:], h[16:24])
	v.trace[15] |= 1
	v.span[7] |= 1
	return v
}

func (e *Exporter) turnSpans(tr oteltrace.Tracer, t Turn) {
	tu := t.Turn
	key := t.Key
	if key == "" {
		key = "started:" + strconv.FormatInt(tu.Started.UnixNano(), 10)
	}
	root := derive(t.Conversation, key)
	ctx := context.WithValue(context.Background(), idsKey{}, root)
	var usage [3]int
	trace.WalkCalls(tu.Calls, func(c *trace.Call, _ int) {
		usage[0] += c.Usage.PromptTokens
		usage[1] += c.Usage.CompletionTokens
		usage[2] += c.Usage.CachedTokens
	})
	agent := t.Agent
	if agent == "" {
		agent = "sessionbench"
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameKey.String("invoke_agent"),
		semconv.GenAIAgentNameKey.String(agent),
		semconv.GenAIConversationIDKey.String(t.Conversation),
		semconv.GenAIUsageInputTokensKey.Int(usage[0]),
		semconv.GenAIUsageOutputTokensKey.Int(usage[1]),
		attribute.String("sessionbench.conversation.title", t.Title),
		attribute.String("sessionbench.branch", t.Branch),
		attribute.Int("sessionbench.turn.index", tu.Index),
		attribute.String("sessionbench.turn.key", t.Key),
		attribute.String("sessionbench.turn.inputs", jsonText(tu.Inputs)),
		attribute.String("sessionbench.turn.outputs", jsonText(tu.Outputs)),
	}
	if usage[2] > 0 {
		attrs = append(attrs, semconv.GenAIUsageCacheReadInputTokensKey.Int(usage[2]))
	}
	end := tu.Ended
	if end.IsZero() || end.Before(tu.Started) {
		end = tu.Started
	}
	ctx, span := tr.Start(ctx, "invoke_agent "+agent, oteltrace.WithTimestamp(tu.Started),
		oteltrace.WithSpanKind(oteltrace.SpanKindInternal), oteltrace.WithAttributes(attrs...))
	for _, c := range tu.Calls {
		e.callSpan(ctx, tr, t.Conversation, key, root.trace, c)
	}
	if !tu.Completed() {
		span.SetAttributes(attribute.String("sessionbench.turn.status", string(tu.Status)))
		span.SetStatus(codes.Error, tu.Error)
	}
	span.End(oteltrace.WithTimestamp(end))
}
