package export

import (
	"fmt"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// SessionFile is a parsed dspy-session save file (version 1 SessionState or version 2
// Session.save), for imports and for checking exports round-trip.
type SessionFile struct {
	Version        int
	HistoryField   string
	Turns          []*trace.Turn // History filled (Explicit) only when the file had snapshots
	InitialHistory *sig.History
	L2Memory       string
	NodeStates     map[string]*SessionFile
	Doc            *sig.Map // the whole document, extension keys included
}

// ParseSessionJSON reads a dspy-session save file, rejecting other versions as the
// library does ("Unsupported session state version").
func ParseSessionJSON(data []byte) (*SessionFile, error) {
	v, err := sig.DecodeJSON(data)
	if err != nil {
		return nil, fmt.Errorf("session file: %w", err)
	}
	doc, ok := v.(*sig.Map)
	if !ok {
		return nil, fmt.Errorf("session file: top level is %s, want an object", sig.KindName(v))
	}
	return parseState(doc, "")
}

func parseState(doc *sig.Map, where string) (*SessionFile, error) {
	f := &SessionFile{Doc: doc, HistoryField: "history", NodeStates: map[string]*SessionFile{}}
	ver, _ := doc.Get("version")
	switch ver {
	case int64(1), int64(2):
		f.Version = int(ver.(int64))
	default:
		return nil, fmt.Errorf("session file%s: unsupported session state version: %s", where, sig.PyStr(ver))
	}
	if hf, ok := doc.Get("history_field"); ok {
		s, ok := hf.(string)
		if !ok || s == "" {
			return nil, fmt.Errorf("session file%s: history_field is %s, want a non-empty string", where, sig.KindName(hf))
		}
		f.HistoryField = s
	}
	rawTurns, _ := doc.Get("turns")
	list, ok := rawTurns.([]any)
	if rawTurns != nil && !ok {
		return nil, fmt.Errorf("session file%s: turns is %s, want a list", where, sig.KindName(rawTurns))
	}
	for i, rt := range list {
		m, ok := rt.(*sig.Map)
		if !ok {
			return nil, fmt.Errorf("session file%s: turn %d is %s, want an object", where, i, sig.KindName(rt))
		}
		t := &trace.Turn{Index: i}
		for _, k := range []string{"inputs", "outputs"} {
			raw, _ := m.Get(k)
			mm, ok := raw.(*sig.Map)
			if raw != nil && !ok {
				return nil, fmt.Errorf("session file%s: turn %d %s is %s, want an object", where, i, k, sig.KindName(raw))
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
			return nil, fmt.Errorf("session file%s: turn %d score is %s, want a number or null", where, i, sig.KindName(s))
		}
		if hs, ok := m.Get("history_snapshot"); ok {
			h, err := sig.HistoryFromValue(hs)
			if err != nil {
				return nil, fmt.Errorf("session file%s: turn %d history_snapshot: %w", where, i, err)
			}
			t.History, t.Explicit = h, true
		}
		f.Turns = append(f.Turns, t)
	}
	if ih, _ := doc.Get("initial_history"); ih != nil {
		h, err := sig.HistoryFromValue(ih)
		if err != nil {
			return nil, fmt.Errorf("session file%s: initial_history: %w", where, err)
		}
		f.InitialHistory = &h
	}
	if l2, _ := doc.Get("l2_memory"); l2 != nil {
		s, ok := l2.(string)
		if !ok {
			return nil, fmt.Errorf("session file%s: l2_memory is %s, want a string", where, sig.KindName(l2))
		}
		f.L2Memory = s
	}
	if ns, _ := doc.Get("node_states"); ns != nil {
		m, ok := ns.(*sig.Map)
		if !ok {
			return nil, fmt.Errorf("session file%s: node_states is %s, want an object", where, sig.KindName(ns))
		}
		var err error
		m.Range(func(path string, v any) bool {
			sm, ok := v.(*sig.Map)
			if !ok {
				err = fmt.Errorf("session file%s: node_states[%q] is %s, want an object", where, path, sig.KindName(v))
				return false
			}
			f.NodeStates[path], err = parseState(sm, where+" node "+path)
			return err == nil
		})
		if err != nil {
			return nil, err
		}
	}
	return f, nil
}
