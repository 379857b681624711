package core

import (
	"fmt"
	"os"
	"time"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// saveExt is the top-level key holding what dspy-session's format has no place for
// (call records, explicit snapshots, turn times, child tips per turn). Python's loader
// ignores it, so a saved file stays loadable there.
const saveExt = "sessionbench"

// SaveState returns the session as a dspy-session version 2 document (with node_states
// for children and our extension key).
func (s *Session) SaveState() *sig.Map {
	s.mu.Lock()
	defer s.mu.Unlock()
	nodes := s.visible()
	turns := make([]any, len(nodes))
	ext := make([]any, len(nodes))
	for i, nd := range nodes {
		t := s.turnCopy(nd)
		turns[i] = sig.NewMap("index", int64(t.Index), "inputs", orEmpty(t.Inputs), "outputs", orEmpty(t.Outputs), "score", scoreValue(t.Score))
		e := sig.NewMap("started", t.Started.Format(time.RFC3339Nano), "ended", t.Ended.Format(time.RFC3339Nano))
		if t.Explicit {
			e.Set("history_snapshot", t.History)
		}
		if len(t.Calls) > 0 {
			e.Set("calls", callsValue(t.Calls))
		}
		if len(nd.kids) > 0 {
			k := sig.NewMap()
			for _, ch := range s.children {
				if ch.session != nil {
					k.Set(ch.path, int64(depthOf(nd.kids[ch.path])))
				}
			}
			e.Set("child_turns", k)
		}
		ext[i] = e
	}
	nodeStates := sig.NewMap()
	for _, ch := range s.children {
		if ch.session != nil && ch.kind != childSession {
			nodeStates.Set(ch.path, ch.session.nodeState())
		}
	}
	var initial any
	if len(s.seed.Messages) > 0 || s.opts.InitialHistory != nil {
		initial = s.seed.Clone()
	}
	return sig.NewMap(
		"version", int64(2),
		"history_field", s.opts.HistoryField,
		"max_turns", intValue(s.opts.MaxTurns),
		"max_stored_turns", intValue(s.opts.MaxStoredTurns),
		"copy_mode", "deep",
		"exclude_fields", stringsValue(s.opts.ExcludeFields),
		"history_input_fields", nilOrStrings(s.opts.HistoryInputFields),
		"history_policy", string(s.opts.HistoryPolicy),
		"turns", turns,
		"initial_history", initial,
		"l2_memory", "",
		"node_states", nodeStates,
		saveExt, sig.NewMap("format", int64(1), "turns", ext,
			"recursive", string(s.opts.Recursive), "nested_sessions", string(s.opts.NestedSessions),
			"inner_scope", string(s.opts.InnerScope), "record", string(s.opts.Record)),
	)
}

// nodeState is a child's state as dspy-session's SessionState.to_dict (version 1), which
// keeps each turn's snapshot.
func (s *Session) nodeState() *sig.Map {
	s.mu.Lock()
	defer s.mu.Unlock()
	nodes := s.visible()
	turns := make([]any, len(nodes))
	for i, nd := range nodes {
		t := s.turnCopy(nd)
		turns[i] = sig.NewMap("index", int64(t.Index), "inputs", orEmpty(t.Inputs), "outputs", orEmpty(t.Outputs),
			"history_snapshot", t.History, "score", scoreValue(t.Score))
	}
	var initial any
	if len(s.seed.Messages) > 0 {
		initial = s.seed.Clone()
	}
	return sig.NewMap("version", int64(1), "turns", turns, "initial_history", initial, "l2_memory", "", "node_states", sig.NewMap())
}

// Save writes the session to path as indented JSON.
func (s *Session) Save(path string) error {
	data := sig.PyJSONIndent(s.SaveState(), 2)
	if err := os.WriteFile(path, []byte(data+"\n"), 0o600); err != nil {
		return fmt.Errorf("save session %s: %w", s.name, err)
	}
	return nil
}

// LoadFile reads a session saved by Save (or by dspy-session, versions 1 and 2).
func LoadFile(path string, module Module, opts Options) (*Session, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load session: %w", err)
	}
	s, err := Load(data, module, opts)
	if err != nil {
		return nil, fmt.Errorf("load session %s: %w", path, err)
	}
	return s, nil
}

