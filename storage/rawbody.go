package storage

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/sessionbench/sessionbench/core/lm"
)

// Raw HTTP bodies are kept byte for byte, but not paid for again: a request body repeats
// every message of the request, JSON-escaped, and a streamed response is hundreds of
// near-identical events. Every encoding is checked at write time by decoding it back; a
// body that does not come back exactly is stored as it is.

// Request body encodings (calls.raw_request_mode).
const (
	rawRequestNone     = 0
	rawRequestLiteral  = 1 // the body itself
	rawRequestTemplate = 2 // schema 1-6: literal segments and references to the messages
	// rawRequestMessages: the body is its prefix, the request's messages as a JSON array
	// (each {"role":...,"content":...}, as an OpenAI client writes them) and its suffix;
	// only the prefix and suffix are stored, the same for every call of a conversation
	// (schema 7).
	rawRequestMessages = 3
)

// Response body encodings (calls.raw_response_mode, schema 7).
const (
	rawResponseLiteral = 0
	rawResponseDeflate = 1 // DEFLATE-compressed (an SSE stream shrinks some 25 times)
)

// encodeRequestBody picks the smallest exact encoding of a request body.
func encodeRequestBody(raw string, list lm.MessageList) (int, string) {
	if raw == "" {
		return rawRequestNone, ""
	}
	msgs := list.Slice()
	if tpl, ok := encodeMessagesBody(raw, msgs); ok {
		return rawRequestMessages, tpl
	}
	bodies := make([]string, len(msgs))
	for i, m := range msgs {
		bodies[i] = m.Content
	}
	if tpl, ok := encodeRawRequest(raw, bodies); ok {
		return rawRequestTemplate, tpl
	}
	return rawRequestLiteral, raw
}

// decodeRequestBody rebuilds a request body stored in mode.
func decodeRequestBody(mode int, stored string, list lm.MessageList) (string, error) {
	var msgs []lm.Message
	if mode == rawRequestTemplate || mode == rawRequestMessages {
		msgs = list.Slice()
	}
	switch mode {
	case rawRequestNone:
		return "", nil
	case rawRequestLiteral:
		return stored, nil
	case rawRequestTemplate:
		bodies := make([]string, len(msgs))
		for i, m := range msgs {
			bodies[i] = m.Content
		}
		return decodeRawRequest(stored, bodies)
	case rawRequestMessages:
		return decodeMessagesBody(stored, msgs)
	}
	return "", fmt.Errorf("raw request: unknown encoding %d", mode)
}

// messagesKey opens the messages array in an OpenAI request body.
const messagesKey = `"messages":[`

// encodeMessagesBody stores raw as [prefix, suffix] around its messages array, when the
// array is exactly the messages as lm.AppendMessageJSON writes them.
func encodeMessagesBody(raw string, msgs []lm.Message) (string, bool) {
	at, end, ok := messagesArray(raw, msgs)
	if !ok {
		return "", false
	}
	prefix, suffix := raw[:at], raw[end:]
	b, err := json.Marshal([2]string{prefix, suffix})
	if err != nil {
		return "", false
	}
	// the array between them was compared message by message: what remains to check is
	// that the two parts come back as they were (JSON keeps any valid UTF-8)
	var back [2]string
	if err := json.Unmarshal(b, &back); err != nil || back[0] != prefix || back[1] != suffix {
		return "", false
	}
	return string(b), true
}

// messagesArray finds in raw the messages array msgs as lm.AppendMessageJSON writes them:
// raw[at:end] is "[" + the messages + "]", where at follows messagesKey's colon.
func messagesArray(raw string, msgs []lm.Message) (at, end int, ok bool) {
	at = strings.Index(raw, messagesKey)
	if at < 0 || len(msgs) == 0 {
		return 0, 0, false
	}
	at += len(messagesKey) - 1
	pos := at + 1
	var buf []byte
	for i, m := range msgs {
		if m.Extra != "" {
			return 0, 0, false // more keys than role and content: not this encoding
		}
		if i > 0 {
			if pos >= len(raw) || raw[pos] != ',' {
				return 0, 0, false
			}
			pos++
		}
		buf = lm.AppendMessageJSON(buf[:0], m)
		if !strings.HasPrefix(raw[pos:], string(buf)) {
			return 0, 0, false
		}
		pos += len(buf)
	}
	if pos >= len(raw) || raw[pos] != ']' {
		return 0, 0, false
	}
	return at, pos + 1, true
}

