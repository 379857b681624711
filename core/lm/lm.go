// Package lm is the provider-neutral language-model contract: messages in, text and usage
// out. Concrete models (OpenAI-compatible HTTP, the offline demo model) live in llm/;
// this package holds only the types and a scripted model for tests.
package lm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/sessionbench/sessionbench/core/sig"
)

// Message is one chat message as sent to a model.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// Extra holds the message's other keys (e.g. "name") as a compact JSON object, "" when
	// none: a history given as raw chat messages passes them through, as the template
	// adapter's reference does. Kept as text so messages stay comparable.
	Extra string `json:"-"`
}

// MarshalJSON writes role, content, then the extra keys.
func (m Message) MarshalJSON() ([]byte, error) {
	if m.Extra == "" {
		// As encoding/json writes the struct; the caller's encoder applies its own HTML
		// escaping to what a Marshaler returns.
		type plain Message
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(plain(m)); err != nil {
			return nil, err
		}
		return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
	}
	v := sig.NewMap("role", m.Role, "content", m.Content)
	if m.Extra != "" {
		x, err := sig.DecodeJSON([]byte(m.Extra))
		if xm, ok := x.(*sig.Map); err == nil && ok {
			xm.Range(func(k string, e any) bool {
				if k != "role" && k != "content" {
					v.Set(k, e)
				}
				return true
			})
		}
	}
	return v.MarshalJSON()
}

// ExtraString is the extra key k when it holds a string ("" otherwise).
func (m Message) ExtraString(k string) string {
	if m.Extra == "" {
		return ""
	}
	x, err := sig.DecodeJSON([]byte(m.Extra))
	if xm, ok := x.(*sig.Map); err == nil && ok {
		v, _ := xm.Get(k)
		s, _ := v.(string)
		return s
	}
	return ""
}

// UnmarshalJSON reads role and content, keeping any other key in Extra.
func (m *Message) UnmarshalJSON(data []byte) error {
	v, err := sig.DecodeJSON(data)
	if err != nil {
		return err
	}
	obj, ok := v.(*sig.Map)
	if !ok {
		return errors.New("message: want a JSON object")
	}
	*m = Message{}
	role, _ := obj.Get("role")
	content, _ := obj.Get("content")
	m.Role, _ = role.(string)
	m.Content, _ = content.(string)
	if extra := obj.Filter(func(k string) bool { return k != "role" && k != "content" }); extra.Len() > 0 {
		data, err := extra.MarshalJSON()
		if err != nil {
			return err
		}
		m.Extra = string(data)
	}
	return nil
}

// Params are the sampling parameters of one request. Nil pointers mean "not sent".
type Params struct {
	Model       string   `json:"model,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	MaxTokens   *int     `json:"max_tokens,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	Stop        []string `json:"stop,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
}

// Meta tells a model who is calling. Network models ignore it; the offline demo model and
// the scripted test model use it to pick their answers. It is never sent on the wire.
type Meta struct {
	Path          string         // predictor path, e.g. "classify" or "agent.researcher.summarizer"
	PredictorType string         // "Predict", "ChainOfThought"
	Adapter       string         // "chat", "json", "template"
	ParseMode     string         // template parse mode ("json", "full_text", "xml", "chat")
	Signature     *sig.Signature // the signature the messages were rendered from
	Inputs        *sig.Map       // the predictor's inputs (history excluded)
}

// Request is one call to a model.
type Request struct {
	// Messages are the request's messages, runs of them shared with other requests
	// (a session's next request repeats this one's history): read, never changed.
	Messages MessageList
	Params   Params
	Meta     Meta
	// OnDelta, when set, asks for streaming: it receives each text fragment as it arrives.
	OnDelta func(delta string)
	// OnTry, when set, is told about every HTTP try (retries included) as it happens.
	OnTry func(Try)
}

// Usage is the token accounting of a call: the server's, or, when a server reports none
// (many local servers do not), a count by the tokenizer marked Estimated.
type Usage struct {
	PromptTokens     int  `json:"prompt_tokens"`
	CompletionTokens int  `json:"completion_tokens"`
	CachedTokens     int  `json:"cached_tokens,omitempty"`
	TotalTokens      int  `json:"total_tokens"`
	Estimated        bool `json:"estimated,omitempty"` // counted here, not reported by the server
}

// Add sums two usages; the sum is an estimate when either part is.
func (u Usage) Add(v Usage) Usage {
	return Usage{PromptTokens: u.PromptTokens + v.PromptTokens, CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		CachedTokens: u.CachedTokens + v.CachedTokens, TotalTokens: u.TotalTokens + v.TotalTokens,
		Estimated: u.Estimated || v.Estimated}
}

// Try is one HTTP try at a request (retries are further tries). It is not seed 003's
// scored attempt of a workflow step (storage.Attempt); the JSON key stays "attempts" for
// the save files and the database.
type Try struct {
	N        int           `json:"n"`                  // 1-based
	Status   int           `json:"status,omitempty"`   // HTTP status, 0 when none
	Err      string        `json:"error,omitempty"`    // why it failed; "" for the successful one
	Wait     time.Duration `json:"wait,omitempty"`     // backoff before the next try
	Latency  time.Duration `json:"latency,omitempty"`  // time this try took
	Retrying bool          `json:"retrying,omitempty"` // another try follows
	// Adapter, Messages and Completion are set on the tries of a request the call
	// gave up on (DSPy's ChatAdapter -> JSONAdapter fallback): the call's own Messages
	// and Completion describe the request that answered, these keep the failed one.
	Adapter    string    `json:"adapter,omitempty"`
	Messages   []Message `json:"messages,omitempty"`
	Completion string    `json:"completion,omitempty"`
}

// Response is a model's answer.
type Response struct {
	Text         string `json:"text"`
	Model        string `json:"model,omitempty"`
	FinishReason string `json:"finish_reason,omitempty"`
	Usage        Usage  `json:"usage"`
	RequestBody  []byte `json:"-"` // the exact HTTP body sent, when there was one
	ResponseBody []byte `json:"-"` // the raw response (for streams: the SSE text)
	Tries        []Try  `json:"attempts,omitempty"`
}

// LM is a language model.
type LM interface {
	// Name identifies the model for display ("gpt-4o-mini", "demo (offline)").
	Name() string
	// Call sends one request. A cancelled ctx aborts at once and returns an error
	// wrapping context.Canceled; a partial answer is never returned as a result.
	Call(ctx context.Context, req Request) (Response, error)
}

// ErrPartial wraps a failure after some text already arrived; the text is for display only.
type PartialError struct {
	Partial string
	Err     error
}

func (e *PartialError) Error() string { return e.Err.Error() }
func (e *PartialError) Unwrap() error { return e.Err }

// IsCancelled reports whether err means the caller cancelled.
func IsCancelled(err error) bool { return errors.Is(err, context.Canceled) }
