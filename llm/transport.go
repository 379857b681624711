package llm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sessionbench/sessionbench/core/limits"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

// newHTTPClient builds the client shared by all calls of one OpenAI model. The connect
// timeout bounds the TCP dial and the TLS handshake; everything after that is bounded by
// the first-token and total timeouts, which work through the request context.
func newHTTPClient(connect time.Duration) *http.Client {
	d := &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		TLSHandshakeTimeout:   connect,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{Transport: t}
}

// exchange is what one try put on the wire and got back. go-openai hides both the
// body it marshals and the response headers (Retry-After) behind its own types, so every
// try runs through a captureDoer that keeps them.
type exchange struct {
	mu      sync.Mutex
	reqBody []byte
	status  int
	header  http.Header
	raw     bytes.Buffer
	alive   func() // told about every read from the response body (the stall clock)
}

func (x *exchange) response() (status int, header http.Header, raw []byte) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.status, x.header, bytes.Clone(x.raw.Bytes())
}

// captureDoer is go-openai's HTTPDoer for one try: it adds the configured headers,
// appends body fields go-openai cannot express, and records the exchange.
type captureDoer struct {
	client  *http.Client
	headers map[string]string
	// extra holds JSON members appended to the body, in order ("temperature":0 and the
	// like: go-openai drops zero floats because of omitempty).
	extra []string
	// messages is the messages array, written by preEncode, for the body's
	// "messages":null (nil: go-openai wrote them).
	messages []byte
	// fillContent restores "content":"" on messages go-openai wrote without it (its
	// omitempty drops empty content, which servers reject and the preview would not show).
	fillContent bool
	// stream says the request asked for an event stream; a 2xx answer of another kind
	// is refused here (see checkContentType) rather than misread as a broken stream.
	stream bool
	x      *exchange
}

func (d *captureDoer) Do(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("reading the request body: %w", err)
		}
		body = appendMembers(b, d.extra)
		if d.fillContent {
			body = fillEmptyContent(body)
		}
		if d.messages != nil {
			if body, err = fillMessages(body, d.messages); err != nil {
				return nil, err
			}
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	req.Header.Set("User-Agent", "sessionbench")
	for k, v := range d.headers {
		req.Header.Set(k, v)
	}
	d.x.mu.Lock()
	d.x.reqBody = body
	d.x.mu.Unlock()
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, err
	}
	d.x.mu.Lock()
	d.x.status, d.x.header = resp.StatusCode, resp.Header
	d.x.mu.Unlock()
	resp.Body = &teeBody{rc: resp.Body, x: d.x}
	if resp.StatusCode/100 == 2 {
		if err := checkContentType(resp, d.stream); err != nil {
			_ = resp.Body.Close()
			return nil, err
		}
	}
	return resp, nil
}

// ContentTypeError is a successful status whose body is not what the request asked for:
// an HTML page from a proxy or a login portal, say, where an event stream or JSON was
// expected. It is not retried: asking again gets the same page.
type ContentTypeError struct {
	Status      int
	ContentType string // as sent; "" when the header was missing
	Want        string // "an event stream" or "JSON"
	Start       string // the first bytes of the body
}

func (e *ContentTypeError) Error() string {
	ct := e.ContentType
	if ct == "" {
		ct = "no Content-Type"
	} else {
		ct = "Content-Type " + ct
	}
	return fmt.Sprintf("HTTP %d with %s is not %s; the body begins %q", e.Status, ct, e.Want, e.Start)
}

