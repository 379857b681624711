package proxy

import (
	"context"
	"net/http/httptest"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/llm"
)

// TestModelServerUpstream: the offline demo model served over HTTP is an upstream like
// any other; its DSPy-format answers parse into the request's outputs.
func TestModelServerUpstream(t *testing.T) {
	up := httptest.NewServer(ModelServer(llm.NewDemo(llm.DemoOptions{})))
	defer up.Close()
	rec := newMemRecorder()
	srv, err := New(Options{Upstream: Upstream{BaseURL: up.URL}, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	px := httptest.NewServer(srv)
	defer px.Close()
	cfg := openai.DefaultConfig("")
	cfg.BaseURL = px.URL + "/v1"
	client := openai.NewClientWithConfig(cfg)
	rq := requests[2] // JSONAdapter, typed outputs
	msgs, _ := rq.ad.Format(rq.req)
	var oa []openai.ChatCompletionMessage
	for _, m := range msgs {
		oa = append(oa, openai.ChatCompletionMessage{Role: m.Role, Content: m.Content})
	}
	ctx := context.Background()
	resp, err := client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "demo", Messages: oa})
	if err != nil {
		t.Fatal(err)
	}
	c := rec.last(t)
	if c.Error != "" || c.Recovered != trace.RecoveredExact || c.Outputs.Len() != 3 || c.Completion != resp.Choices[0].Message.Content || c.Usage.PromptTokens == 0 {
		t.Fatalf("record: error %q recovered %q outputs %v usage %+v", c.Error, c.Recovered, c.Outputs, c.Usage)
	}
	text := streamText(t, client, openai.ChatCompletionRequest{Model: "demo", Messages: oa,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true}})
	c = rec.last(t)
	if c.Error != "" || c.Completion != text || text != resp.Choices[0].Message.Content || c.Usage.PromptTokens == 0 {
		t.Fatalf("streamed record: error %q completion %q (streamed %q)", c.Error, c.Completion, text)
	}
}
