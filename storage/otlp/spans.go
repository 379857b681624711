package otlp

import (
	"context"
	"encoding/json"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// Event names. The per-message events are the GenAI conventions' message events
// (gen_ai.system.message, gen_ai.user.message, gen_ai.assistant.message, gen_ai.tool.message,
// gen_ai.choice) that most backends read; the details event carries the same messages in
// the current structured form (gen_ai.input.messages, gen_ai.output.messages).
const (
	eventChoice  = "gen_ai.choice"
	eventDetails = "gen_ai.client.inference.operation.details"
)

// systemKey is gen_ai.system, deprecated for gen_ai.provider.name but still what many
// backends read.
const systemKey = attribute.Key("gen_ai.system")

// callSpan records a call (and the calls made inside it) under ctx's span: a model call
// is a client "chat {model}" span with its messages as events; a call that only groups
// inner calls (a module) is an internal span named by its path.
func (e *Exporter) callSpan(ctx context.Context, tr oteltrace.Tracer, conv, key string, traceID oteltrace.TraceID, c *trace.Call) {
	id := derive(conv, key, c.ID, c.Path)
	id.trace = traceID
	ctx = context.WithValue(ctx, idsKey{}, id)
	end := c.Started.Add(c.Latency)
	attrs := []attribute.KeyValue{
		attribute.String("sessionbench.call.id", c.ID),
		attribute.String("sessionbench.call.path", c.Path),
		attribute.String("sessionbench.call.predictor_type", c.PredictorType),
		semconv.GenAIConversationIDKey.String(conv),
	}
	name, kind := "invoke_agent "+c.Path, oteltrace.SpanKindInternal
	model := c.Params.Model
	if model == "" {
		model = c.Model
	}
	if c.Messages.Len() > 0 {
		name, kind = "chat "+model, oteltrace.SpanKindClient
		attrs = append(attrs,
			semconv.GenAIOperationNameKey.String("chat"),
			semconv.GenAIProviderNameKey.String(e.opts.Provider),
			systemKey.String(e.opts.Provider),
			semconv.GenAIRequestModelKey.String(model),
			semconv.GenAIResponseModelKey.String(c.Model),
			semconv.GenAIUsageInputTokensKey.Int(c.Usage.PromptTokens),
			semconv.GenAIUsageOutputTokensKey.Int(c.Usage.CompletionTokens),
			attribute.String("sessionbench.call.adapter", c.Adapter))
		if c.Usage.CachedTokens > 0 {
			attrs = append(attrs, semconv.GenAIUsageCacheReadInputTokensKey.Int(c.Usage.CachedTokens))
		}
		if c.Recovered != "" {
			attrs = append(attrs, attribute.String("sessionbench.call.recovered", c.Recovered))
		}
		p := c.Params
		if p.Temperature != nil {
			attrs = append(attrs, semconv.GenAIRequestTemperatureKey.Float64(*p.Temperature))
		}
		if p.MaxTokens != nil {
			attrs = append(attrs, semconv.GenAIRequestMaxTokensKey.Int(*p.MaxTokens))
		}
		if p.TopP != nil {
			attrs = append(attrs, semconv.GenAIRequestTopPKey.Float64(*p.TopP))
		}
		if p.Seed != nil {
			attrs = append(attrs, semconv.GenAIRequestSeedKey.Int64(*p.Seed))
		}
		if len(p.Stop) > 0 {
			attrs = append(attrs, semconv.GenAIRequestStopSequencesKey.StringSlice(p.Stop))
		}
	} else {
		attrs = append(attrs, semconv.GenAIOperationNameKey.String("invoke_agent"), semconv.GenAIAgentNameKey.String(c.Path))
	}
	ctx, span := tr.Start(ctx, name, oteltrace.WithTimestamp(c.Started), oteltrace.WithSpanKind(kind), oteltrace.WithAttributes(attrs...))
	if c.Messages.Len() > 0 {
		e.messageEvents(span, c)
	}
	for _, ch := range c.Children {
		e.callSpan(ctx, tr, conv, key, traceID, ch)
	}
	if c.Error != "" {
		errType := "_OTHER"
		for _, t := range c.Tries {
			if t.Status >= 400 {
				errType = strconv.Itoa(t.Status)
			}
		}
		span.SetAttributes(semconv.ErrorTypeKey.String(errType))
		span.SetStatus(codes.Error, c.Error)
	}
	span.End(oteltrace.WithTimestamp(end))
}

// part and message are the GenAI conventions' structured message form.
type part struct {
	Type    string `json:"type"`
	Content string `json:"content"`
}

type message struct {
	Role         string `json:"role"`
	Parts        []part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

func (e *Exporter) messageEvents(span oteltrace.Span, c *trace.Call) {
	sys := systemKey.String(e.opts.Provider)
	in := make([]message, c.Messages.Len())
	for i, m := range c.Messages.All() {
		in[i] = message{Role: m.Role, Parts: []part{{Type: "text", Content: m.Content}}}
		span.AddEvent("gen_ai."+m.Role+".message", oteltrace.WithTimestamp(c.Started),
			oteltrace.WithAttributes(sys, attribute.String("role", m.Role), attribute.String("content", m.Content)))
	}
	details := []attribute.KeyValue{semconv.GenAIInputMessagesKey.String(mustJSON(in))}
	at := c.Started.Add(c.Latency)
	if c.Error == "" {
		out := []message{{Role: "assistant", Parts: []part{{Type: "text", Content: c.Completion}}, FinishReason: "stop"}}
		details = append(details, semconv.GenAIOutputMessagesKey.String(mustJSON(out)))
		span.AddEvent(eventChoice, oteltrace.WithTimestamp(at), oteltrace.WithAttributes(sys, attribute.Int("index", 0),
			attribute.String("finish_reason", "stop"), attribute.String("role", "assistant"), attribute.String("content", c.Completion)))
	}
	span.AddEvent(eventDetails, oteltrace.WithTimestamp(at), oteltrace.WithAttributes(details...))
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// jsonText is a value map as JSON text ("{}" for none).
func jsonText(m *sig.Map) string {
	if m == nil {
		return "{}"
	}
	b, err := m.MarshalJSON()
	if err != nil {
		return "{}"
	}
	return string(b)
}
