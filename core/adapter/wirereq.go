package adapter

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

// WireRequest is the JSON object the `wire` command reads:
//
//	{"adapter":"chat","signature":{"name":"…","instructions":"…",
//	  "inputs":[{"name":"question","desc":"","type":"str"}, …],
//	  "outputs":[{"name":"intent","desc":"…","type":"str","constraints":{"max_length":500}}]},
//	 "demos":[{…}], "inputs":{…}, "completion":"…"}
//
// Field order is the order given; an absent "inputs" key means no inputs; empty or missing
// instructions mean DSPy's default; the history input may be {"messages":[…]}, a bare list
// or null (empty).
type WireRequest struct {
	Adapter    string
	Signature  *sig.Signature
	Demos      []*sig.Map
	Inputs     *sig.Map
	Completion string
	HasCompl   bool
	Raw        []byte // the request as read, handed to the adapter's Factory
}

// WireError says what is wrong and where (a JSON path such as signature.outputs[0].type).
type WireError struct {
	Path string
	Err  error
}

func (e *WireError) Error() string {
	if e.Path == "" {
		return e.Err.Error()
	}
	return e.Path + ": " + e.Err.Error()
}

func (e *WireError) Unwrap() error { return e.Err }

func werr(path string, format string, a ...any) error {
	return &WireError{Path: path, Err: fmt.Errorf(format, a...)}
}

// DecodeWireRequest reads and checks a wire request. Values keep their JSON kinds
// (2.0 stays a float) and key order.
func DecodeWireRequest(data []byte) (*WireRequest, error) {
	v, err := sig.DecodeJSON(data)
	if err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return nil, &WireError{Err: fmt.Errorf("bad JSON at byte %d: %w", se.Offset, err)}
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			return nil, &WireError{Err: errors.New("bad JSON: unexpected end of input (want one JSON object)")}
		}
		return nil, &WireError{Err: fmt.Errorf("bad JSON: %w", err)}
	}
	top, ok := v.(*sig.Map)
	if !ok {
		return nil, &WireError{Err: fmt.Errorf("bad JSON: want an object, got %s", sig.KindName(v))}
	}
	req := &WireRequest{Adapter: "chat", Raw: data, Inputs: sig.NewMap()}
	if a, ok := top.Get("adapter"); ok {
		s, ok := a.(string)
		if !ok {
			return nil, werr("adapter", "want a string, got %s", sig.KindName(a))
		}
		req.Adapter = s
	}
	regMu.RLock()
	_, known := registry[req.Adapter]
	regMu.RUnlock()
	if !known {
		return nil, werr("adapter", "unknown adapter %q (known: %s)", req.Adapter, joinNames(Names()))
	}
	rawSig, ok := top.Get("signature")
	if !ok {
		return nil, werr("signature", "missing")
	}
	if req.Signature, err = DecodeSignature(rawSig, "signature"); err != nil {
		return nil, err
	}
	if d, ok := top.Get("demos"); ok && d != nil {
		list, ok := d.([]any)
		if !ok {
			return nil, werr("demos", "want a list of objects, got %s", sig.KindName(d))
		}
		for i, e := range list {
			m, ok := e.(*sig.Map)
			if !ok {
				return nil, werr(fmt.Sprintf("demos[%d]", i), "want an object, got %s", sig.KindName(e))
			}
			if err := historyToValue(req.Signature, m, fmt.Sprintf("demos[%d]", i)); err != nil {
				return nil, err
			}
			req.Demos = append(req.Demos, m)
		}
	}
	if in, ok := top.Get("inputs"); ok && in != nil {
		m, ok := in.(*sig.Map)
		if !ok {
			return nil, werr("inputs", "want an object, got %s", sig.KindName(in))
		}
		if err := historyToValue(req.Signature, m, "inputs"); err != nil {
			return nil, err
		}
		req.Inputs = m
	}
	if c, ok := top.Get("completion"); ok {
		s, ok := c.(string)
		if !ok {
			return nil, werr("completion", "want a string, got %s", sig.KindName(c))
		}
		req.Completion, req.HasCompl = s, true
	}
	return req, nil
}

