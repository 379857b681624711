package storage

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// A call's journal record is written as every inner call ends, on the turn's path: with
// encoding/json it cost 22 µs for a small call (BenchmarkCallRecord; 6 µs written
// directly), most of it re-scanning what the values' own MarshalJSON methods wrote
// (encoding/json compacts and escapes each one's output, and a history's maps twice).
// appendCallRecord writes the same bytes directly: the values' JSON once, with
// encoding/json's escaping of <, >, & and U+2028/U+2029 applied as it copies them
// (TestCallRecordBytes holds it to json.Marshal's output, field for field of
// trace.Call). The header and the end record are written directly too
// (appendHeaderRecord, appendEndRecord; TestHeaderAndEndRecordBytes): they are small,
// but the first record of each kind a process wrote through encoding/json built its
// encoders, 0.1 ms for the header and 0.7 ms for the end record (runCall's, trace.Call
// and all it holds), on the first turn's path.

// callRecordFields are trace.Call's JSON keys in the order appendCall writes them: a field
// added to trace.Call must be added to both (TestCallRecordFields).
var callRecordFields = []string{"id", "path", "predictor_type", "inputs", "outputs", "history", "adapter",
	"messages", "params", "completion", "usage", "model", "started", "latency", "error", "attempts", "score",
	"children", "raw_request", "raw_response", "recovered"}

// recordJSON is the JSON of a journal record: a call's, the header and the end record
// written directly (see above), any other by encoding/json.
func recordJSON(v any) ([]byte, error) {
	if h, ok := v.(*runHeader); ok && h != nil {
		return appendHeaderRecord(make([]byte, 0, 256+len(h.Inputs)), h)
	}
	rc, ok := v.(runCall)
	if ok && rc.End != nil && rc.Call == nil && rc.Parent == "" && rc.Base == nil && rc.RawMessages == "" {
		return appendEndRecord(make([]byte, 0, 128+len(rc.End.Inputs)+len(rc.End.Outputs)), rc.End)
	}
	if !ok || rc.End != nil || rc.Call == nil {
		return json.Marshal(v)
	}
	b, err := appendCallRecord(make([]byte, 0, 1024), rc)
	if errors.Is(err, errNotJSON) {
		return json.Marshal(v) // which says what it cannot write
	}
	return b, err
}

// errNotJSON is appendMap's when a map holds what JSON cannot (NaN, ±Inf: Python writes
// them, json.Marshal refuses them, and so a journal must not hold them).
var errNotJSON = errors.New("not JSON")

// appendCallRecord appends rc (a call record: Call set, End nil) as json.Marshal writes it.
func appendCallRecord(dst []byte, rc runCall) ([]byte, error) {
	dst = append(dst, '{')
	if rc.Parent != "" {
		dst = append(dst, `"parent":`...)
		dst = lm.AppendJSONString(dst, rc.Parent)
		dst = append(dst, ',')
	}
	dst = append(dst, `"call":`...)
	dst, err := appendCall(dst, rc.Call)
	if err != nil {
		return nil, err
	}
	if rc.Base != nil {
		dst = appendBase(append(dst, `,"base":`...), rc.Base)
	}
	if rc.RawMessages != "" {
		dst = lm.AppendJSONString(append(dst, `,"raw_messages":`...), rc.RawMessages)
	}
	return append(dst, '}'), nil
}