// Load rebuilds a session from a saved document. The file's history settings apply where
// opts leaves them unset; code-only options (recursion, hooks, sink) come from opts.
// Snapshots are rebuilt from the loaded settings, except explicit ones, which are kept.
func Load(data []byte, module Module, opts Options) (*Session, error) {
	v, err := sig.DecodeJSON(data)
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	doc, ok := v.(*sig.Map)
	if !ok {
		return nil, fmt.Errorf("top level is %s, want an object", sig.KindName(v))
	}
	version, _ := doc.Get("version")
	if version != int64(1) && version != int64(2) {
		//lint:ignore ST1005 the Python library's exact message, which callers match
		return nil, fmt.Errorf("Unsupported session state version: %s", sig.PyStr(version))
	}
	if err := applyFileOptions(doc, &opts); err != nil {
		return nil, err
	}
	s, err := Sessionify(module, opts)
	if err != nil {
		return nil, err
	}
	if raw, ok := doc.Get("initial_history"); ok && raw != nil {
		h, err := sig.HistoryFromValue(raw)
		if err != nil {
			return nil, fmt.Errorf("initial_history: %w", err)
		}
		s.seed = h
	}
	// Children first, so each outer turn can point at their tips.
	if raw, ok := doc.Get("node_states"); ok && raw != nil {
		states, ok := raw.(*sig.Map)
		if !ok {
			return nil, fmt.Errorf("node_states is %s, want an object", sig.KindName(raw))
		}
		for _, ch := range s.children {
			st, ok := states.Get(ch.path)
			if !ok || ch.session == nil || ch.kind == childSession {
				continue
			}
			if err := ch.session.loadNodeState(st); err != nil {
				return nil, fmt.Errorf("node_states[%q]: %w", ch.path, err)
			}
		}
	}
	var ext []any
	if e, ok := doc.Get(saveExt); ok {
		if em, ok := e.(*sig.Map); ok {
			ext, _ = mapGet[[]any](em, "turns")
		}
	}
	turns, err := listOf(doc, "turns")
	if err != nil {
		return nil, err
	}
	for i, raw := range turns {
		tm, ok := raw.(*sig.Map)
		if !ok {
			return nil, fmt.Errorf("turns[%d] is %s, want an object", i, sig.KindName(raw))
		}
		t, err := turnFromMap(tm)
		if err != nil {
			return nil, fmt.Errorf("turns[%d]: %w", i, err)
		}
		var kids map[string]*node
		if i < len(ext) {
			if em, ok := ext[i].(*sig.Map); ok {
				if err := applyTurnExt(t, em); err != nil {
					return nil, fmt.Errorf("%s.turns[%d]: %w", saveExt, i, err)
				}
				kids = s.kidsAt(em)
			}
		}
		if !t.Explicit {
			t.History = s.buildHistory(nil)
		}
		s.pushNode(t, kids)
	}
	return s, nil
}

// pushNode appends a loaded turn without hooks (caller owns s exclusively).
func (s *Session) pushNode(t *trace.Turn, kids map[string]*node) {
	depth := 1
	if s.tip != nil {
		depth = s.tip.depth + 1
	}
	if kids == nil {
		kids = s.childTips()
	}
	s.tip = &node{turn: t, parent: s.tip, depth: depth, msg: s.message(t.Inputs, t.Outputs), kids: kids}
}

// kidsAt finds each child's node at the depth recorded for an outer turn.
func (s *Session) kidsAt(em *sig.Map) map[string]*node {
	ct, ok := mapGet[*sig.Map](em, "child_turns")
	if !ok {
		return nil
	}
	kids := map[string]*node{}
	for _, ch := range s.children {
		if ch.session == nil {
			continue
		}
		d, _ := mapGet[int64](ct, ch.path)
		nd := ch.session.tip
		for nd != nil && int64(nd.depth) > d {
			nd = nd.parent
		}
		kids[ch.path] = nd
	}
	return kids
}

func (s *Session) loadNodeState(raw any) error {
	st, ok := raw.(*sig.Map)
	if !ok {
		return fmt.Errorf("want an object, got %s", sig.KindName(raw))
	}
	if ih, ok := st.Get("initial_history"); ok && ih != nil {
		h, err := sig.HistoryFromValue(ih)
		if err != nil {
			return fmt.Errorf("initial_history: %w", err)
		}
		s.seed = h
	}
	turns, err := listOf(st, "turns")
	if err != nil {
		return err
	}
	for i, r := range turns {
		tm, ok := r.(*sig.Map)
		if !ok {
			return fmt.Errorf("turns[%d] is %s, want an object", i, sig.KindName(r))
		}
		t, err := turnFromMap(tm)
		if err != nil {
			return fmt.Errorf("turns[%d]: %w", i, err)
		}
		if hs, ok := tm.Get("history_snapshot"); ok && hs != nil {
			if t.History, err = sig.HistoryFromValue(hs); err != nil {
				return fmt.Errorf("turns[%d].history_snapshot: %w", i, err)
			}
		} else {
			t.History = s.buildHistory(nil)
		}
		s.pushNode(t, nil)
	}
	return nil
}