func decodeMessagesBody(stored string, msgs []lm.Message) (string, error) {
	var parts [2]string
	if err := json.Unmarshal([]byte(stored), &parts); err != nil {
		return "", fmt.Errorf("raw request: %w", err)
	}
	var b []byte
	b = append(b, parts[0]...)
	b = append(b, '[')
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = lm.AppendMessageJSON(b, m)
	}
	b = append(b, ']')
	b = append(b, parts[1]...)
	return string(b), nil
}

// encodeRawRequest returns the template of raw over msgs, or ok=false: literal segments
// and references to the messages (schema 1-6's encoding, still the fallback).
func encodeRawRequest(raw string, msgs []string) (string, bool) {
	var parts []any
	cur := 0
	for i, m := range msgs {
		if len(m) < 32 {
			continue // a short message is cheaper as a literal
		}
		for _, html := range []bool{true, false} {
			esc := jsonString(m, html)
			at := strings.Index(raw[cur:], esc)
			if at < 0 {
				continue
			}
			ref := i + 1
			if !html {
				ref = -ref
			}
			parts = append(parts, raw[cur:cur+at], ref)
			cur += at + len(esc)
			break
		}
	}
	if len(parts) == 0 {
		return "", false
	}
	parts = append(parts, raw[cur:])
	b, err := json.Marshal(parts)
	if err != nil {
		return "", false
	}
	tpl := string(b)
	if back, err := decodeRawRequest(tpl, msgs); err != nil || back != raw {
		return "", false
	}
	return tpl, true
}

// decodeRawRequest rebuilds a body from its template.
func decodeRawRequest(tpl string, msgs []string) (string, error) {
	dec := json.NewDecoder(strings.NewReader(tpl))
	dec.UseNumber()
	var parts []any
	if err := dec.Decode(&parts); err != nil {
		return "", fmt.Errorf("raw request template: %w", err)
	}
	var b strings.Builder
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			b.WriteString(v)
		case json.Number:
			n, err := v.Int64()
			if err != nil {
				return "", fmt.Errorf("raw request template: bad reference %s", v)
			}
			html := n > 0
			if n < 0 {
				n = -n
			}
			if n < 1 || int(n) > len(msgs) {
				return "", fmt.Errorf("raw request template: message %d out of range (%d messages)", n, len(msgs))
			}
			b.WriteString(jsonString(msgs[n-1], html))
		default:
			return "", fmt.Errorf("raw request template: unexpected part %T", p)
		}
	}
	return b.String(), nil
}

// jsonString is s as a JSON string literal, as encoding/json writes it (with or without
// its HTML escaping of <, > and &).
func jsonString(s string, html bool) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(s); err != nil {
		return ""
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

var (
	deflaters = sync.Pool{New: func() any { w, _ := flate.NewWriter(nil, flate.DefaultCompression); return w }}
	inflaters = sync.Pool{New: func() any { return flate.NewReader(nil) }}
)

// encodeResponseBody compresses a response body when that makes it smaller.
func encodeResponseBody(raw string) (int, string) {
	if len(raw) < 256 {
		return rawResponseLiteral, raw
	}
	var buf bytes.Buffer
	w := deflaters.Get().(*flate.Writer)
	defer deflaters.Put(w)
	w.Reset(&buf)
	if _, err := io.WriteString(w, raw); err != nil || w.Close() != nil || buf.Len() >= len(raw) {
		return rawResponseLiteral, raw
	}
	if back, err := decodeResponseBody(rawResponseDeflate, buf.String()); err != nil || back != raw {
		return rawResponseLiteral, raw
	}
	return rawResponseDeflate, buf.String()
}

// decodeResponseBody gives back a response body stored in mode.
func decodeResponseBody(mode int, stored string) (string, error) {
	switch mode {
	case rawResponseLiteral:
		return stored, nil
	case rawResponseDeflate:
		r := inflaters.Get().(io.ReadCloser)
		defer inflaters.Put(r)
		if err := r.(flate.Resetter).Reset(strings.NewReader(stored), nil); err != nil {
			return "", fmt.Errorf("raw response: %w", err)
		}
		b, err := io.ReadAll(r)
		if err != nil {
			return "", fmt.Errorf("raw response: %w", err)
		}
		return string(b), nil
	}
	return "", fmt.Errorf("raw response: unknown encoding %d", mode)
}