// appendCall appends c as encoding/json writes a *trace.Call.
func appendCall(dst []byte, c *trace.Call) ([]byte, error) {
	if c == nil {
		return append(dst, "null"...), nil
	}
	var err error
	str := func(key, s string, omitEmpty bool) {
		if omitEmpty && s == "" {
			return
		}
		dst = append(dst, ',', '"')
		dst = append(dst, key...)
		dst = append(dst, '"', ':')
		dst = lm.AppendJSONString(dst, s)
	}
	val := func(key string, v any) {
		if err != nil {
			return
		}
		dst = append(dst, ',', '"')
		dst = append(dst, key...)
		dst = append(dst, '"', ':')
		dst, err = appendMarshal(dst, v)
	}
	dst = append(dst, `{"id":`...)
	dst = lm.AppendJSONString(dst, c.ID)
	str("path", c.Path, false)
	str("predictor_type", c.PredictorType, false)
	var scratch bytes.Buffer
	if dst, err = appendMap(append(dst, `,"inputs":`...), &scratch, c.Inputs); err != nil {
		return nil, err
	}
	if dst, err = appendMap(append(dst, `,"outputs":`...), &scratch, c.Outputs); err != nil {
		return nil, err
	}
	dst = append(dst, `,"history":{"messages":[`...)
	for i, m := range c.History.Messages {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = appendMap(dst, &scratch, m); err != nil {
			return nil, err
		}
	}
	dst = append(dst, "]}"...)
	str("adapter", c.Adapter, false)
	dst = appendMessages(append(dst, `,"messages":`...), c.Messages)
	if p := c.Params; p.Model == "" && p.Temperature == nil && p.MaxTokens == nil && p.TopP == nil && len(p.Stop) == 0 && p.Seed == nil {
		dst = append(dst, `,"params":{}`...) // every field is omitted when empty
	} else {
		val("params", c.Params)
	}
	str("completion", c.Completion, false)
	dst = appendUsage(append(dst, `,"usage":`...), c.Usage)
	str("model", c.Model, true)
	started, terr := c.Started.MarshalJSON() // a quoted RFC 3339 time: nothing to escape
	if terr != nil {
		return nil, errNotJSON // a year JSON cannot hold: encoding/json says so
	}
	dst = append(append(dst, `,"started":`...), started...)
	dst = strconv.AppendInt(append(dst, `,"latency":`...), int64(c.Latency), 10)
	str("error", c.Error, true)
	if len(c.Tries) > 0 {
		dst = appendList(dst, "attempts", c.Tries, appendTry)
	}
	if c.Score != nil {
		val("score", c.Score)
	}
	if err != nil {
		return nil, err
	}
	if len(c.Children) > 0 {
		dst = append(dst, `,"children":[`...)
		for i, ch := range c.Children {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendCall(dst, ch); err != nil {
				return nil, err
			}
		}
		dst = append(dst, ']')
	}
	str("raw_request", c.RawRequest, true)
	str("raw_response", c.RawResponse, true)
	str("recovered", c.Recovered, true)
	return append(dst, '}'), nil
}

// appendBase appends b as json.Marshal writes it: directly, for encoding/json's first
// use in a process builds its encoder (about 50 µs, on the first call of a process's
// first turn, between the model's answer and the next request).
func appendBase(dst []byte, b *journalBase) []byte {
	dst = strconv.AppendInt(append(dst, `{"turn":`...), b.Turn, 10)
	dst = lm.AppendJSONString(append(dst, `,"call":`...), b.Call)
	dst = strconv.AppendInt(append(dst, `,"msgs":`...), int64(b.Msgs), 10)
	dst = strconv.AppendInt(append(dst, `,"hist":`...), int64(b.Hist), 10)
	for _, f := range [...]struct {
		key string
		n   int
	}{{"msgs_from", b.MsgsFrom}, {"msgs_len", b.MsgsLen}, {"hist_from", b.HistFrom}, {"hist_len", b.HistLen}} {
		if f.n != 0 {
			dst = strconv.AppendInt(append(append(append(dst, ',', '"'), f.key...), '"', ':'), int64(f.n), 10)
		}
	}
	return append(dst, '}')
}

