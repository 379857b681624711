package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// extKey is the extension key core.Session.Save and SessionJSON write next to the Python
// keys (per-turn call records, times, explicit snapshots, child tips); Python ignores it.
const extKey = "sessionbench"

// metaKey holds the exported conversation's own fields (id, title, agent, status, ...).
const metaKey = "x_sessionbench"

// pythonKeys are the top-level keys dspy-session's Session.save writes, in its order.
var pythonKeys = []string{"version", "history_field", "max_turns", "max_stored_turns", "copy_mode", "exclude_fields",
	"history_input_fields", "history_policy", "turns", "initial_history", "l2_memory", "node_states"}

// SessionFile is a parsed dspy-session save file (version 1 SessionState or version 2
// Session.save), for imports and for checking exports round-trip.
type SessionFile struct {
	Version      int
	HistoryField string
	// Turns hold inputs, outputs and score; History is filled (Explicit) only when the file
	// had a snapshot for the turn; Calls, Started and Ended come from the sessionbench
	// extension when present.
	Turns          []*trace.Turn
	InitialHistory *sig.History
	L2Memory       string
	NodeStates     map[string]*SessionFile
	NodeOrder      []string // NodeStates keys in file order
	// ChildTurns[i] maps a child path to its number of turns after outer turn i (from the
	// extension's child_turns); nil when the file does not say.
	ChildTurns []map[string]int
	// HasCalls reports that the extension carried call records for at least one turn.
	HasCalls bool
	Meta     *FileMeta // the x_sessionbench block; nil when absent
	Doc      *sig.Map  // the whole document, extension keys included
}

// FileMeta is what an export recorded about its conversation.
type FileMeta struct {
	Conversation, Title, Agent, Status, Branch string
	Metadata                                   map[string]any
	AgentConfig                                json.RawMessage
}

// ParseError says what is wrong with a session file and where: a JSON path
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

// ParseSessionJSON reads a dspy-session save file, rejecting other versions as the
// library does ("Unsupported session state version"). It reads the whole file before
// returning, so a caller can validate before writing anything.
func ParseSessionJSON(data []byte) (*SessionFile, error) {
	v, err := sig.DecodeJSON(data)
	if err != nil {
		return nil, syntaxError(data, err)
	}
	doc, ok := v.(*sig.Map)
	if !ok {
		return nil, perr("$", "top level is %s, want an object", sig.KindName(v))
	}
	f, err := parseState(doc, "$")
	if err != nil {
		return nil, err
	}
	if err := parseExt(f, doc); err != nil {
		return nil, err
	}
	if err := parseMeta(f, doc); err != nil {
		return nil, err
	}
	return f, nil
}

