// Package llm holds the concrete language models behind core/lm's contract: a client for
// every server that speaks OpenAI's chat-completions protocol (OpenAI, Azure OpenAI,
// Groq, OpenRouter, Ollama, vLLM, llama.cpp, LM Studio), the offline demo model, the
// configuration that picks one, and token counting.
package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/redact"
	"github.com/sessionbench/sessionbench/llm/config"
)

// DefaultBaseURL is OpenAI's own endpoint.
const DefaultBaseURL = "https://api.openai.com/v1"

// Timeouts bound one call. A zero field means no limit.
type Timeouts struct {
	Connect time.Duration // TCP connect plus TLS handshake, per try
	// FirstToken bounds, per try, the wait from sending the request to the first
	// streamed text. It applies to streaming calls only: a non-streaming server sends
	// nothing until it is done, so there the total timeout is the bound.
	FirstToken time.Duration
	// Stall bounds, once text is streaming, a silence of the server: no bytes at all
	// for this long ends the try (the text so far is kept as a partial answer).
	Stall time.Duration
	Total time.Duration // the whole call, retries and backoff waits included
}

// DefaultTimeouts is used when none are configured. The first-token bound is generous
// because local servers may load a model into memory before answering.
func DefaultTimeouts() Timeouts {
	return Timeouts{Connect: 10 * time.Second, FirstToken: 2 * time.Minute, Stall: 60 * time.Second, Total: 10 * time.Minute}
}

// OpenAIOptions configures an OpenAI-compatible model. Request-level lm.Params override
// the defaults given here.
type OpenAIOptions struct {
	Provider    string // display name of the provider ("openai", "ollama")
	BaseURL     string // e.g. http://localhost:11434/v1; DefaultBaseURL when empty
	APIKey      string // sent as a bearer token (Azure: api-key header); may be empty
	APIKeyEnv   string // where the key came from, for hints only
	Model       string
	Temperature *float64
	MaxTokens   *int
	Stop        []string
	Seed        *int64
	Headers     map[string]string // extra HTTP headers, applied last
	// Azure selects Azure OpenAI addressing (deployments in the URL, api-key header);
	// APIVersion is then required.
	Azure      bool
	APIVersion string
	// NoStreamUsage stops asking for usage in the final stream chunk
	// (stream_options.include_usage), for servers that reject the option.
	NoStreamUsage bool
	Retry         *RetryPolicy // nil: DefaultRetry()
	Timeouts      *Timeouts    // nil: DefaultTimeouts()
}

// OpenAI is a model behind an OpenAI-compatible chat-completions endpoint. It is safe for
// concurrent use.
type OpenAI struct {
	opts     OpenAIOptions
	retry    RetryPolicy
	timeouts Timeouts
	http     *http.Client
	// used is when a call or a Preconnect last used the server (unix ns).
	used atomic.Int64
}

// NewOpenAI builds an OpenAI-compatible model. It does not contact the server.
func NewOpenAI(opts OpenAIOptions) (*OpenAI, error) {
	if opts.BaseURL == "" {
		opts.BaseURL = DefaultBaseURL
	}
	if !strings.HasPrefix(opts.BaseURL, "http://") && !strings.HasPrefix(opts.BaseURL, "https://") {
		return nil, fmt.Errorf("base URL %q: must start with http:// or https://", opts.BaseURL)
	}
	if opts.Model == "" {
		return nil, fmt.Errorf("provider %q: no model given", opts.Provider)
	}
	if opts.Azure && opts.APIVersion == "" {
		return nil, fmt.Errorf("provider %q: Azure OpenAI needs an api_version", opts.Provider)
	}
	registerSecrets(opts.APIKey, opts.Headers)
	o := &OpenAI{opts: opts, retry: DefaultRetry(), timeouts: DefaultTimeouts()}
	if opts.Retry != nil {
		o.retry = *opts.Retry
	}
	if opts.Timeouts != nil {
		o.timeouts = *opts.Timeouts
	}
	o.http = newHTTPClient(o.timeouts.Connect)
	return o, nil
}

// Name is the model name as configured.
func (o *OpenAI) Name() string { return o.opts.Model }

// Options returns the options the model was built with.
func (o *OpenAI) Options() OpenAIOptions { return o.opts }