// appendHeaderRecord appends h as json.Marshal writes it.
func appendHeaderRecord(dst []byte, h *runHeader) ([]byte, error) {
	num := func(key string, n int64) { dst = strconv.AppendInt(append(append(dst, key...), ':'), n, 10) }
	str := func(key, v string) { dst = lm.AppendJSONString(append(append(dst, key...), ':'), v) }
	num(`{"v"`, int64(h.V))
	num(`,"id"`, h.ID)
	str(`,"conversation"`, h.Conv)
	str(`,"branch"`, h.Branch)
	num(`,"branch_id"`, h.BranchID)
	if h.Parent != 0 {
		num(`,"parent"`, h.Parent)
	}
	num(`,"index"`, int64(h.Depth))
	str(`,"inputs"`, h.Inputs)
	if h.RetryOf != 0 {
		num(`,"retry_of"`, h.RetryOf)
	}
	if h.InPlace {
		dst = append(dst, `,"in_place":true`...)
	}
	num(`,"pid"`, int64(h.PID))
	str(`,"host"`, h.Host)
	started, err := h.Started.MarshalJSON()
	if err != nil {
		return json.Marshal(h) // a year JSON cannot hold: encoding/json says so
	}
	return append(append(append(dst, `,"started":`...), started...), '}'), nil
}

// appendEndRecord appends runCall{End: e} as json.Marshal writes it.
func appendEndRecord(dst []byte, e *runEnd) ([]byte, error) {
	started, err1 := e.Started.MarshalJSON()
	ended, err2 := e.Ended.MarshalJSON()
	if err1 != nil || err2 != nil {
		return json.Marshal(runCall{End: e}) // a year JSON cannot hold: encoding/json says so
	}
	dst = append(dst, `{"end":{`...)
	sep := ""
	if e.Outputs != "" {
		dst = lm.AppendJSONString(append(dst, `"outputs":`...), e.Outputs)
		sep = ","
	}
	if e.Inputs != "" {
		dst = lm.AppendJSONString(append(dst, sep+`"inputs":`...), e.Inputs)
		sep = ","
	}
	var err error
	if e.Score != nil {
		if dst, err = appendMarshal(append(dst, sep+`"score":`...), e.Score); err != nil {
			return nil, err
		}
		sep = ","
	}
	dst = append(append(dst, sep+`"started":`...), started...)
	dst = append(append(dst, `,"ended":`...), ended...)
	if len(e.Attempts) > 0 {
		if dst, err = appendMarshal(append(dst, `,"attempts":`...), e.Attempts); err != nil {
			return nil, err
		}
	}
	return append(dst, "}}"...), nil
}

// appendMarshal appends v by encoding/json: the rare values (set params, a score, a
// base) with no MarshalJSON of their own to re-scan.
func appendMarshal(dst []byte, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err // appendRecord says where
	}
	return append(dst, b...), nil
}

// appendMap appends m's JSON (sig.Map.MarshalJSON's: py.CompactJSON, written into
// scratch), escaped as encoding/json escapes a marshaler's output; null for nil, as
// encoding/json writes a nil pointer.
func appendMap(dst []byte, scratch *bytes.Buffer, m *sig.Map) ([]byte, error) {
	if m == nil {
		return append(dst, "null"...), nil
	}
	if !finite(m) {
		return nil, errNotJSON
	}
	scratch.Reset()
	py.WriteCompactJSON(scratch, m)
	return appendEscaped(dst, scratch.Bytes()), nil
}

// finite reports whether v (a map's value, as py.CompactJSON walks it) holds no NaN or
// infinite float.
func finite(v any) bool {
	switch t := v.(type) {
	case float64:
		return !math.IsNaN(t) && !math.IsInf(t, 0)
	case []any:
		for _, e := range t {
			if !finite(e) {
				return false
			}
		}
	case py.Model:
		if _, fields := t.PyModel(); fields != nil {
			ok := true
			fields.Range(func(_ string, e any) bool { ok = finite(e); return ok })
			return ok
		}
	case py.Dict: // a *sig.Map among them
		ok := true
		t.Range(func(_ string, e any) bool { ok = finite(e); return ok })
		return ok
	}
	return true
}

