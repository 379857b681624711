package savefile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sessionbench/sessionbench/core/limits"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// ParseError says what is wrong with a save file and where: a JSON path
// ("$.turns[3].inputs") or, for malformed JSON, a line and column.
type ParseError struct {
	Path         string // JSON path; "" for syntax errors
	Line, Column int    // 1-based; 0 when the error is not positional
	Msg          string
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("session file: line %d, column %d: %s", e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("session file: %s: %s", e.Path, e.Msg)
}

func perr(path, format string, args ...any) error {
	return &ParseError{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// Decode reads a save file (version 1 or 2; other versions are refused as dspy-session
// refuses them, "Unsupported session state version"), checking every key it knows.
func Decode(data []byte) (*File, error) {
	v, err := sig.DecodeJSON(data)
	if err != nil {
		return nil, syntaxError(data, err)
	}
	doc, ok := v.(*sig.Map)
	if !ok {
		return nil, perr("$", "top level is %s, want an object", sig.KindName(v))
	}
	return DecodeValue(doc, "$")
}

// DecodeValue reads a decoded file object; at is its JSON path in error messages.
func DecodeValue(doc *sig.Map, at string) (*File, error) {
	f := &File{}
	st, version, err := decodeState(doc, at)
	if err != nil {
		return nil, err
	}
	f.Version, f.State = version, *st
	if f.Settings, err = DecodeSettings(doc, at); err != nil {
		return nil, err
	}
	known := map[string]bool{ExtKey: true, MetaKey: true, "input_field_override": true}
	for _, k := range PythonKeys {
		known[k] = true
	}
	doc.Range(func(k string, v any) bool {
		if !known[k] {
			if f.Extra == nil {
				f.Extra = sig.NewMap()
			}
			f.Extra.Set(k, v)
		}
		return true
	})
	if err := decodeExt(f, doc, at); err != nil {
		return nil, err
	}
	if err := decodeMeta(f, doc, at); err != nil {
		return nil, err
	}
	return f, nil
}

// syntaxError locates a JSON decoding error by line and column.
func syntaxError(data []byte, err error) error {
	if de := (*limits.DepthError)(nil); errors.As(err, &de) {
		return &ParseError{Line: de.Line, Column: de.Column, Msg: fmt.Sprintf("nested deeper than %d levels (the limit for any input)", limits.Depth)}
	}
	var probe any
	jerr := json.Unmarshal(data, &probe)
	var se *json.SyntaxError
	var off int64 = -1
	msg := err.Error()
	switch {
	case errors.As(jerr, &se):
		off, msg = se.Offset, se.Error()
	case jerr != nil:
		msg = jerr.Error()
	default:
		var se2 *json.SyntaxError
		if errors.As(err, &se2) {
			off = se2.Offset
		}
	}
	if off < 0 {
		return &ParseError{Path: "$", Msg: "not valid JSON: " + msg}
	}
	line, col := lineCol(data, off)
	return &ParseError{Line: line, Column: col, Msg: "not valid JSON: " + msg}
}

// lineCol turns a byte offset into a 1-based line and column (in bytes). The JSON
// decoder's offset points just past the offending byte.
func lineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off > 0 {
		off--
	}
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// DecodeSettings reads the settings keys of a file object (also of a partial one, such as
// the settings an import keeps in conversation metadata).
func DecodeSettings(doc *sig.Map, at string) (Settings, error) {
	var s Settings
	if hf, ok := doc.Get("history_field"); ok {
		str, ok := hf.(string)
		if !ok || str == "" {
			return s, perr(at+".history_field", "is %s, want a non-empty string", sig.KindName(hf))
		}
		s.HistoryField = str
	}
	for _, k := range []struct {
		key string
		dst **int
	}{{"max_turns", &s.MaxTurns}, {"max_stored_turns", &s.MaxStoredTurns}} {
		switch v, _ := doc.Get(k.key); n := v.(type) {
		case nil:
		case int64:
			i := int(n)
			*k.dst = &i
		default:
			return s, perr(at+"."+k.key, "is %s, want an int or null", sig.KindName(v))
		}
	}
	for _, k := range []struct {
		key string
		dst *string
	}{{"copy_mode", &s.CopyMode}, {"history_policy", &s.HistoryPolicy}} {
		v, ok := doc.Get(k.key)
		if !ok || v == nil {
			continue
		}
		str, ok := v.(string)
		if !ok {
			return s, perr(at+"."+k.key, "is %s, want a string", sig.KindName(v))
		}
		*k.dst = str
	}
	var err error
	if s.ExcludeFields, err = stringList(doc, "exclude_fields", at); err != nil {
		return s, err
	}
	key := "history_input_fields"
	if !doc.Has(key) {
		key = "input_field_override" // the version 1 name
	}
	if s.HistoryInputFields, err = stringList(doc, key, at); err != nil {
		return s, err
	}
	return s, nil
}

// stringList reads a list of strings; nil when the key is absent or null.
func stringList(doc *sig.Map, key, at string) ([]string, error) {
	v, _ := doc.Get(key)
	if v == nil {
		return nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, perr(at+"."+key, "is %s, want a list of strings", sig.KindName(v))
	}
	out := make([]string, len(l))
	for i, e := range l {
		s, ok := e.(string)
		if !ok {
			return nil, perr(fmt.Sprintf("%s.%s[%d]", at, key, i), "is %s, want a string", sig.KindName(e))
		}
		out[i] = s
	}
	return out, nil
}

func decodeState(doc *sig.Map, where string) (*State, int, error) {
	st := &State{Raw: doc}
	version := 0
	ver, ok := doc.Get("version")
	switch ver {
	case int64(1), int64(2):
		version = int(ver.(int64))
	default:
		if !ok {
			return nil, 0, perr(where, "no \"version\" key (want 1 or 2)")
		}
		return nil, 0, perr(where+".version", "unsupported session state version: %s (want 1 or 2)", py.Text(ver))
	}
	rawTurns, _ := doc.Get("turns")
	list, ok := rawTurns.([]any)
	if rawTurns != nil && !ok {
		return nil, 0, perr(where+".turns", "is %s, want a list", sig.KindName(rawTurns))
	}
	for i, rt := range list {
		e, err := decodeEntry(rt, fmt.Sprintf("%s.turns[%d]", where, i), i)
		if err != nil {
			return nil, 0, err
		}
		st.Turns = append(st.Turns, e)
	}
	if ih, _ := doc.Get("initial_history"); ih != nil {
		h, err := sig.HistoryFromValue(ih)
		if err != nil {
			return nil, 0, perr(where+".initial_history", "%v", err)
		}
		st.InitialHistory = &h
	}
	if l2, _ := doc.Get("l2_memory"); l2 != nil {
		s, ok := l2.(string)
		if !ok {
			return nil, 0, perr(where+".l2_memory", "is %s, want a string", sig.KindName(l2))
		}
		st.L2Memory = s
	}
	if ns, _ := doc.Get("node_states"); ns != nil {
		m, ok := ns.(*sig.Map)
		if !ok {
			return nil, 0, perr(where+".node_states", "is %s, want an object", sig.KindName(ns))
		}
		var err error
		m.Range(func(path string, v any) bool {
			at := fmt.Sprintf("%s.node_states[%s]", where, strconv.Quote(path))
			sm, ok := v.(*sig.Map)
			if !ok {
				err = perr(at, "is %s, want an object", sig.KindName(v))
				return false
			}
			var child *State
			if child, _, err = decodeState(sm, at); err != nil {
				return false
			}
			st.Nodes = append(st.Nodes, Node{Path: path, State: child})
			return true
		})
		if err != nil {
			return nil, 0, err
		}
	}
	return st, version, nil
}

func decodeEntry(rt any, at string, i int) (Entry, error) {
	m, ok := rt.(*sig.Map)
	if !ok {
		return Entry{}, perr(at, "is %s, want an object", sig.KindName(rt))
	}
	t := &trace.Turn{Index: i}
	if idx, ok := m.Get("index"); ok {
		n, ok := idx.(int64)
		if !ok {
			return Entry{}, perr(at+".index", "is %s, want an int", sig.KindName(idx))
		}
		t.Index = int(n)
	}
	for _, k := range []string{"inputs", "outputs"} {
		raw, _ := m.Get(k)
		mm, ok := raw.(*sig.Map)
		if raw != nil && !ok {
			return Entry{}, perr(at+"."+k, "is %s, want an object", sig.KindName(raw))
		}
		if k == "inputs" {
			t.Inputs = mm
		} else {
			t.Outputs = mm
		}
	}
	switch s, _ := m.Get("score"); sv := s.(type) {
	case nil:
	case float64:
		t.Score = &sv
	case int64:
		f := float64(sv)
		t.Score = &f
	default:
		return Entry{}, perr(at+".score", "is %s, want a number or null", sig.KindName(s))
	}
	e := Entry{Turn: t}
	if hs, ok := m.Get("history_snapshot"); ok {
		h, err := sig.HistoryFromValue(hs)
		if err != nil {
			return Entry{}, perr(at+".history_snapshot", "%v", err)
		}
		e.Snapshot = &h
	}
	return e, nil
}

// decodeExt reads the extension: per turn its times, an explicit snapshot, its call
// records and the children's turn counts; the session options beside them.
func decodeExt(f *File, doc *sig.Map, where string) error {
	raw, ok := doc.Get(ExtKey)
	if !ok || raw == nil {
		return nil
	}
	at := where + "." + ExtKey
	em, ok := raw.(*sig.Map)
	if !ok {
		return perr(at, "is %s, want an object", sig.KindName(raw))
	}
	em.Range(func(k string, v any) bool {
		if k != "turns" && k != "format" && k != "shared" {
			if f.Options == nil {
				f.Options = sig.NewMap()
			}
			f.Options.Set(k, v)
		}
		return true
	})
	rt, _ := em.Get("turns")
	if rt == nil {
		return nil
	}
	list, ok := rt.([]any)
	if !ok {
		return perr(at+".turns", "is %s, want a list", sig.KindName(rt))
	}
	if len(list) != len(f.Turns) {
		return perr(at+".turns", "has %d entries for %d turns", len(list), len(f.Turns))
	}
	table := newSharedTable(nil)
	if sv, ok := em.Get("shared"); ok && sv != nil {
		values, ok := sv.([]any)
		if !ok {
			return perr(at+".shared", "is %s, want a list", sig.KindName(sv))
		}
		table = newSharedTable(values)
	}
	for i, e := range list {
		if err := decodeTurnExt(f, i, e, fmt.Sprintf("%s.turns[%d]", at, i), table); err != nil {
			return err
		}
	}
	return nil
}

func decodeTurnExt(f *File, i int, e any, at string, table *sharedTable) error {
	m, ok := e.(*sig.Map)
	if !ok {
		return perr(at, "is %s, want an object", sig.KindName(e))
	}
	entry := &f.Turns[i]
	t := entry.Turn
	for _, k := range []string{"started", "ended"} {
		v, ok := m.Get(k)
		if !ok {
			continue
		}
		s, ok := v.(string)
		tm, err := time.Parse(time.RFC3339Nano, s)
		if !ok || err != nil {
			return perr(at+"."+k, "is %s, want an RFC 3339 time", py.JSON(v))
		}
		if tm.Year() <= 1 {
			tm = time.Time{} // a zero time written out
		}
		if k == "started" {
			t.Started = tm
		} else {
			t.Ended = tm
		}
	}
	if hs, ok := m.Get("history_snapshot"); ok {
		h, err := sig.HistoryFromValue(hs)
		if err != nil {
			return perr(at+".history_snapshot", "%v", err)
		}
		t.History, t.Explicit = h, true
	}
	if cs, ok := m.Get("calls"); ok && cs != nil {
		calls, err := decodeCalls(cs, at+".calls")
		if err != nil {
			return err
		}
		if err := table.attach(cs, calls, at+".calls"); err != nil {
			return err
		}
		t.Calls = calls
		f.HasCalls = true
	}
	if as, ok := m.Get("attempts"); ok && as != nil {
		attempts, err := decodeAttempts(as, at+".attempts")
		if err != nil {
			return err
		}
		t.Attempts = attempts
	}
	if ct, ok := m.Get("child_turns"); ok && ct != nil {
		cm, ok := ct.(*sig.Map)
		if !ok {
			return perr(at+".child_turns", "is %s, want an object", sig.KindName(ct))
		}
		counts := []ChildCount{}
		var err error
		cm.Range(func(p string, v any) bool {
			n, ok := v.(int64)
			if !ok || n < 0 {
				err = perr(fmt.Sprintf("%s.child_turns[%s]", at, strconv.Quote(p)), "is %s, want a count", py.JSON(v))
				return false
			}
			counts = append(counts, ChildCount{Path: p, Turns: int(n)})
			return true
		})
		if err != nil {
			return err
		}
		entry.ChildTurns = counts
	}
	return nil
}

// decodeCalls reads call records (their JSON form).
func decodeCalls(v any, at string) ([]*trace.Call, error) {
	if _, ok := v.([]any); !ok {
		return nil, perr(at, "is %s, want a list", sig.KindName(v))
	}
	var calls []*trace.Call
	if err := json.Unmarshal([]byte(py.CompactJSON(stripRefs(v))), &calls); err != nil {
		return nil, perr(at, "not call records: %v", err)
	}
	for j, c := range calls {
		if c == nil {
			return nil, perr(fmt.Sprintf("%s[%d]", at, j), "is null, want a call record")
		}
	}
	return calls, nil
}

// decodeAttempts reads attempt records (their JSON form).
func decodeAttempts(v any, at string) ([]*trace.Attempt, error) {
	if _, ok := v.([]any); !ok {
		return nil, perr(at, "is %s, want a list", sig.KindName(v))
	}
	var attempts []*trace.Attempt
	if err := json.Unmarshal([]byte(py.CompactJSON(v)), &attempts); err != nil {
		return nil, perr(at, "not attempt records: %v", err)
	}
	for j, a := range attempts {
		if a == nil {
			return nil, perr(fmt.Sprintf("%s[%d]", at, j), "is null, want an attempt record")
		}
	}
	return attempts, nil
}

// decodeMeta reads the x_sessionbench block an export writes.
func decodeMeta(f *File, doc *sig.Map, where string) error {
	raw, ok := doc.Get(MetaKey)
	if !ok || raw == nil {
		return nil
	}
	at := where + "." + MetaKey
	m, ok := raw.(*sig.Map)
	if !ok {
		return perr(at, "is %s, want an object", sig.KindName(raw))
	}
	fm := &Meta{}
	for _, k := range []struct {
		key string
		dst *string
	}{{"conversation", &fm.Conversation}, {"title", &fm.Title}, {"agent", &fm.Agent}, {"status", &fm.Status}, {"branch", &fm.Branch}} {
		v, ok := m.Get(k.key)
		if !ok || v == nil {
			continue
		}
		s, ok := v.(string)
		if !ok {
			return perr(at+"."+k.key, "is %s, want a string", sig.KindName(v))
		}
		*k.dst = s
	}
	if v, ok := m.Get("metadata"); ok && v != nil {
		mm, ok := v.(*sig.Map)
		if !ok {
			return perr(at+".metadata", "is %s, want an object", sig.KindName(v))
		}
		fm.Metadata = map[string]any{}
		mm.Range(func(k string, v any) bool {
			fm.Metadata[k] = json.RawMessage(py.CompactJSON(v))
			return true
		})
	}
	if v, ok := m.Get("agent_config"); ok && v != nil {
		if _, ok := v.(*sig.Map); !ok {
			return perr(at+".agent_config", "is %s, want an object", sig.KindName(v))
		}
		fm.AgentConfig = json.RawMessage(py.CompactJSON(v))
	}
	f.Meta = fm
	return nil
}