// historyToValue turns the JSON form of History-typed inputs into sig.History.
func historyToValue(s *sig.Signature, m *sig.Map, path string) error {
	for _, f := range s.Inputs {
		if !typ(f).IsHistory() {
			continue
		}
		raw, ok := m.Get(f.Name)
		if !ok || raw == nil {
			continue // absent stays absent; null stays null (an empty history)
		}
		h, err := sig.HistoryFromValue(raw)
		if err != nil {
			return werr(path+"."+f.Name, "%w", err)
		}
		m.Set(f.Name, h)
	}
	return nil
}

// DecodeSignature reads a signature object ({"name","instructions","inputs","outputs"});
// path prefixes error locations.
func DecodeSignature(v any, path string) (*sig.Signature, error) {
	m, ok := v.(*sig.Map)
	if !ok {
		return nil, werr(path, "want an object, got %s", sig.KindName(v))
	}
	str := func(key string) (string, error) {
		x, ok := m.Get(key)
		if !ok || x == nil {
			return "", nil
		}
		s, ok := x.(string)
		if !ok {
			return "", werr(path+"."+key, "want a string, got %s", sig.KindName(x))
		}
		return s, nil
	}
	name, err := str("name")
	if err != nil {
		return nil, err
	}
	instr, err := str("instructions")
	if err != nil {
		return nil, err
	}
	ins, err := decodeFields(m, "inputs", path)
	if err != nil {
		return nil, err
	}
	outs, err := decodeFields(m, "outputs", path)
	if err != nil {
		return nil, err
	}
	seen := map[string]string{}
	for i, f := range append(append([]sig.Field(nil), ins...), outs...) {
		where := fmt.Sprintf("%s.inputs[%d]", path, i)
		if i >= len(ins) {
			where = fmt.Sprintf("%s.outputs[%d]", path, i-len(ins))
		}
		if prev, dup := seen[f.Name]; dup {
			return nil, werr(where+".name", "field %q is already defined at %s", f.Name, prev)
		}
		seen[f.Name] = where
	}
	return sig.New(name, instr, ins, outs), nil
}

func decodeFields(m *sig.Map, key, path string) ([]sig.Field, error) {
	raw, ok := m.Get(key)
	if !ok || raw == nil {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, werr(path+"."+key, "want a list of fields, got %s", sig.KindName(raw))
	}
	fields := make([]sig.Field, 0, len(list))
	for i, e := range list {
		at := path + "." + key + "[" + strconv.Itoa(i) + "]"
		fm, ok := e.(*sig.Map)
		if !ok {
			return nil, werr(at, "want an object, got %s", sig.KindName(e))
		}
		f := sig.Field{Type: sig.TStr}
		name, _ := fm.Get("name")
		f.Name, _ = name.(string)
		if !validFieldName(f.Name) {
			return nil, werr(at+".name", "want a field name (letters, digits, _), got %s", py.Repr(name))
		}
		if d, ok := fm.Get("desc"); ok && d != nil {
			if f.Desc, ok = d.(string); !ok {
				return nil, werr(at+".desc", "want a string, got %s", sig.KindName(d))
			}
		}
		if t, ok := fm.Get("type"); ok && t != nil {
			ts, ok := t.(string)
			if !ok {
				return nil, werr(at+".type", "want a string, got %s", sig.KindName(t))
			}
			pt, err := sig.ParseType(ts)
			if err != nil {
				return nil, &WireError{Path: at + ".type", Err: err}
			}
			f.Type = pt
		}
		if c, ok := fm.Get("constraints"); ok && c != nil {
			cm, ok := c.(*sig.Map)
			if !ok {
				return nil, werr(at+".constraints", "want an object, got %s", sig.KindName(c))
			}
			f.Constraints = cm
			if err := f.CheckConstraints(); err != nil {
				return nil, &WireError{Path: at + ".constraints", Err: err}
			}
		}
		fields = append(fields, f)
	}
	return fields, nil
}

func validFieldName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || isWordRune(r)) || (i == 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return !strings.ContainsAny(s, " ")
}
