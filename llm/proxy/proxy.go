// Package proxy is sessionbench's recording proxy: an OpenAI-compatible endpoint that
// forwards every request to a configured provider, byte for byte in both directions
// (streamed or not), and records each chat completion as a trace.Call: the exact request
// and raw response or stream, usage, latency, status and errors, with the request
// recognised as DSPy's ChatAdapter or JSONAdapter format when it is one (core/recognize).
//
// Keys: the caller's Authorization is passed through (or replaced by the configured
// key); no key or header is ever recorded or logged, and key text that an upstream
// echoes is redacted from what is recorded. Memory: what is recorded of a request or a
// response is bounded (Options.MaxRecord); a request body is held whole while it is
// forwarded (64 MiB at most, else 413); a response streams through unbounded.
package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/sessionbench/sessionbench/core/limits"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/llm"
)

// Request headers a program may set to group its calls (they are not forwarded).
const (
	HeaderSession = "X-Sessionbench-Session" // calls with the same value share a conversation
	HeaderTurn    = "X-Sessionbench-Turn"    // calls with the same value share a turn
)

// DefaultMaxRecord bounds what is kept of one request body and of one response.
const DefaultMaxRecord = 16 << 20

// maxRequest bounds a request body, which is held whole while it is forwarded.
const maxRequest = 64 << 20

// Upstream is where requests go.
type Upstream struct {
	BaseURL string // e.g. https://api.openai.com/v1; paths after /v1 are appended to it
	// APIKey is the configured key: sent when the caller sends none, or always with
	// ForceKey. It is never recorded or logged.
	APIKey   string
	ForceKey bool
	Headers  map[string]string // the provider's extra headers (the caller's win)
	Connect  time.Duration     // TCP connect and TLS handshake; 0: no limit
	// FirstByte bounds the wait from forwarding a request to the upstream's first
	// bytes of answer (a local server may be loading its model); 0: no limit.
	FirstByte time.Duration
	// Stall bounds a silence of the upstream once its answer has begun (no bytes at
	// all, keep-alive comments count as life); 0: no limit. The caller's stream then
	// ends and the call is recorded as failed.
	Stall time.Duration
	Total time.Duration // a whole exchange, streams included; 0: no limit
}

// Route is how the program asked its call to be grouped (empty: by heuristics).
type Route struct {
	Session string
	Turn    string
}

// Recorder stores calls. Begin is told when a chat completion arrives, with the
// program's grouping headers (empty when not set), so a turn can tell calls in flight
// from idle time; the function it returns is called once, when the exchange is over,
// with the finished call. It must be safe for concurrent use.
type Recorder interface {
	Begin(session, turn string, started time.Time) (finish func(ctx context.Context, c *trace.Call) error)
}

// Options configure a Server.
type Options struct {
	Upstream  Upstream
	Recorder  Recorder  // nil: calls are forwarded and logged, not recorded
	Log       io.Writer // one line per request; nil: none
	MaxRecord int       // bytes kept per request body and per response; 0: DefaultMaxRecord
}

// Server is the proxy, an http.Handler. It is safe for concurrent use.
type Server struct {
	opts   Options
	base   *url.URL
	client *http.Client
	logMu  sync.Mutex
}

// New checks the options and builds the server.
func New(opts Options) (*Server, error) {
	u, err := url.Parse(opts.Upstream.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("proxy: upstream base URL %q must be an http:// or https:// URL", opts.Upstream.BaseURL)
	}
	if opts.MaxRecord <= 0 {
		opts.MaxRecord = DefaultMaxRecord
	}
	d := &net.Dialer{Timeout: opts.Upstream.Connect, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         d.DialContext,
		TLSHandshakeTimeout: opts.Upstream.Connect,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
		// The upstream's bytes pass through untouched: no transparent gzip.
		DisableCompression: true,
	}
	client := &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &Server{opts: opts, base: u, client: client}, nil
}

// target is the upstream URL for a request path: what follows an optional /v1 prefix
// is appended to the base URL, and the query is kept.
func (s *Server) target(in *url.URL) string {
	rest := in.Path
	if r, ok := strings.CutPrefix(rest, "/v1"); ok && (r == "" || r[0] == '/') {
		rest = r
	}
	u := *s.base
	u.Path = strings.TrimSuffix(u.Path, "/") + rest
	u.RawPath = ""
	u.RawQuery = in.RawQuery
	return u.String()
}

func isChat(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(strings.TrimSuffix(r.URL.Path, "/"), "/chat/completions")
}