// checkContentType accepts a body of the expected kind, by its Content-Type or, when a
// server labels it wrongly, by its first bytes; it reads those bytes only then and puts
// them back.
func checkContentType(resp *http.Response, stream bool) error {
	ct := strings.ToLower(resp.Header.Get("Content-Type"))
	want, label := "application/json", "JSON"
	if stream {
		want, label = "text/event-stream", "an event stream"
	}
	if strings.HasPrefix(ct, want) || (!stream && strings.Contains(ct, "+json")) {
		return nil
	}
	head := make([]byte, 256)
	n, err := io.ReadAtLeast(resp.Body, head, 1)
	if err != nil && n == 0 {
		if errors.Is(err, io.EOF) && !stream {
			return nil // an empty body: let the decoder say what it expected
		}
		return fmt.Errorf("reading the response: %w", err)
	}
	head = head[:n]
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	start := bytes.TrimLeft(head, " \t\r\n")
	if stream && (bytes.HasPrefix(start, []byte("data:")) || bytes.HasPrefix(start, []byte(":")) || bytes.HasPrefix(start, []byte("event:"))) {
		return nil
	}
	if !stream && (bytes.HasPrefix(start, []byte("{")) || bytes.HasPrefix(start, []byte("["))) {
		return nil
	}
	return &ContentTypeError{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Want: label, Start: string(head)}
}

// maxResponse bounds what one try reads from the server (the raw body, event-stream
// framing included: about 150 bytes per streamed token), 64 MiB. No model's answer comes
// near it; past it the try fails with a *limits.SizeError instead of filling the memory.
var maxResponse int64 = 64 << 20

// teeBody copies everything read from the response into the exchange.
type teeBody struct {
	rc   io.ReadCloser
	x    *exchange
	read int64
}

func (t *teeBody) Read(p []byte) (int, error) {
	if t.read >= maxResponse {
		return 0, &limits.SizeError{What: "the response", Limit: maxResponse}
	}
	if rest := maxResponse - t.read; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := t.rc.Read(p)
	t.read += int64(n)
	if n > 0 {
		t.x.mu.Lock()
		t.x.raw.Write(p[:n])
		alive := t.x.alive
		t.x.mu.Unlock()
		if alive != nil {
			alive()
		}
	}
	return n, err
}

func (t *teeBody) Close() error { return t.rc.Close() }

// appendMembers inserts `"k":v` members before the closing brace of a JSON object.
func appendMembers(obj []byte, members []string) []byte {
	if len(members) == 0 {
		return obj
	}
	s := strings.TrimRight(string(obj), " \t\r\n")
	if !strings.HasSuffix(s, "}") {
		return obj
	}
	head := s[:len(s)-1]
	var b strings.Builder
	b.WriteString(head)
	empty := strings.TrimSpace(head) == "{"
	for _, m := range members {
		if !empty {
			b.WriteByte(',')
		}
		empty = false
		b.WriteString(m)
	}
	b.WriteByte('}')
	return []byte(b.String())
}

// messagesNull is the messages member go-openai writes for a request without messages.
// A JSON string cannot hold it (its quotes would be escaped), so its first occurrence is
// the member itself.
const messagesNull = `"messages":null`

// fillMessages puts the messages array msgs in place of the body's "messages":null.
func fillMessages(body, msgs []byte) ([]byte, error) {
	at := bytes.Index(body, []byte(messagesNull))
	if at < 0 {
		return nil, errors.New("building the request body: no messages member to fill in")
	}
	key := len(`"messages":`)
	out := make([]byte, 0, len(body)-len(messagesNull)+key+len(msgs))
	out = append(out, body[:at+key]...)
	out = append(out, msgs...)
	return append(out, body[at+len(messagesNull):]...), nil
}

// fillEmptyContent gives every message without a "content" key an empty one, right after
// its role. The body is re-encoded in its original key order; on any surprise it is
// returned unchanged.
func fillEmptyContent(body []byte) []byte {
	v, err := sig.DecodeJSON(body)
	if err != nil {
		return body
	}
	req, ok := v.(*sig.Map)
	if !ok {
		return body
	}
	raw, _ := req.Get("messages")
	msgs, ok := raw.([]any)
	if !ok {
		return body
	}
	for i, m := range msgs {
		msg, ok := m.(*sig.Map)
		if !ok || msg.Has("content") {
			continue
		}
		fixed := sig.NewMap()
		msg.Range(func(k string, v any) bool {
			fixed.Set(k, v)
			if k == "role" {
				fixed.Set("content", "")
			}
			return true
		})
		msgs[i] = fixed
	}
	req.Set("messages", msgs)
	return []byte(py.CompactJSON(req))
}
