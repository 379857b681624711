package llm

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/sessionbench/sessionbench/core/limits"
	"github.com/sessionbench/sessionbench/core/redact"
)

// RetryPolicy says how often and how patiently a failed try is repeated. Tries
// are retried on HTTP 429, 500, 502, 503 and 504, on connection resets before any text
// arrived, on connect timeouts and on a missed first token; never after text was
// delivered (a mid-stream failure is reported with its partial text instead).
type RetryPolicy struct {
	MaxRetries int           // retries after the first try; 0 means none
	BaseDelay  time.Duration // backoff before retry n is BaseDelay*2^(n-1) with jitter
	MaxDelay   time.Duration // cap of the computed backoff
	// MaxRetryAfter is the longest server-requested wait (Retry-After) honoured; a server
	// asking for more ends the call at once rather than hanging it.
	MaxRetryAfter time.Duration
}

// DefaultRetry is the policy used when none is configured.
func DefaultRetry() RetryPolicy {
	return RetryPolicy{MaxRetries: 4, BaseDelay: 500 * time.Millisecond, MaxDelay: 30 * time.Second, MaxRetryAfter: 2 * time.Minute}
}

// backoff is the jittered delay before retry n (1-based): half the exponential delay
// fixed, half random, so concurrent clients spread out but never retry instantly.
func (p RetryPolicy) backoff(n int) time.Duration {
	d := p.BaseDelay
	for i := 1; i < n && d < p.MaxDelay; i++ {
		d *= 2
	}
	if p.MaxDelay > 0 && d > p.MaxDelay {
		d = p.MaxDelay
	}
	if d <= 0 {
		return 0
	}
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(d-half)+1))
}

// retryAfter reads Retry-After (seconds or an HTTP date) or OpenAI's retry-after-ms.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if h == nil {
		return 0, false
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d, true
		}
		return 0, true
	}
	return 0, false
}

// Error is a failed try or call against an OpenAI-compatible server: what went wrong
// in the server's own words plus a hint at the likely cause.
type Error struct {
	Status    int    // HTTP status; 0 when the failure was below HTTP
	Message   string // the server's message, or a description of the failure
	Hint      string // likely cause and what to check ("" when there is nothing to add)
	Retryable bool
	Err       error // the underlying error, when there is one
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Status != 0 {
		fmt.Fprintf(&b, "HTTP %d %s", e.Status, http.StatusText(e.Status))
		if e.Message != "" {
			b.WriteString(": ")
		}
	}
	b.WriteString(e.Message)
	if e.Hint != "" {
		b.WriteString(" (hint: " + e.Hint + ")")
	}
	// A server may quote the key it refused: the message is shown, logged and stored.
	return redact.String(b.String())
}

func (e *Error) Unwrap() error { return e.Err }

var (
	errFirstToken = errors.New("first-token timeout")
	errStall      = errors.New("stall timeout")
	errTotal      = errors.New("total timeout")
)

// target describes where calls go, for hints.
type target struct {
	baseURL string
	model   string
	keyEnv  string
	hasKey  bool
}

// classifyHTTP turns an error status into an Error with the server's message and a hint.
func classifyHTTP(status int, body []byte, err error, t target) *Error {
	e := &Error{Status: status, Message: serverMessage(body, err), Err: err}
	switch status {
	case 429:
		// OpenAI answers 429 both for rate limits (wait and retry) and for an exhausted
		// quota (retrying cannot help).
		if strings.Contains(strings.ToLower(e.Message), "quota") {
			e.Hint = "the account behind this key has no quota or credit left"
		} else {
			e.Retryable = true
		}
	case 500, 502, 503, 504:
		e.Retryable = true
	case 401, 403:
		switch {
		case !t.hasKey && t.keyEnv != "":
			e.Hint = "no API key: $" + t.keyEnv + " is not set"
		case !t.hasKey:
			e.Hint = "no API key configured for this provider"
		case t.keyEnv != "":
			e.Hint = "wrong API key for " + t.baseURL + "? it was read from $" + t.keyEnv
		default:
			e.Hint = "wrong API key for " + t.baseURL + "?"
		}
	case 404:
		if strings.Contains(strings.ToLower(e.Message), "model") {
			e.Hint = fmt.Sprintf("unknown model %q at this server; 'sessionbench models' lists the configured ones", t.model)
		} else {
			e.Hint = fmt.Sprintf("wrong base URL? requests go to %s/chat/completions (most servers want a URL ending in /v1)", strings.TrimRight(t.baseURL, "/"))
		}
	case 400, 422:
		e.Hint = "the server rejected the request; a parameter (temperature, max_tokens, stop, seed) may be unsupported by this model"
	}
	return e
}

// serverMessage extracts {"error":{"message":...}} (or a bare body) from a failure.
func serverMessage(body []byte, err error) string {
	var api *openai.APIError
	if errors.As(err, &api) && api.Message != "" {
		return api.Message
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	if s != "" {
		return s
	}
	if err != nil {
		return err.Error()
	}
	return "no message"
}

// classifyTransport describes a failure below HTTP (or inside a stream).
func classifyTransport(err error, t target) *Error {
	e := &Error{Message: err.Error(), Err: err}
	var dns *net.DNSError
	var cert *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var recHdr tls.RecordHeaderError
	var netErr net.Error
	var api *openai.APIError
	var ct *ContentTypeError
	var big *limits.SizeError
	switch {
	case errors.As(err, &big):
		e.Message = big.Error()
		e.Hint = "no model answers at this length; is " + t.baseURL + " sending something else?"
	case errors.As(err, &ct):
		e.Message = "the server answered, but not as an OpenAI-compatible API: " + ct.Error()
		e.Hint = "is " + t.baseURL + " the API itself (most end in /v1)? a proxy or login page may be answering instead"
	case errors.Is(err, errNoChoices):
		e.Hint = "the model produced nothing to use; try again or another model"
	case errors.As(err, &api):
		e.Message = "the server reported an error: " + api.Message
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Message = "connection refused"
		e.Hint = "nothing is listening at " + t.baseURL + "; is the server running?"
	case errors.As(err, &dns):
		e.Message = "cannot resolve host " + dns.Name
		e.Hint = "check the base URL " + t.baseURL
	case errors.As(err, &cert), errors.As(err, &unknownAuth), errors.As(err, &hostErr):
		e.Hint = "TLS certificate problem at " + t.baseURL
	case errors.As(err, &recHdr):
		e.Hint = "the server does not speak TLS; try http:// instead of https:// in the base URL"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, syscall.EPIPE):
		e.Message = "connection reset: " + err.Error()
		e.Retryable = true
	case errors.As(err, &netErr) && netErr.Timeout():
		e.Message = "connect timeout: " + err.Error()
		e.Retryable = true
	}
	return e
}

// cancelled reports whether the caller's ctx ended, and the error to return if so.
func cancelled(ctx context.Context, name string) error {
	err := ctx.Err()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: the caller's deadline passed: %w", name, err)
	}
	return fmt.Errorf("%s: call cancelled: %w", name, err)
}
