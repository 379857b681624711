package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/recognize"
	"github.com/sessionbench/sessionbench/core/redact"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/llm"
)

// exchange is one request passing through: what is kept of it, and how it ended.
type exchange struct {
	s       *Server
	started time.Time
	caller  context.Context
	route   Route
	method  string
	path    string
	chat    bool
	keys    []string
	finish  func(ctx context.Context, c *trace.Call) error

	req, resp  capped
	status     int
	stream     bool
	sse        *streamReader
	err        error // the proxy's own failure (upstream unreachable, timed out)
	readErr    error // the upstream's answer broke off
	callerGone bool
	// The upstream's clocks: firstBytes stops the first-byte clock (nil once it did),
	// stall bounds the silences after.
	firstBytes func()
	stall      *llm.Watchdog
}

// alive is told of every read of the upstream's answer: the first stops the first-byte
// clock and starts the stall clock, the others restart it.
func (ex *exchange) alive() {
	if ex.firstBytes != nil {
		ex.firstBytes()
		ex.firstBytes = nil
	}
	ex.stall.Arm()
}

// copyBody passes the upstream's answer to the caller as it arrives, keeping a
// bounded copy.
func (ex *exchange) copyBody(ctx context.Context, w http.ResponseWriter, body io.Reader) {
	fl, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			ex.alive()
			ex.resp.Write(buf[:n])
			if ex.sse != nil {
				ex.sse.Write(buf[:n])
			}
			if _, werr := w.Write(buf[:n]); werr != nil {
				ex.callerGone = true
				return
			}
			if fl != nil {
				fl.Flush()
			}
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			switch {
			case ex.caller.Err() != nil:
				ex.callerGone = true
			case ex.s.timeout(ctx) != nil:
				ex.readErr = ex.s.timeout(ctx)
			default:
				ex.readErr = err
			}
			return
		}
	}
}

// fail answers the caller with the proxy's own error (the upstream gave none) and
// records the exchange.
func (ex *exchange) fail(w http.ResponseWriter, status int, err error) {
	ex.status, ex.err = status, err
	if !ex.callerGone {
		body := proxyError(ex.redact(err.Error()))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
		ex.resp.Write(body)
	}
	ex.done()
}

// done records a chat completion and logs the exchange.
func (ex *exchange) done() {
	var c *trace.Call
	if ex.chat {
		c = ex.call()
	}
	var recErr error
	if ex.finish != nil {
		// The caller may be gone; the record is still written.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ex.caller), time.Minute)
		recErr = ex.finish(ctx, c)
		cancel()
	}
	ex.s.logLine(ex, c, recErr)
}