// Preconnect opens a connection to the server ahead of a call, so that the call does not
// wait for DNS, TCP and TLS (tens to hundreds of milliseconds to a hosted model): a HEAD
// request to the base URL, without the key, whose answer is ignored; the transport keeps
// the connection for the next call. It does nothing when a call or a Preconnect used the
// server in the last preconnectFresh, whose connection is still kept. The workbench
// calls it as the user starts typing, `sessionbench run` as it starts (Service.Prefetch
// and RestoreAhead). It blocks until the server answered or the connect timeout passed.
func (o *OpenAI) Preconnect(ctx context.Context) {
	codecsWarm.Do(warmCodecs)
	now := time.Now().UnixNano()
	last := o.used.Load()
	if now-last < int64(preconnectFresh) || !o.used.CompareAndSwap(last, now) {
		return
	}
	timeout := o.timeouts.Connect
	if timeout <= 0 {
		timeout = DefaultTimeouts().Connect
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, o.opts.BaseURL, nil)
	if err != nil {
		return
	}
	req.Header.Set("User-Agent", "sessionbench")
	resp, err := o.http.Do(req)
	if err != nil {
		return // the call reports what is wrong with the server
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	_ = resp.Body.Close()
}

// codecsWarm makes encoding/json's encoder and decoders for go-openai's types once per
// process, as Preconnect readies a call: built by the first call instead, they cost it
// about 0.2 ms before its request went out and as much on its first answer.
var codecsWarm sync.Once

func warmCodecs() {
	_, _ = json.Marshal(openai.ChatCompletionRequest{Model: "m", Stream: true})
	var chunk openai.ChatCompletionStreamResponse
	_ = json.Unmarshal([]byte(`{"id":"x","choices":[{"index":0,"delta":{"content":"x"}}]}`), &chunk)
	var whole openai.ChatCompletionResponse
	_ = json.Unmarshal([]byte(`{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"x"}}]}`), &whole)
}

// preconnectFresh is how long after the server was last used Preconnect takes its
// connection to be still open: well within the transport's idle timeout and servers'
// keep-alive (a minute or more at the common hosts).
const preconnectFresh = 20 * time.Second

// Call sends the request, streaming when req.OnDelta is set, retrying per the policy.
// On failure the returned Response still carries the last try's RequestBody,
// ResponseBody and all Tries (Text stays empty); a failure after text arrived is an
// *lm.PartialError.
func (o *OpenAI) Call(ctx context.Context, req lm.Request) (lm.Response, error) {
	model := o.opts.Model
	if req.Params.Model != "" {
		model = req.Params.Model
	}
	name := fmt.Sprintf("model %q at %s", model, o.opts.BaseURL)
	callCtx := ctx
	if o.timeouts.Total > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeoutCause(ctx, o.timeouts.Total, errTotal)
		defer cancel()
	}
	o.used.Store(time.Now().UnixNano())
	defer func() { o.used.Store(time.Now().UnixNano()) }()
	chatReq, extra := o.buildRequest(model, req)
	msgs := preEncode(req.Messages)
	if msgs == nil {
		chatReq.Messages = chatMessages(req.Messages)
	}
	tgt := target{baseURL: o.opts.BaseURL, model: model, keyEnv: o.opts.APIKeyEnv, hasKey: o.opts.APIKey != ""}

	var out lm.Response
	for n := 1; ; n++ {
		start := time.Now()
		tryCtx, cancelTry := context.WithCancelCause(callCtx)
		res, x, err := o.try(tryCtx, cancelTry, chatReq, extra, msgs, req.OnDelta)
		cancelTry(nil)
		out.RequestBody = x.reqBody
		_, _, raw := x.response()
		out.ResponseBody = redactBody(raw)
		att := lm.Try{N: n, Latency: time.Since(start)}
		if err == nil {
			att.Status = res.status
			out.Tries = append(out.Tries, att)
			report(req.OnTry, att)
			out.Text, out.Model, out.FinishReason, out.Usage = res.text, res.model, res.finish, res.usage
			if out.Usage == (lm.Usage{}) {
				out.Usage = EstimateUsage(model, req.Messages.Slice(), res.text)
			}
			return out, nil
		}

		// Classify: the caller's cancellation first, then our own deadlines, then the rest.
		var failure error
		var e *Error
		status, header, raw := x.response()
		att.Status = res.status
		switch {
		case ctx.Err() != nil:
			failure = cancelled(ctx, name)
			att.Err = "cancelled"
		case context.Cause(callCtx) == errTotal:
			e = &Error{Message: fmt.Sprintf("no complete answer within the total timeout of %s", o.timeouts.Total), Err: context.DeadlineExceeded,
				Hint: "raise the total timeout if the model is just slow"}
		case context.Cause(tryCtx) == errFirstToken:
			e = &Error{Message: fmt.Sprintf("no first token within %s", o.timeouts.FirstToken), Err: context.DeadlineExceeded, Retryable: true}
		case context.Cause(tryCtx) == errStall:
			e = &Error{Message: fmt.Sprintf("the stream stalled: nothing from the server for %s", o.timeouts.Stall), Err: context.DeadlineExceeded,
				Retryable: true, Hint: "raise stall_timeout if the server pauses this long on purpose"}
		case res.httpErr:
			e = classifyHTTP(status, raw, err, tgt)
		default:
			e = classifyTransport(err, tgt)
		}
		if e != nil {
			failure = e
			att.Err = e.Error()
		}
		partial := res.text != ""
		wait, retrying := time.Duration(0), false
		if e != nil && e.Retryable && !partial && n <= o.retry.MaxRetries {
			wait, retrying = o.retry.backoff(n), true
			if ra, ok := retryAfter(header, time.Now()); ok && e.Status != 0 {
				wait = ra
				if o.retry.MaxRetryAfter > 0 && ra > o.retry.MaxRetryAfter {
					retrying = false
					e.Hint = joinHint(e.Hint, fmt.Sprintf("the server asks to wait %s, longer than the %s allowed", ra.Round(time.Second), o.retry.MaxRetryAfter))
					att.Err = e.Error()
				}
			}
			if dl, ok := callCtx.Deadline(); retrying && ok && time.Until(dl) < wait {
				retrying = false
				e.Hint = joinHint(e.Hint, "no time left for another try within the total timeout")
				att.Err = e.Error()
			}
		}
		if retrying {
			att.Wait, att.Retrying = wait, true
		}
		out.Tries = append(out.Tries, att)
		report(req.OnTry, att)
		if !retrying {
			if e != nil && n > 1 {
				failure = fmt.Errorf("%s: gave up after %d tries: %w", name, n, e)
			} else if e != nil {
				failure = fmt.Errorf("%s: %w", name, e)
			}
			if partial {
				failure = &lm.PartialError{Partial: res.text, Err: failure}
			}
			return out, failure
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-callCtx.Done():
			t.Stop()
			if err := cancelled(ctx, name); err != nil {
				return out, err
			}
			return out, fmt.Errorf("%s: total timeout of %s reached while waiting to retry: %w", name, o.timeouts.Total, e)
		}
	}
}

