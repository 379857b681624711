package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sessionbench/sessionbench/core/limits"
	"github.com/sessionbench/sessionbench/core/lm"
)

// chatRequest is what the proxy reads from a chat-completions request body. The body is
// forwarded as it came; this is only for the record.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []wireMessage   `json:"messages"`
	Stream              bool            `json:"stream"`
	Temperature         *float64        `json:"temperature"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	TopP                *float64        `json:"top_p"`
	Stop                json.RawMessage `json:"stop"`
	Seed                *int64          `json:"seed"`
}

type wireMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls json.RawMessage `json:"tool_calls"`
}

// plain reports whether every message is a role and a string content, the shape DSPy's
// adapters send (anything richer is kept as text, but is in no known format).
func (r *chatRequest) plain() bool {
	for _, m := range r.Messages {
		if len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" {
			return false
		}
		if c := bytes.TrimSpace(m.Content); len(c) == 0 || c[0] != '"' {
			return false
		}
	}
	return true
}

// parseChatRequest reads a request body. Content that is not a string (a list of parts,
// null) becomes readable text: text parts joined by blank lines, other parts and tool
// calls as their JSON. The exact body is what the record keeps as the request.
func parseChatRequest(body []byte) (*chatRequest, []lm.Message, lm.Params, error) {
	if err := limits.CheckJSON(body); err != nil {
		return nil, nil, lm.Params{}, fmt.Errorf("the request body: %w", err)
	}
	var r chatRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, nil, lm.Params{}, fmt.Errorf("the request body is not a chat-completions JSON object: %w", err)
	}
	msgs := make([]lm.Message, len(r.Messages))
	for i, m := range r.Messages {
		msgs[i] = lm.Message{Role: m.Role, Content: contentText(m.Content)}
		if len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" {
			msgs[i].Content = joinNonEmpty(msgs[i].Content, string(m.ToolCalls))
		}
	}
	p := lm.Params{Model: r.Model, Temperature: r.Temperature, MaxTokens: r.MaxTokens, TopP: r.TopP, Seed: r.Seed}
	if p.MaxTokens == nil {
		p.MaxTokens = r.MaxCompletionTokens
	}
	var one string
	if json.Unmarshal(r.Stop, &one) == nil && one != "" {
		p.Stop = []string{one}
	} else {
		_ = json.Unmarshal(r.Stop, &p.Stop)
	}
	return &r, msgs, p, nil
}

func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []json.RawMessage
	if json.Unmarshal(raw, &parts) != nil {
		return "" // null or absent
	}
	var texts []string
	for _, p := range parts {
		var t struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(p, &t) == nil && t.Type == "text" {
			texts = append(texts, t.Text)
		} else {
			texts = append(texts, string(p))
		}
	}
	return strings.Join(texts, "\n\n")
}

func joinNonEmpty(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n\n" + b
}

// wireUsage is the usage object of a response or of a stream's last chunk.
type wireUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (u *wireUsage) usage() lm.Usage {
	if u == nil {
		return lm.Usage{}
	}
	out := lm.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if u.PromptTokensDetails != nil {
		out.CachedTokens = u.PromptTokensDetails.CachedTokens
	}
	return out
}

// reply is what a response said: the first choice's text, the model, usage and finish
// reason; err is an error object the server sent inside a 200 (or mid-stream).
type reply struct {
	text     string
	model    string
	finish   string
	usage    lm.Usage
	hasUsage bool
	err      string
}

type wireChoice struct {
	Index        int    `json:"index"`
	FinishReason string `json:"finish_reason"`
	Message      *struct {
		Content   json.RawMessage `json:"content"`
		ToolCalls json.RawMessage `json:"tool_calls"`
	} `json:"message"`
	Delta *struct {
		Content string `json:"content"`
	} `json:"delta"`
}

type wireResponse struct {
	Model   string          `json:"model"`
	Choices []wireChoice    `json:"choices"`
	Usage   *wireUsage      `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

// parseResponse reads a non-streamed chat-completions response body.
func parseResponse(body []byte) (reply, error) {
	var w wireResponse
	if err := json.Unmarshal(body, &w); err != nil {
		return reply{}, fmt.Errorf("the response is not a chat-completions JSON object: %w", err)
	}
	r := reply{model: w.Model, usage: w.Usage.usage(), hasUsage: w.Usage != nil, err: errorText(w.Error)}
	for _, c := range w.Choices {
		if c.Index != 0 || c.Message == nil {
			continue
		}
		r.text, r.finish = contentText(c.Message.Content), c.FinishReason
		if len(c.Message.ToolCalls) > 0 && string(c.Message.ToolCalls) != "null" {
			r.text = joinNonEmpty(r.text, string(c.Message.ToolCalls))
		}
	}
	return r, nil
}

// errorText is the message of an OpenAI error object ("" when there is none).
func errorText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Message != "" {
		return e.Message
	}
	return string(raw)
}

// streamReader follows a server-sent event stream as it passes through, keeping the
// first choice's text (bounded), the model, usage and finish reason. Lines longer than
// the bound are skipped, so memory stays bounded whatever the server sends.
type streamReader struct {
	max     int
	line    []byte
	long    bool // the current line overflowed and is being skipped
	out     reply
	text    strings.Builder
	cut     bool // the text reached max and stopped growing
	done    bool // data: [DONE] was seen
	badJSON int  // data lines that were not JSON
}

func newStreamReader(max int) *streamReader { return &streamReader{max: max} }

// Write takes the next bytes of the stream, in any chunking.
func (s *streamReader) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.add(p)
			break
		}
		s.add(p[:i])
		s.endLine()
		p = p[i+1:]
	}
	return n, nil
}

func (s *streamReader) add(p []byte) {
	if s.long {
		return
	}
	if len(s.line)+len(p) > s.max {
		s.long, s.line = true, s.line[:0]
		return
	}
	s.line = append(s.line, p...)
}

func (s *streamReader) endLine() {
	line := bytes.TrimRight(s.line, "\r")
	long := s.long
	s.line, s.long = s.line[:0], false
	if long {
		return
	}
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return
	}
	data = bytes.TrimSpace(data)
	if string(data) == "[DONE]" {
		s.done = true
		return
	}
	var w wireResponse
	if json.Unmarshal(data, &w) != nil {
		s.badJSON++
		return
	}
	if w.Model != "" {
		s.out.model = w.Model
	}
	if w.Usage != nil {
		s.out.usage, s.out.hasUsage = w.Usage.usage(), true
	}
	if e := errorText(w.Error); e != "" {
		s.out.err = e
	}
	for _, c := range w.Choices {
		if c.Index != 0 {
			continue
		}
		if c.Delta != nil && !s.cut {
			if s.text.Len()+len(c.Delta.Content) > s.max {
				s.cut = true
			} else {
				s.text.WriteString(c.Delta.Content)
			}
		}
		if c.FinishReason != "" {
			s.out.finish = c.FinishReason
		}
	}
}

// result is what the stream said, once it ended.
func (s *streamReader) result() reply {
	if len(s.line) > 0 { // a last line without its newline
		s.endLine()
	}
	r := s.out
	r.text = s.text.String()
	return r
}