// appendMessages appends l as lm.MessageList.MarshalJSON writes it, escaped as
// encoding/json escapes it.
func appendMessages(dst []byte, l lm.MessageList) []byte {
	if l.IsNil() {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, m := range l.All() {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendMessage(dst, m)
	}
	return append(dst, ']')
}

// appendMessage appends m as encoding/json writes it: one with no extra keys directly,
// as its own MarshalJSON writes it ({"role","content"}, its strings then escaped).
func appendMessage(dst []byte, m lm.Message) []byte {
	if m.Extra != "" {
		if b, err := m.MarshalJSON(); err == nil {
			return appendEscaped(dst, b)
		}
	}
	dst = append(dst, `{"role":`...)
	dst = lm.AppendJSONString(dst, m.Role)
	dst = append(dst, `,"content":`...)
	dst = lm.AppendJSONString(dst, m.Content)
	return append(dst, '}')
}

// usageRecordFields and tryRecordFields are lm.Usage's and lm.Try's JSON keys in the
// order appendUsage and appendTry write them (TestCallRecordFields).
var (
	usageRecordFields = []string{"prompt_tokens", "completion_tokens", "cached_tokens", "total_tokens", "estimated"}
	tryRecordFields   = []string{"n", "status", "error", "wait", "latency", "retrying", "adapter", "messages", "completion"}
)

// appendUsage appends u as encoding/json writes it.
func appendUsage(dst []byte, u lm.Usage) []byte {
	dst = strconv.AppendInt(append(dst, `{"prompt_tokens":`...), int64(u.PromptTokens), 10)
	dst = strconv.AppendInt(append(dst, `,"completion_tokens":`...), int64(u.CompletionTokens), 10)
	if u.CachedTokens != 0 {
		dst = strconv.AppendInt(append(dst, `,"cached_tokens":`...), int64(u.CachedTokens), 10)
	}
	dst = strconv.AppendInt(append(dst, `,"total_tokens":`...), int64(u.TotalTokens), 10)
	if u.Estimated {
		dst = append(dst, `,"estimated":true`...)
	}
	return append(dst, '}')
}

// appendTry appends t as encoding/json writes it (every field but n omitted when empty).
func appendTry(dst []byte, t lm.Try) []byte {
	num := func(key string, v int64) {
		if v != 0 {
			dst = strconv.AppendInt(append(append(append(dst, ',', '"'), key...), '"', ':'), v, 10)
		}
	}
	str := func(key, v string) {
		if v != "" {
			dst = lm.AppendJSONString(append(append(append(dst, ',', '"'), key...), '"', ':'), v)
		}
	}
	dst = strconv.AppendInt(append(dst, `{"n":`...), int64(t.N), 10)
	num("status", int64(t.Status))
	str("error", t.Err)
	num("wait", int64(t.Wait))
	num("latency", int64(t.Latency))
	if t.Retrying {
		dst = append(dst, `,"retrying":true`...)
	}
	str("adapter", t.Adapter)
	if len(t.Messages) > 0 {
		dst = appendList(dst, "messages", t.Messages, appendMessage)
	}
	str("completion", t.Completion)
	return append(dst, '}')
}

// appendEscaped appends compact JSON text b with encoding/json's escaping of what a
// marshaler wrote: <, > and & as \u003c, \u003e, \u0026, U+2028 and U+2029 as \u2028 and
// \u2029 (in JSON text they can only be inside strings).
func appendEscaped(dst, b []byte) []byte {
	start := 0
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '<' || c == '>' || c == '&':
			dst = append(dst, b[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', "0123456789abcdef"[c>>4], "0123456789abcdef"[c&0xF])
			start = i + 1
		case c == 0xE2 && i+2 < len(b) && b[i+1] == 0x80 && b[i+2]&^1 == 0xA8:
			dst = append(dst, b[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', "89"[b[i+2]&1])
			i += 2
			start = i + 1
		}
	}
	return append(dst, b[start:]...)
}

// appendList appends `,"key":[...]`, each item by f.
func appendList[T any](dst []byte, key string, items []T, f func([]byte, T) []byte) []byte {
	dst = append(append(append(dst, ',', '"'), key...), `":[`...)
	for i, it := range items {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = f(dst, it)
	}
	return append(dst, ']')
}
