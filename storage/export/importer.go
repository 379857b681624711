package export

import (
	"encoding/json"
	"fmt"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/savefile"
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

// BuildImport maps a decoded file onto turns:
//   - each top-level turn keeps inputs, outputs and score; a snapshot the file carries is
//     kept as explicit when the extension marked it so, or when it differs from the one
//     the engine's history builder derives with the file's own settings (identical
//     snapshots are derived again on load, as storage does for every turn);
//   - call records come from the sessionbench extension when present (files written by
//     core.Session.Save or SessionJSON);
//   - otherwise each child session of node_states becomes call records at its path (its
//     turns' inputs, outputs, snapshot and score), attached to the outer turns by the
//     extension's child_turns counts, or evenly when the child has k turns per outer turn;
//     a child whose turns cannot be attached is kept whole in metadata (ConfigMetaKey);
//   - non-default settings, unknown keys and the children's own memory go to metadata
//     ConfigMetaKey, which SessionJSON writes back.
func BuildImport(f *savefile.File) (*Import, error) {
	im := &Import{Version: f.Version, Metadata: map[string]any{}}
	if m := f.Meta; m != nil {
		im.Title, im.Agent, im.Status, im.AgentConfig = m.Title, m.Agent, m.Status, m.AgentConfig
		for k, v := range m.Metadata {
			im.Metadata[k] = v
		}
	}
	cfg := fileConfig(f)
	seed := sig.History{}
	if f.InitialHistory != nil {
		seed = *f.InitialHistory
	}
	fs := f.Settings
	derive, err := core.NewHistoryBuilder(core.Options{HistoryField: fs.HistoryField, MaxTurns: fs.MaxTurns, MaxStoredTurns: fs.MaxStoredTurns,
		ExcludeFields: fs.ExcludeFields, HistoryInputFields: fs.HistoryInputFields}, seed)
	if err != nil {
		return nil, perr("$", "%v", err)
	}
	for i, e := range f.Turns {
		t := e.Turn.Clone()
		t.Index = i
		if t.Inputs == nil {
			t.Inputs = sig.NewMap()
		}
		if !t.Explicit && e.Snapshot != nil && !historyEqual(*e.Snapshot, derive.Snapshot(nil)) {
			t.History, t.Explicit = *e.Snapshot, true
		}
		derive.Add(t)
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
	for _, n := range f.Nodes {
		p, ns := n.Path, n.State
		if !covered[p] {
			owner, how, ok := attach(f, p, len(ns.Turns))
			if !ok {
				nodeMeta.Set(p, ns.Raw)
				im.Notes = append(im.Notes, fmt.Sprintf("node_states[%q]: %d turns cannot be matched to the %d outer turns; kept whole in metadata %q",
					p, len(ns.Turns), len(f.Turns), ConfigMetaKey))
				continue
			}
			for j, ce := range ns.Turns {
				t := im.Turns[owner[j]]
				ct := ce.Turn
				var h sig.History
				if ce.Snapshot != nil {
					h = *ce.Snapshot
				}
				c := &trace.Call{ID: fmt.Sprintf("imported.%s.%d", p, j), Path: p, Inputs: orEmpty(ct.Inputs), Outputs: orEmpty(ct.Outputs),
					History: h, Score: ct.Score}
				t.Calls = append(t.Calls, c)
			}
			if len(ns.Turns) > 0 && how != "" {
				im.Notes = append(im.Notes, fmt.Sprintf("node_states[%q]: %d child turns attached %s", p, len(ns.Turns), how))
			}
		}
		if x := keptExtras(ns); x.Len() > 0 {
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
			return nil, perr(fmt.Sprintf("$.%s.turns[%d].calls", savefile.ExtKey, i), "call id %q appears twice in the turn", dup)
		}
	}
	if nodeMeta.Len() > 0 {
		cfg.Set("node_states", nodeMeta)
	}
	if cfg.Len() > 0 {
		// Kept as JSON text: metadata objects come back with sorted keys, and the order of
		// fields in history messages decides the prompts they render to.
		im.Metadata[ConfigMetaKey] = py.CompactJSON(cfg)
	}
	return im, nil
}

// attach says which outer turn owns each of a child's n turns, and how that was decided
// ("" when the file said so exactly).
func attach(f *savefile.File, path string, n int) ([]int, string, bool) {
	outer := len(f.Turns)
	owner := make([]int, 0, n)
	if hasChildTurns(f) {
		prev := 0
		for i, e := range f.Turns {
			c, ok := e.ChildTurn(path)
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

// hasChildTurns reports that the extension gave child_turns for the turns.
func hasChildTurns(f *savefile.File) bool {
	for _, e := range f.Turns {
		if e.ChildTurns != nil {
			return true
		}
	}
	return false
}

// keptExtras is what a child state holds besides its turns, when not empty/default.
func keptExtras(ns *savefile.State) *sig.Map {
	x := sig.NewMap()
	if v, _ := ns.Raw.Get("initial_history"); v != nil {
		x.Set("initial_history", v)
	}
	if ns.L2Memory != "" {
		x.Set("l2_memory", ns.L2Memory)
	}
	if v, ok := ns.Raw.Get("node_states"); ok {
		if m, ok := v.(*sig.Map); ok && m.Len() > 0 {
			x.Set("node_states", m)
		}
	}
	return x
}

// fileConfig collects the top-level settings that differ from what SessionJSON writes by
// default, the keys dspy-session does not define, and the extension's session options.
func fileConfig(f *savefile.File) *sig.Map {
	cfg := sig.NewMap()
	doc := f.Raw
	defaults := map[string]any{"history_field": "history", "max_turns": nil, "max_stored_turns": nil, "copy_mode": "deep",
		"exclude_fields": []any{f.Settings.Field()}, "history_input_fields": nil, "history_policy": "override",
		"initial_history": nil, "l2_memory": ""}
	for _, k := range savefile.PythonKeys {
		def, known := defaults[k]
		if !known {
			continue // version, turns, node_states
		}
		v, ok := doc.Get(k)
		if k == "history_input_fields" && !ok {
			v, ok = doc.Get("input_field_override") // the version 1 name
		}
		if ok && !py.Same(v, def) {
			cfg.Set(k, v)
		}
	}
	if f.Extra.Len() > 0 {
		cfg.Set("extra", f.Extra)
	}
	if f.Options.Len() > 0 {
		cfg.Set("extension", f.Options)
	}
	return cfg
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

func orEmpty(m *sig.Map) *sig.Map {
	if m == nil {
		return sig.NewMap()
	}
	return m
}

func perr(path, format string, args ...any) error {
	return &savefile.ParseError{Path: path, Msg: fmt.Sprintf(format, args...)}
}
