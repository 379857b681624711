package export

import (
	"encoding/json"
	"fmt"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// Import is a parsed session file turned into what a conversation stores: its turns, in
// order, each with its call records, and metadata for what has no column.
type Import struct {
	Version int
	// Title, Agent and Status come from the file's x_sessionbench block ("" when absent).
	Title, Agent, Status string
	AgentConfig          json.RawMessage
	Turns                []*trace.Turn
	Metadata             map[string]any
	// Notes say what was mapped by a rule rather than read directly (e.g. how child turns
	// were assigned to outer turns), for the user to see.
	Notes []string
}

// BuildImport maps a parsed file onto turns:
//   - each top-level turn keeps inputs, outputs and score; a snapshot the file carries is
//     kept as explicit when it differs from the one the file's own settings would derive
//     (identical snapshots are derived again on load, as storage does for every turn);
//   - call records come from the sessionbench extension when present (files written by
//     core.Session.Save or SessionJSON);
//   - otherwise each child session of node_states becomes call records at its path (its
//     turns' inputs, outputs, snapshot and score), attached to the outer turns by the
//     extension's child_turns counts, or evenly when the child has k turns per outer turn;
//     a child whose turns cannot be attached is kept whole in metadata (ConfigMetaKey);
//   - non-default settings, unknown keys and the children's own memory go to metadata
//     ConfigMetaKey, which SessionJSON writes back.
func BuildImport(f *SessionFile) (*Import, error) {
	im := &Import{Version: f.Version, Metadata: map[string]any{}}
	if m := f.Meta; m != nil {
		im.Title, im.Agent, im.Status, im.AgentConfig = m.Title, m.Agent, m.Status, m.AgentConfig
		for k, v := range m.Metadata {
			im.Metadata[k] = v
		}
	}
	cfg := fileConfig(f)
	derive := newDeriver(f)
	for i, src := range f.Turns {
		t := src.Clone()
		t.Index = i
		if t.Inputs == nil {
			t.Inputs = sig.NewMap()
		}
		if t.Explicit && !extSnapshot(f, i) && historyEqual(t.History, derive.at(i)) {
			t.History, t.Explicit = sig.History{}, false
		}
		if len(t.Calls) == 0 {
			t.Calls = nil
		}
		im.Turns = append(im.Turns, t)
	}
	covered := map[string]bool{}
	for _, t := range im.Turns {
		trace.WalkCalls(t.Calls, func(c *trace.Call, _ int) { covered[c.Path] = true })
	}
	nodeMeta := sig.NewMap()
	for _, p := range f.NodeOrder {
		ns := f.NodeStates[p]
		if !covered[p] {
			owner, how, ok := attach(f, p, len(ns.Turns))
			if !ok {
				nodeMeta.Set(p, ns.Doc)
				im.Notes = append(im.Notes, fmt.Sprintf("node_states[%q]: %d turns cannot be matched to the %d outer turns; kept whole in metadata %q",
					p, len(ns.Turns), len(f.Turns), ConfigMetaKey))
				continue
			}
			for j, ct := range ns.Turns {
				t := im.Turns[owner[j]]
				c := &trace.Call{ID: fmt.Sprintf("imported.%s.%d", p, j), Path: p, Inputs: orEmpty(ct.Inputs), Outputs: orEmpty(ct.Outputs),
					History: ct.History, Score: ct.Score}
				t.Calls = append(t.Calls, c)
			}
			if len(ns.Turns) > 0 && how != "" {
				im.Notes = append(im.Notes, fmt.Sprintf("node_states[%q]: %d child turns attached %s", p, len(ns.Turns), how))
			}
		}
		if x := nodeExtras(ns); x.Len() > 0 {
			nodeMeta.Set(p, x)
		}
	}
	for i, t := range im.Turns {
		// Storage keys calls by id within a turn; a repeated id would silently drop a call.
		seen := map[string]bool{}
		var dup string
		trace.WalkCalls(t.Calls, func(c *trace.Call, _ int) {
			if c.ID != "" && seen[c.ID] && dup == "" {
				dup = c.ID
			}
			seen[c.ID] = true
		})
		if dup != "" {
			return nil, perr(fmt.Sprintf("$.%s.turns[%d].calls", extKey, i), "call id %q appears twice in the turn", dup)
		}
	}
	if nodeMeta.Len() > 0 {
		cfg.Set("node_states", nodeMeta)
	}
	if cfg.Len() > 0 {
		// Kept as JSON text: metadata objects come back with sorted keys, and the order of
		// fields in history messages decides the prompts they render to.
		im.Metadata[ConfigMetaKey] = sig.JSON(cfg)
	}
	return im, nil
}

// attach says which outer turn owns each of a child's n turns, and how that was decided
// ("" when the file said so exactly).
func attach(f *SessionFile, path string, n int) ([]int, string, bool) {
	outer := len(f.Turns)
	owner := make([]int, 0, n)
	if f.ChildTurns != nil {
		prev := 0
		for i, counts := range f.ChildTurns {
			c, ok := counts[path]
			if !ok || c < prev || c > n {
				return nil, "", false
			}
			for ; prev < c; prev++ {
				owner = append(owner, i)
			}
		}
		return owner, "", prev == n
	}
	if n == 0 {
		return owner, "", true
	}
	if outer == 0 || n%outer != 0 {
		return nil, "", false
	}
	k := n / outer
	for j := 0; j < n; j++ {
		owner = append(owner, j/k)
	}
	return owner, fmt.Sprintf("%d per outer turn, in order (the file does not record which turn made which call)", k), true
}

// nodeExtras is what a child state holds besides its turns, when not empty/default.
func nodeExtras(ns *SessionFile) *sig.Map {
	x := sig.NewMap()
	if v, _ := ns.Doc.Get("initial_history"); v != nil {
		x.Set("initial_history", v)
	}
	if ns.L2Memory != "" {
		x.Set("l2_memory", ns.L2Memory)
	}
	if v, ok := ns.Doc.Get("node_states"); ok {
		if m, ok := v.(*sig.Map); ok && m.Len() > 0 {
			x.Set("node_states", m)
		}
	}
	return x
}

// fileConfig collects the top-level settings that differ from what SessionJSON writes by
// default, the keys dspy-session does not define, and the extension's session options.
func fileConfig(f *SessionFile) *sig.Map {
	cfg := sig.NewMap()
	doc := f.Doc
	defaults := map[string]any{"history_field": "history", "max_turns": nil, "max_stored_turns": nil, "copy_mode": "deep",
		"exclude_fields": []any{f.HistoryField}, "history_input_fields": nil, "history_policy": "override",
		"initial_history": nil, "l2_memory": ""}
	for _, k := range pythonKeys {
		def, known := defaults[k]
		if !known {
			continue // version, turns, node_states
		}
		v, ok := doc.Get(k)
		if k == "history_input_fields" && !ok {
			v, ok = doc.Get("input_field_override") // the version 1 name
		}
		if ok && !sig.Equal(v, def) {
			cfg.Set(k, v)
		}
	}
	extra := sig.NewMap()
	known := map[string]bool{extKey: true, metaKey: true, "input_field_override": true}
	for _, k := range pythonKeys {
		known[k] = true
	}
	doc.Range(func(k string, v any) bool {
		if !known[k] {
			extra.Set(k, v)
		}
		return true
	})
	if extra.Len() > 0 {
		cfg.Set("extra", extra)
	}
	if e, ok := doc.Get(extKey); ok {
		if em, ok := e.(*sig.Map); ok {
			opts := sig.NewMap()
			em.Range(func(k string, v any) bool {
				if k != "turns" && k != "format" {
					opts.Set(k, v)
				}
				return true
			})
			if opts.Len() > 0 {
				cfg.Set("extension", opts)
			}
		}
	}
	return cfg
}

// deriver rebuilds the snapshots dspy-session would have recorded, from the file's own
// settings: seed, then each earlier turn's filtered inputs and outputs, windowed.
type deriver struct {
	f        *SessionFile
	exclude  map[string]bool
	allow    map[string]bool // nil: every input
	maxTurns int             // -1: no window
}

func newDeriver(f *SessionFile) *deriver {
	d := &deriver{f: f, exclude: map[string]bool{f.HistoryField: true}, maxTurns: -1}
	if l, ok := f.Doc.Get("exclude_fields"); ok {
		if xs, ok := l.([]any); ok {
			for _, x := range xs {
				d.exclude[sig.PyStr(x)] = true
			}
		}
	}
	l, ok := f.Doc.Get("history_input_fields")
	if !ok {
		l, ok = f.Doc.Get("input_field_override")
	}
	if xs, isList := l.([]any); ok && isList && len(xs) > 0 { // [] loads as None in Python
		d.allow = map[string]bool{}
		for _, x := range xs {
			d.allow[sig.PyStr(x)] = true
		}
	}
	if n, ok := f.Doc.Get("max_turns"); ok {
		if m, ok := n.(int64); ok {
			d.maxTurns = int(m)
		}
	}
	return d
}

func (d *deriver) at(i int) sig.History {
	var msgs []*sig.Map
	if d.f.InitialHistory != nil {
		msgs = append(msgs, d.f.InitialHistory.Messages...)
	}
	for _, t := range d.f.Turns[:i] {
		m := sig.NewMap()
		t.Inputs.Range(func(k string, v any) bool {
			if !d.exclude[k] && (d.allow == nil || d.allow[k]) {
				m.Set(k, v)
			}
			return true
		})
		t.Outputs.Range(func(k string, v any) bool {
			if !d.exclude[k] {
				m.Set(k, v)
			}
			return true
		})
		msgs = append(msgs, m)
	}
	if d.maxTurns >= 0 && len(msgs) > d.maxTurns {
		msgs = msgs[len(msgs)-d.maxTurns:]
	}
	return sig.History{Messages: msgs}
}

// extSnapshot reports that the extension marked turn i's snapshot explicit (kept as is).
func extSnapshot(f *SessionFile, i int) bool {
	e, _ := f.Doc.Get(extKey)
	em, _ := e.(*sig.Map)
	ts, _ := em.Get("turns")
	l, _ := ts.([]any)
	if i >= len(l) {
		return false
	}
	tm, _ := l[i].(*sig.Map)
	return tm.Has("history_snapshot")
}

func historyEqual(a, b sig.History) bool {
	if len(a.Messages) != len(b.Messages) {
		return false
	}
	for i := range a.Messages {
		if !a.Messages[i].Equal(b.Messages[i]) {
			return false
		}
	}
	return true
}