// registerSecrets makes the key and the values of headers that carry credentials
// (Authorization, api-key, ...) redacted from every error from now on.
func registerSecrets(key string, headers map[string]string) {
	redact.Register(key)
	for k, v := range headers {
		if config.SecretHeader(k) {
			redact.Register(strings.TrimSpace(strings.TrimPrefix(v, "Bearer ")))
		}
	}
}

// redactBody keeps keys out of a recorded response (an error body may quote the key).
func redactBody(raw []byte) []byte {
	if s := string(raw); redact.String(s) != s {
		return []byte(redact.String(s))
	}
	return raw
}

func joinHint(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func report(f func(lm.Try), a lm.Try) {
	if f != nil {
		f(a)
	}
}

// usesMaxCompletionTokens reports whether the token limit is sent as
// max_completion_tokens. OpenAI and Azure OpenAI take it for every model (max_tokens is
// deprecated there and refused by reasoning models); other OpenAI-compatible servers
// (llama.cpp, Ollama, older vLLM) may know only max_tokens, except for reasoning models,
// whose servers follow OpenAI.
func usesMaxCompletionTokens(baseURL string, azure bool, model string) bool {
	if azure || reasoningModel(model) {
		return true
	}
	u, err := url.Parse(baseURL)
	if err != nil {
		return false
	}
	host := u.Hostname()
	return host == "api.openai.com" || strings.HasSuffix(host, ".openai.azure.com")
}

// reasoningModel reports OpenAI models that take max_completion_tokens, not max_tokens.
func reasoningModel(model string) bool {
	m := model
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	for _, p := range []string{"o1", "o3", "o4", "gpt-5", "gpt-6"} {
		if strings.HasPrefix(m, p) {
			return true
		}
	}
	return false
}

// chatMessages are msgs as go-openai's request holds them, for the requests preEncode
// leaves to go-openai.
func chatMessages(msgs lm.MessageList) []openai.ChatCompletionMessage {
	out := make([]openai.ChatCompletionMessage, msgs.Len())
	for i, m := range msgs.All() {
		out[i] = openai.ChatCompletionMessage{Role: m.Role, Content: m.Content, Name: m.ExtraString("name")}
	}
	return out
}

// buildRequest maps lm.Request onto go-openai's request, its messages left out
// (preEncode, chatMessages), plus the JSON members go-openai cannot send itself (zero
// temperature or top_p, dropped by its omitempty tags).
func (o *OpenAI) buildRequest(model string, req lm.Request) (openai.ChatCompletionRequest, []string) {
	r := openai.ChatCompletionRequest{Model: model}
	p := req.Params
	temp, maxTok, stop, seed := o.opts.Temperature, o.opts.MaxTokens, o.opts.Stop, o.opts.Seed
	if p.Temperature != nil {
		temp = p.Temperature
	}
	if p.MaxTokens != nil {
		maxTok = p.MaxTokens
	}
	if p.Stop != nil {
		stop = p.Stop
	}
	if p.Seed != nil {
		seed = p.Seed
	}
	var extra []string
	if temp != nil {
		if *temp == 0 {
			extra = append(extra, `"temperature":0`)
		} else {
			r.Temperature = float32(*temp)
		}
	}
	if p.TopP != nil {
		if *p.TopP == 0 {
			extra = append(extra, `"top_p":0`)
		} else {
			r.TopP = float32(*p.TopP)
		}
	}
	if maxTok != nil && *maxTok > 0 {
		if usesMaxCompletionTokens(o.opts.BaseURL, o.opts.Azure, model) {
			r.MaxCompletionTokens = *maxTok
		} else {
			// go-openai's MaxTokens field is deprecated; the member is written directly.
			extra = append(extra, fmt.Sprintf(`"max_tokens":%d`, *maxTok))
		}
	}
	r.Stop = stop
	if seed != nil {
		s := int(*seed)
		r.Seed = &s
	}
	if req.OnDelta != nil {
		r.Stream = true
		if !o.opts.NoStreamUsage {
			r.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
		}
	}
	return r, extra
}

// preEncode writes the messages, when they are all plain (a role and content, no other
// keys), as the JSON array the client would write, for captureDoer to put in the body
// go-openai writes without them (nil: they go in go-openai's request, chatMessages,
// never built for a request preEncode writes: 2,000 of them at 1,000 turns). go-openai marshals each message through
// its own MarshalJSON, which encoding/json then compacts and escapes again: 4 ms for
// the 2,000 messages of a 1,000-turn request, against a few tenths of one here. The
// body is the same, byte for byte (TestPreEncodedBody).
func preEncode(msgs lm.MessageList) []byte {
	size := 2
	for _, m := range msgs.All() {
		if m.Extra != "" || m.Content == "" {
			return nil // go-openai's own way, with fillEmptyContent
		}
		size += len(m.Role) + len(m.Content) + 32
	}
	if msgs.Len() == 0 {
		return nil
	}
	b := make([]byte, 0, size)
	b = append(b, '[')
	for i, m := range msgs.All() {
		if i > 0 {
			b = append(b, ',')
		}
		b = lm.AppendMessageJSON(b, m)
	}
	return append(b, ']')
}

func (o *OpenAI) client(r openai.ChatCompletionRequest, x *exchange, extra []string, msgs []byte) *openai.Client {
	cfg := openai.DefaultConfig(o.opts.APIKey)
	if o.opts.Azure {
		cfg = openai.DefaultAzureConfig(o.opts.APIKey, o.opts.BaseURL)
		cfg.APIVersion = o.opts.APIVersion
		cfg.AzureModelMapperFunc = func(m string) string { return m }
	}
	cfg.BaseURL = o.opts.BaseURL
	// Some gateways send keep-alive comments while a model loads; go-openai counts
	// them as empty messages and gives up after its limit.
	cfg.EmptyMessagesLimit = 100000
	fill := false
	for _, m := range r.Messages {
		fill = fill || m.Content == ""
	}
	cfg.HTTPClient = &captureDoer{client: o.http, headers: o.opts.Headers, extra: extra, messages: msgs, fillContent: fill, stream: r.Stream, x: x}
	return openai.NewClientWithConfig(cfg)
}

func usageOf(u *openai.Usage) lm.Usage {
	out := lm.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if u.PromptTokensDetails != nil {
		out.CachedTokens = u.PromptTokensDetails.CachedTokens
	}
	return out
}

// describe is a one-line description for the UI.
func (o *OpenAI) describe() string {
	key := "no API key"
	switch {
	case o.opts.APIKeyEnv != "" && o.opts.APIKey != "":
		key = "key from $" + o.opts.APIKeyEnv
	case o.opts.APIKeyEnv != "":
		key = "$" + o.opts.APIKeyEnv + " not set"
	case o.opts.APIKey != "":
		key = "key from key_command"
	}
	prov := o.opts.Provider
	if prov == "" {
		prov = "openai-compatible"
	}
	return fmt.Sprintf("%s via %s (%s, %s)", o.opts.Model, prov, o.opts.BaseURL, key)
}
