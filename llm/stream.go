package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sessionbench/sessionbench/core/lm"
)

// errNoChoices is an answer without a choice, streamed or not: there is no text to use.
var errNoChoices = errors.New(`the server returned no choices (an empty "choices" list)`)

// result is one try's outcome. text may be set on failure (the partial answer).
type result struct {
	text, model, finish string
	usage               lm.Usage
	status              int
	httpErr             bool // the server answered with an error status
}

func (o *OpenAI) try(ctx context.Context, cancel context.CancelCauseFunc, r openai.ChatCompletionRequest,
	extra []string, msgs []byte, onDelta func(string)) (result, *exchange, error) {
	x := &exchange{}
	c := o.client(r, x, extra, msgs)
	if !r.Stream {
		resp, err := c.CreateChatCompletion(ctx, r)
		status, _, _ := x.response()
		if err != nil {
			return result{status: status, httpErr: status >= 400}, x, err
		}
		if len(resp.Choices) == 0 {
			return result{status: status}, x, errNoChoices
		}
		return result{text: resp.Choices[0].Message.Content, model: resp.Model, finish: string(resp.Choices[0].FinishReason),
			usage: usageOf(&resp.Usage), status: status}, x, nil
	}

	// Two clocks bound a stream: the first token must come within FirstToken (a local
	// server may be loading the model), after which the server may not fall silent for
	// longer than Stall. Any bytes count as life, keep-alive comments included.
	stop := func() bool { return false }
	if o.timeouts.FirstToken > 0 {
		t := time.AfterFunc(o.timeouts.FirstToken, func() { cancel(errFirstToken) })
		defer t.Stop()
		stop = t.Stop
	}
	stall := NewWatchdog(o.timeouts.Stall, func() { cancel(errStall) })
	defer stall.Stop()
	x.alive = stall.Kick
	onDelta = firstCall(func() bool { stall.Arm(); return stop() }, onDelta)
	stream, err := c.CreateChatCompletionStream(ctx, r)
	status, _, _ := x.response()
	if err != nil {
		return result{status: status, httpErr: status >= 400}, x, err
	}
	defer stream.Close()
	var res result
	res.status = status
	var text strings.Builder
	sawChoice := false
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			_, _, raw := x.response()
			if !sawDone(raw) && res.finish == "" {
				res.text = text.String()
				return res, x, fmt.Errorf("stream ended before its end marker: %w", io.ErrUnexpectedEOF)
			}
			break
		}
		if err != nil {
			res.text = text.String()
			return res, x, err
		}
		if chunk.Model != "" {
			res.model = chunk.Model
		}
		if chunk.Usage != nil {
			res.usage = usageOf(chunk.Usage)
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			sawChoice = true
			if ch.Delta.Content != "" {
				text.WriteString(ch.Delta.Content)
				onDelta(ch.Delta.Content)
			} else if ch.Delta.ReasoningContent != "" {
				onDelta("") // thinking counts as a sign of life for the first-token timer
			}
			if ch.FinishReason != "" {
				res.finish = string(ch.FinishReason)
			}
		}
	}
	if !sawChoice {
		return res, x, errNoChoices
	}
	res.text = text.String()
	return res, x, nil
}

// firstCall runs stop once, before the first delta is passed on; empty deltas are
// swallowed (they only mean "alive").
func firstCall(stop func() bool, f func(string)) func(string) {
	done := false
	return func(s string) {
		if !done {
			done = true
			stop()
		}
		if s != "" {
			f(s)
		}
	}
}

// sawDone reports whether an SSE transcript holds the "data: [DONE]" end marker.
func sawDone(raw []byte) bool {
	for _, line := range bytes.Split(raw, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok && string(bytes.TrimSpace(rest)) == "[DONE]" {
			return true
		}
	}
	return false
}