// syntaxError locates a JSON decoding error by line and column.
func syntaxError(data []byte, err error) error {
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

func parseState(doc *sig.Map, where string) (*SessionFile, error) {
	f := &SessionFile{Doc: doc, HistoryField: "history", NodeStates: map[string]*SessionFile{}}
	ver, ok := doc.Get("version")
	switch ver {
	case int64(1), int64(2):
		f.Version = int(ver.(int64))
	default:
		if !ok {
			return nil, perr(where, "no \"version\" key (want 1 or 2)")
		}
		return nil, perr(where+".version", "unsupported session state version: %s (want 1 or 2)", sig.PyStr(ver))
	}
	if hf, ok := doc.Get("history_field"); ok {
		s, ok := hf.(string)
		if !ok || s == "" {
			return nil, perr(where+".history_field", "is %s, want a non-empty string", sig.KindName(hf))
		}
		f.HistoryField = s
	}
	rawTurns, _ := doc.Get("turns")
	list, ok := rawTurns.([]any)
	if rawTurns != nil && !ok {
		return nil, perr(where+".turns", "is %s, want a list", sig.KindName(rawTurns))
	}
	for i, rt := range list {
		at := fmt.Sprintf("%s.turns[%d]", where, i)
		t, err := parseTurn(rt, at, i)
		if err != nil {
			return nil, err
		}
		f.Turns = append(f.Turns, t)
	}
	if ih, _ := doc.Get("initial_history"); ih != nil {
		h, err := sig.HistoryFromValue(ih)
		if err != nil {
			return nil, perr(where+".initial_history", "%v", err)
		}
		f.InitialHistory = &h
	}
	if l2, _ := doc.Get("l2_memory"); l2 != nil {
		s, ok := l2.(string)
		if !ok {
			return nil, perr(where+".l2_memory", "is %s, want a string", sig.KindName(l2))
		}
		f.L2Memory = s
	}
	if ns, _ := doc.Get("node_states"); ns != nil {
		m, ok := ns.(*sig.Map)
		if !ok {
			return nil, perr(where+".node_states", "is %s, want an object", sig.KindName(ns))
		}
		var err error
		m.Range(func(path string, v any) bool {
			at := fmt.Sprintf("%s.node_states[%s]", where, strconv.Quote(path))
			sm, ok := v.(*sig.Map)
			if !ok {
				err = perr(at, "is %s, want an object", sig.KindName(v))
				return false
			}
			var child *SessionFile
			if child, err = parseState(sm, at); err != nil {
				return false
			}
			f.NodeStates[path] = child
			f.NodeOrder = append(f.NodeOrder, path)
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	return f, nil
}

func parseTurn(rt any, at string, i int) (*trace.Turn, error) {
	m, ok := rt.(*sig.Map)
	if !ok {
		return nil, perr(at, "is %s, want an object", sig.KindName(rt))
	}
	t := &trace.Turn{Index: i}
	if idx, ok := m.Get("index"); ok {
		n, ok := idx.(int64)
		if !ok {
			return nil, perr(at+".index", "is %s, want an int", sig.KindName(idx))
		}
		t.Index = int(n)
	}
	for _, k := range []string{"inputs", "outputs"} {
		raw, _ := m.Get(k)
		mm, ok := raw.(*sig.Map)
		if raw != nil && !ok {
			return nil, perr(at+"."+k, "is %s, want an object", sig.KindName(raw))
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
		return nil, perr(at+".score", "is %s, want a number or null", sig.KindName(s))
	}
	if hs, ok := m.Get("history_snapshot"); ok {
		h, err := sig.HistoryFromValue(hs)
		if err != nil {
			return nil, perr(at+".history_snapshot", "%v", err)
		}
		t.History, t.Explicit = h, true
	}
	return t, nil
}

// parseExt reads the sessionbench extension: per turn its times, an explicit snapshot,
// its call records and the children's turn counts.
func parseExt(f *SessionFile, doc *sig.Map) error {
	raw, ok := doc.Get(extKey)
	if !ok || raw == nil {
		return nil
	}
	at := "$." + extKey
	em, ok := raw.(*sig.Map)
	if !ok {
		return perr(at, "is %s, want an object", sig.KindName(raw))
	}
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
	for i, e := range list {
		ta := fmt.Sprintf("%s.turns[%d]", at, i)
		m, ok := e.(*sig.Map)
		if !ok {
			return perr(ta, "is %s, want an object", sig.KindName(e))
		}
		t := f.Turns[i]
		for _, k := range []string{"started", "ended"} {
			v, ok := m.Get(k)
			if !ok {
				continue
			}
			s, ok := v.(string)
			tm, err := time.Parse(time.RFC3339Nano, s)
			if !ok || err != nil {
				return perr(ta+"."+k, "is %s, want an RFC 3339 time", sig.PyJSON(v))
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
				return perr(ta+".history_snapshot", "%v", err)
			}
			t.History, t.Explicit = h, true
		}
		if cs, ok := m.Get("calls"); ok && cs != nil {
			if _, ok := cs.([]any); !ok {
				return perr(ta+".calls", "is %s, want a list", sig.KindName(cs))
			}
			var calls []*trace.Call
			if err := json.Unmarshal([]byte(sig.JSON(cs)), &calls); err != nil {
				return perr(ta+".calls", "not call records: %v", err)
			}
			for j, c := range calls {
				if c == nil {
					return perr(fmt.Sprintf("%s.calls[%d]", ta, j), "is null, want a call record")
				}
			}
			t.Calls = calls
			f.HasCalls = true
		}
		if ct, ok := m.Get("child_turns"); ok && ct != nil {
			cm, ok := ct.(*sig.Map)
			if !ok {
				return perr(ta+".child_turns", "is %s, want an object", sig.KindName(ct))
			}
			counts := map[string]int{}
			var err error
			cm.Range(func(p string, v any) bool {
				n, ok := v.(int64)
				if !ok || n < 0 {
					err = perr(fmt.Sprintf("%s.child_turns[%s]", ta, strconv.Quote(p)), "is %s, want a count", sig.PyJSON(v))
					return false
				}
				counts[p] = int(n)
				return true
			})
			if err != nil {
				return err
			}
			if f.ChildTurns == nil {
				f.ChildTurns = make([]map[string]int, len(f.Turns))
			}
			f.ChildTurns[i] = counts
		}
	}
	return nil
}

// parseMeta reads the x_sessionbench block an export writes.
func parseMeta(f *SessionFile, doc *sig.Map) error {
	raw, ok := doc.Get(metaKey)
	if !ok || raw == nil {
		return nil
	}
	at := "$." + metaKey
	m, ok := raw.(*sig.Map)
	if !ok {
		return perr(at, "is %s, want an object", sig.KindName(raw))
	}
	fm := &FileMeta{}
	for k, dst := range map[string]*string{"conversation": &fm.Conversation, "title": &fm.Title, "agent": &fm.Agent,
		"status": &fm.Status, "branch": &fm.Branch} {
		v, ok := m.Get(k)
		if !ok || v == nil {
			continue
		}
		s, ok := v.(string)
		if !ok {
			return perr(at+"."+k, "is %s, want a string", sig.KindName(v))
		}
		*dst = s
	}
	if v, ok := m.Get("metadata"); ok && v != nil {
		mm, ok := v.(*sig.Map)
		if !ok {
			return perr(at+".metadata", "is %s, want an object", sig.KindName(v))
		}
		fm.Metadata = map[string]any{}
		mm.Range(func(k string, v any) bool {
			fm.Metadata[k] = json.RawMessage(sig.JSON(v))
			return true
		})
	}
	if v, ok := m.Get("agent_config"); ok && v != nil {
		if _, ok := v.(*sig.Map); !ok {
			return perr(at+".agent_config", "is %s, want an object", sig.KindName(v))
		}
		fm.AgentConfig = json.RawMessage(sig.JSON(v))
	}
	f.Meta = fm
	return nil
}