func turnFromMap(tm *sig.Map) (*trace.Turn, error) {
	t := &trace.Turn{Inputs: sig.NewMap(), Outputs: sig.NewMap()}
	if idx, ok := tm.Get("index"); ok {
		n, ok := idx.(int64)
		if !ok {
			return nil, fmt.Errorf("index is %s, want an int", sig.KindName(idx))
		}
		t.Index = int(n)
	}
	for _, k := range []string{"inputs", "outputs"} {
		raw, ok := tm.Get(k)
		if !ok || raw == nil {
			continue
		}
		m, ok := raw.(*sig.Map)
		if !ok {
			return nil, fmt.Errorf("%s is %s, want an object", k, sig.KindName(raw))
		}
		if k == "inputs" {
			t.Inputs = m
		} else {
			t.Outputs = m
		}
	}
	if sc, ok := tm.Get("score"); ok && sc != nil {
		switch x := sc.(type) {
		case float64:
			t.Score = &x
		case int64:
			f := float64(x)
			t.Score = &f
		default:
			return nil, fmt.Errorf("score is %s, want a number", sig.KindName(sc))
		}
	}
	return t, nil
}

func applyTurnExt(t *trace.Turn, em *sig.Map) error {
	if s, ok := mapGet[string](em, "started"); ok {
		t.Started, _ = time.Parse(time.RFC3339Nano, s)
	}
	if s, ok := mapGet[string](em, "ended"); ok {
		t.Ended, _ = time.Parse(time.RFC3339Nano, s)
	}
	if hs, ok := em.Get("history_snapshot"); ok && hs != nil {
		h, err := sig.HistoryFromValue(hs)
		if err != nil {
			return fmt.Errorf("history_snapshot: %w", err)
		}
		t.History, t.Explicit = h, true
	}
	if cs, ok := em.Get("calls"); ok && cs != nil {
		calls, err := callsFromValue(cs)
		if err != nil {
			return fmt.Errorf("calls: %w", err)
		}
		t.Calls = calls
	}
	return nil
}

// applyFileOptions fills unset history options from a saved document.
func applyFileOptions(doc *sig.Map, o *Options) error {
	if o.HistoryField == "" {
		o.HistoryField, _ = mapGet[string](doc, "history_field")
	}
	if o.MaxTurns == nil {
		if n, ok := mapGet[int64](doc, "max_turns"); ok {
			o.MaxTurns = Int(int(n))
		}
	}
	if o.MaxStoredTurns == nil {
		if n, ok := mapGet[int64](doc, "max_stored_turns"); ok {
			o.MaxStoredTurns = Int(int(n))
		}
	}
	if o.ExcludeFields == nil {
		if l, ok := mapGet[[]any](doc, "exclude_fields"); ok {
			o.ExcludeFields = anyStrings(l)
		}
	}
	if o.HistoryInputFields == nil {
		l, ok := mapGet[[]any](doc, "history_input_fields")
		if !ok {
			l, ok = mapGet[[]any](doc, "input_field_override") // version 1 name
		}
		if ok {
			o.HistoryInputFields = anyStrings(l)
		}
	}
	if o.HistoryPolicy == "" {
		if p, ok := mapGet[string](doc, "history_policy"); ok {
			o.HistoryPolicy = HistoryPolicy(p)
		}
	}
	if e, ok := doc.Get(saveExt); ok {
		if em, ok := e.(*sig.Map); ok {
			if o.Recursive == "" {
				r, _ := mapGet[string](em, "recursive")
				o.Recursive = Recursion(r)
			}
			if o.Record == "" {
				r, _ := mapGet[string](em, "record")
				o.Record = RecordMode(r)
			}
		}
	}
	return nil
}

func mapGet[T any](m *sig.Map, k string) (T, bool) {
	v, ok := m.Get(k)
	t, ok2 := v.(T)
	return t, ok && ok2
}

func listOf(m *sig.Map, k string) ([]any, error) {
	raw, ok := m.Get(k)
	if !ok || raw == nil {
		return nil, nil
	}
	l, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("%s is %s, want a list", k, sig.KindName(raw))
	}
	return l, nil
}

func anyStrings(l []any) []string {
	out := make([]string, 0, len(l))
	for _, v := range l {
		out = append(out, sig.PyStr(v))
	}
	return out
}

func orEmpty(m *sig.Map) *sig.Map {
	if m == nil {
		return sig.NewMap()
	}
	return m
}

func scoreValue(s *float64) any {
	if s == nil {
		return nil
	}
	return *s
}

func intValue(n *int) any {
	if n == nil {
		return nil
	}
	return int64(*n)
}

func stringsValue(l []string) []any {
	out := make([]any, len(l))
	for i, s := range l {
		out[i] = s
	}
	return out
}

func nilOrStrings(l []string) any {
	if l == nil {
		return nil
	}
	return stringsValue(l)
}

func depthOf(n *node) int {
	if n == nil {
		return 0
	}
	return n.depth
}