// ServeHTTP forwards one request and records it when it is a chat completion.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	started := time.Now()
	ex := &exchange{s: s, started: started, caller: r.Context(), route: Route{Session: r.Header.Get(HeaderSession), Turn: r.Header.Get(HeaderTurn)},
		method: r.Method, path: r.URL.Path, chat: isChat(r), keys: s.keysOf(r.Header),
		req: capped{max: s.opts.MaxRecord}, resp: capped{max: s.opts.MaxRecord}}
	if ex.chat && s.opts.Recorder != nil {
		ex.finish = s.opts.Recorder.Begin(ex.route.Session, ex.route.Turn, started)
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	if s.opts.Upstream.Total > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, s.opts.Upstream.Total, errTotal)
		defer stop()
	}
	// Two clocks bound the upstream as they bound the model client: its first bytes
	// must come within FirstByte, then it may not fall silent for longer than Stall.
	first := llm.NewWatchdog(s.opts.Upstream.FirstByte, func() { cancel(errFirstByte) })
	defer first.Stop()
	ex.stall = llm.NewWatchdog(s.opts.Upstream.Stall, func() { cancel(errStall) })
	defer ex.stall.Stop()
	ex.firstBytes = first.Stop
	// The caller's body is read whole before it goes upstream: Go's server may close a
	// request body once the response's headers are flushed, so a body still being
	// streamed upstream when the answer starts would cut the upstream connection.
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		var err error
		body, err = io.ReadAll(io.LimitReader(r.Body, maxRequest+1))
		ex.req.Write(body)
		switch {
		case err != nil:
			ex.callerGone = r.Context().Err() != nil
			ex.fail(w, http.StatusBadRequest, fmt.Errorf("reading the request: %w", err))
			return
		case len(body) > maxRequest:
			ex.fail(w, http.StatusRequestEntityTooLarge, fmt.Errorf("the request is larger than %s", limits.Bytes(maxRequest)))
			return
		}
	}
	out, err := http.NewRequestWithContext(ctx, r.Method, s.target(r.URL), bytes.NewReader(body))
	if err != nil {
		ex.fail(w, http.StatusBadGateway, fmt.Errorf("building the upstream request: %w", err))
		return
	}
	if body == nil {
		out.Body, out.ContentLength = http.NoBody, 0
	}
	s.outHeaders(out.Header, r.Header)
	first.Arm()
	resp, err := s.client.Do(out)
	if err != nil {
		status := http.StatusBadGateway
		if timeout := s.timeout(ctx); timeout != nil {
			status, err = http.StatusGatewayTimeout, fmt.Errorf("%w: %w", timeout, err)
		}
		if r.Context().Err() != nil {
			ex.callerGone = true
		}
		ex.fail(w, status, fmt.Errorf("upstream %s: %w", s.base.Host, err))
		return
	}
	defer resp.Body.Close()
	ex.status = resp.StatusCode
	ex.stream = strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	if ex.stream {
		ex.sse = newStreamReader(s.opts.MaxRecord)
	}
	h := w.Header()
	for k, vs := range resp.Header {
		if !hopByHop(k, resp.Header) {
			h[k] = vs
		}
	}
	w.WriteHeader(resp.StatusCode)
	ex.copyBody(ctx, w, resp.Body)
	ex.done()
}

var (
	errTotal     = errors.New("total timeout")
	errFirstByte = errors.New("first byte timeout")
	errStall     = errors.New("stall timeout")
)

// timeout says which of the upstream's clocks ended ctx, in words; nil when none did.
func (s *Server) timeout(ctx context.Context) error {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errTotal):
		return fmt.Errorf("no complete answer within %s", s.opts.Upstream.Total)
	case errors.Is(cause, errFirstByte):
		return fmt.Errorf("no answer began within %s", s.opts.Upstream.FirstByte)
	case errors.Is(cause, errStall):
		return fmt.Errorf("the upstream stalled: nothing for %s", s.opts.Upstream.Stall)
	}
	return nil
}

// outHeaders copies the caller's headers for the upstream request: hop-by-hop headers,
// Host, Content-Length (set from the request), Accept-Encoding (the upstream's bytes pass through as they are) and the
// sessionbench headers stay behind; the key is the caller's unless the configured one
// is forced or the caller sent none.
func (s *Server) outHeaders(dst, src http.Header) {
	for k, vs := range src {
		ck := http.CanonicalHeaderKey(k)
		if hopByHop(ck, src) || ck == "Host" || ck == "Content-Length" || ck == "Accept-Encoding" || strings.HasPrefix(ck, "X-Sessionbench-") {
			continue
		}
		dst[ck] = append([]string(nil), vs...)
	}
	up := s.opts.Upstream
	if up.APIKey != "" && (up.ForceKey || (dst.Get("Authorization") == "" && dst.Get("Api-Key") == "")) {
		dst.Set("Authorization", "Bearer "+up.APIKey)
	}
	for k, v := range up.Headers {
		if dst.Get(k) == "" {
			dst.Set(k, v)
		}
	}
}

var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// hopByHop reports headers that belong to one connection (RFC 9110 §7.6.1).
func hopByHop(k string, h http.Header) bool {
	ck := http.CanonicalHeaderKey(k)
	for _, x := range hopHeaders {
		if ck == x {
			return true
		}
	}
	for _, v := range h.Values("Connection") {
		for _, f := range strings.Split(v, ",") {
			if http.CanonicalHeaderKey(strings.TrimSpace(f)) == ck {
				return true
			}
		}
	}
	return false
}

// keysOf lists the key texts to keep out of records and logs: the configured key and
// the one the caller sent.
func (s *Server) keysOf(h http.Header) []string {
	var keys []string
	add := func(k string) {
		if k = strings.TrimSpace(k); len(k) >= 4 {
			keys = append(keys, k)
		}
	}
	add(s.opts.Upstream.APIKey)
	if a := h.Get("Authorization"); a != "" {
		if k, ok := strings.CutPrefix(a, "Bearer "); ok {
			add(k)
		} else {
			add(a)
		}
	}
	add(h.Get("Api-Key"))
	return keys
}

// capped keeps the first max bytes written to it and counts the rest.
type capped struct {
	max   int
	buf   bytes.Buffer
	total int64
}

func (c *capped) Write(p []byte) (int, error) {
	c.total += int64(len(p))
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (c *capped) cut() bool { return c.total > int64(c.buf.Len()) }

// proxyError is the OpenAI-shaped error body the proxy answers with when the upstream
// gave no answer of its own (unreachable, timed out).
func proxyError(msg string) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": "sessionbench proxy: " + msg, "type": "proxy_error", "code": nil}})
	return b
}