// call builds the record of a chat completion.
func (ex *exchange) call() *trace.Call {
	lat := time.Since(ex.started)
	c := &trace.Call{Path: "chat", Started: ex.started, Latency: lat}
	// Everything recorded is read from redacted text: a key that reached a prompt or an
	// answer is not stored either (a no-op, and so byte for byte, when none did).
	reqBody := []byte(ex.redact(ex.req.buf.String()))
	respBody := []byte(ex.redact(ex.resp.buf.String()))
	c.RawRequest = string(reqBody) + cutNote(&ex.req)
	c.RawResponse = string(respBody) + cutNote(&ex.resp)

	var creq *chatRequest
	var msgs []lm.Message // the request's, as parsed
	var reqErr error
	if !ex.req.cut() {
		creq, msgs, c.Params, reqErr = parseChatRequest(reqBody)
		c.Messages = lm.MessagesOf(msgs)
	} else {
		reqErr = fmt.Errorf("the request body is larger than the %d bytes recorded", ex.req.max)
	}
	var rep reply
	var repErr error
	switch {
	case ex.sse != nil:
		rep = ex.sse.result()
		rep.text = ex.redact(rep.text)
	case ex.status >= 200 && ex.status < 300 && !ex.resp.cut():
		rep, repErr = parseResponse(respBody)
	}
	c.Completion, c.Usage, c.Model = rep.text, rep.usage, rep.model
	if c.Model == "" {
		c.Model = c.Params.Model
	}
	switch {
	case ex.err != nil:
		c.Error = ex.err.Error()
	case ex.callerGone:
		c.Error = "the caller closed the connection before the answer was complete"
	case ex.status >= 400:
		c.Error = fmt.Sprintf("upstream answered %d %s", ex.status, http.StatusText(ex.status))
		if msg := upstreamMessage(respBody); msg != "" {
			c.Error += ": " + msg
		}
	case ex.readErr != nil:
		c.Error = "the upstream's answer broke off: " + ex.readErr.Error()
	case rep.err != "":
		c.Error = "the upstream sent an error: " + rep.err
	case ex.sse != nil && !ex.sse.done:
		c.Error = "the stream ended before its end marker (data: [DONE])"
	case ex.sse != nil && ex.sse.cut:
		c.Error = fmt.Sprintf("the streamed text is longer than the %d bytes recorded", ex.resp.max)
	case repErr != nil:
		c.Error = repErr.Error()
	}
	c.Error = ex.redact(c.Error)
	if c.Error == "" && !rep.hasUsage && len(msgs) > 0 {
		// The server reported none (a stream without include_usage, many local servers):
		// counted here and marked estimated, as for the engine's own calls.
		c.Usage = llm.EstimateUsage(c.Model, msgs, c.Completion)
	}
	c.Tries = []lm.Try{{N: 1, Status: ex.status, Err: c.Error, Latency: lat}}
	if ex.callerGone {
		// What the caller saw is moot; 499 (nginx's "client closed request") says it left.
		c.Tries[0].Status = 499
	}

	if creq != nil && creq.plain() {
		if r := recognize.Parse(msgs); r.Adapter != "" {
			c.Adapter, c.Inputs, c.History = r.Adapter, r.Inputs, r.History
			c.Path, c.PredictorType = PathOf(r.Signature), predictorType(r.Signature)
			c.Recovered = trace.RecoveredInexact
			if r.Exact {
				c.Recovered = trace.RecoveredExact
			}
			if c.Error == "" {
				out, err := r.Outputs(c.Completion)
				if err != nil {
					c.Error = "the completion does not parse as the request's outputs: " + err.Error()
					c.Tries[0].Err = c.Error
				} else {
					c.Outputs = out
				}
			}
			return c
		}
	}
	c.Recovered, c.PredictorType = trace.RecoveredNone, "LM"
	c.Inputs = sig.NewMap()
	if reqErr == nil {
		for i := len(msgs) - 1; i >= 0; i-- {
			if msgs[i].Role == "user" {
				c.Inputs.Set("user", msgs[i].Content)
				break
			}
		}
	}
	if c.Error == "" {
		c.Outputs = sig.NewMap("assistant", c.Completion)
	}
	return c
}

// upstreamMessage is the message of an error body (the OpenAI error object's message,
// else the start of the body).
func upstreamMessage(body []byte) string {
	if r, err := parseResponse(body); err == nil && r.err != "" {
		return r.err
	}
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func cutNote(c *capped) string {
	if !c.cut() {
		return ""
	}
	return fmt.Sprintf("\n[sessionbench: recording cut at %d of %d bytes]", c.buf.Len(), c.total)
}

// redact keeps key text out of what is recorded and logged.
func (ex *exchange) redact(s string) string {
	for _, k := range ex.keys {
		s = strings.ReplaceAll(s, k, redact.Mark)
	}
	return redact.String(s) // and every configured key and sk-shaped token
}

// PathOf names a recognised predictor by its fields, as DSPy's signature strings do
// ("question, context -> answer"); History fields are left out.
func PathOf(s *sig.Signature) string {
	var ins, outs []string
	for _, f := range s.Inputs {
		if !f.Type.IsHistory() {
			ins = append(ins, f.Name)
		}
	}
	for _, f := range s.Outputs {
		outs = append(outs, f.Name)
	}
	return strings.Join(ins, ", ") + " -> " + strings.Join(outs, ", ")
}

// predictorType tells ChainOfThought (its first output is DSPy's reasoning field) from
// Predict.
func predictorType(s *sig.Signature) string {
	if len(s.Outputs) > 1 && s.Outputs[0].Name == "reasoning" {
		return "ChainOfThought"
	}
	return "Predict"
}
