package export

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/sessionbench/sessionbench/core/savefile"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
)

// ConfigMetaKey is the conversation metadata key under which Import keeps (as JSON text) what a
// dspy-session file said that a conversation has no column for: non-default settings
// (history_field, max_turns, exclude_fields, initial_history, l2_memory, ...), unknown
// top-level keys ("extra"), the extension's session options ("extension") and child
// states beyond their turns ("node_states"). SessionJSON writes them back.
const ConfigMetaKey = "dspy_session"

// imported is what a conversation's ConfigMetaKey metadata says.
type imported struct {
	settings savefile.Settings
	initial  *sig.History
	l2       string
	extra    *sig.Map // unknown top-level keys
	options  *sig.Map // the extension's session options
	nodes    *sig.Map // per child path: its state beyond turns, or the whole state
}

// importedSettings reads the source conversation's ConfigMetaKey back (all zero when
// absent).
func importedSettings(src *Source) (*imported, error) {
	var md map[string]any
	if src.Conv != nil {
		md = src.Conv.Metadata
	}
	im := &imported{}
	cfg := importedConfig(md)
	at := "metadata " + ConfigMetaKey
	var err error
	if im.settings, err = savefile.DecodeSettings(cfg, at); err != nil {
		return nil, err
	}
	if v, _ := cfg.Get("initial_history"); v != nil {
		h, err := sig.HistoryFromValue(v)
		if err != nil {
			return nil, fmt.Errorf("%s: initial_history: %w", at, err)
		}
		im.initial = &h
	}
	im.l2, _ = cfgValue(cfg, "l2_memory").(string)
	im.extra, _ = cfgValue(cfg, "extra").(*sig.Map)
	im.options, _ = cfgValue(cfg, "extension").(*sig.Map)
	im.nodes, _ = cfgValue(cfg, "node_states").(*sig.Map)
	return im, nil
}

// field is the history field: the caller's unless it left the default and the file
// named another.
func (im *imported) field(given string) string {
	if im.settings.HistoryField != "" && (given == "" || given == "history") {
		return im.settings.HistoryField
	}
	if given == "" {
		return "history"
	}
	return given
}

// SessionJSON writes dspy-session's save format version 2 (json.dump indent 2) with the
// Python keys, so Session.load_from reads it, plus node_states built from the call records:
// each predictor path becomes a child session whose turns are that predictor's calls (the
// `keep` policy), in SessionState version 1 form as the library writes them. Two extension
// keys, which the library ignores, make the file lossless for Import and core.Load:
// savefile.ExtKey (per turn: times, explicit snapshot, every call record, the children's
// turn counts; the same shape core.Session.Save writes) and savefile.MetaKey (the
// conversation: id, title, agent, status, branch, metadata). Settings an imported file
// carried (conversation metadata ConfigMetaKey) replace the defaults. The turns are
// streamed: nothing but one turn at a time is rendered in memory.
func SessionJSON(w io.Writer, src *Source, o Options) error {
	im, err := importedSettings(src)
	if err != nil {
		return err
	}
	set := im.settings
	set.HistoryField = im.field(o.HistoryField)
	paths, err := callPaths(src)
	if err != nil {
		return err
	}
	f := &savefile.File{
		Version:  2,
		Settings: set,
		State: savefile.State{
			Each:           outerTurns(src, o.NoCalls),
			InitialHistory: im.initial,
			L2Memory:       im.l2,
		},
		Options: im.options,
	}
	for _, p := range paths {
		st := &savefile.State{Each: childTurns(src, p)}
		if x, ok := im.nodes.Get(p); ok {
			if xm, ok := x.(*sig.Map); ok {
				if err := nodeExtras(st, xm); err != nil {
					return fmt.Errorf("metadata %s: node_states[%q]: %w", ConfigMetaKey, p, err)
				}
			}
		}
		f.Nodes = append(f.Nodes, savefile.Node{Path: p, State: st})
	}
	// Node states an import could not attach to turns are written back as they came.
	im.nodes.Range(func(p string, v any) bool {
		if vm, ok := v.(*sig.Map); ok && !slices.Contains(paths, p) {
			f.Nodes = append(f.Nodes, savefile.Node{Path: p, State: &savefile.State{Raw: vm}})
		}
		return true
	})
	im.extra.Range(func(k string, v any) bool {
		if !slices.Contains(savefile.PythonKeys, k) && k != savefile.ExtKey && k != savefile.MetaKey {
			if f.Extra == nil {
				f.Extra = sig.NewMap()
			}
			f.Extra.Set(k, v)
		}
		return true
	})
	if c := src.Conv; c != nil {
		meta := &savefile.Meta{Conversation: c.ID, Title: c.Title, Agent: c.Agent, Status: string(c.Status), Branch: src.Branch,
			AgentConfig: c.AgentConfig, Metadata: map[string]any{}}
		for k, v := range c.Metadata {
			if k != ConfigMetaKey { // the Python keys already carry the imported settings
				meta.Metadata[k] = v
			}
		}
		f.Meta = meta
	}
	return savefile.Encode(w, f)
}

// callPaths lists, sorted, the paths of the calls that record a child turn (a failed
// call records none).
func callPaths(src *Source) ([]string, error) {
	var paths []string
	err := src.EachWith(storage.LoadOptions{NoRequests: true}, func(t *trace.Turn) error {
		trace.WalkCalls(t.Calls, func(c *trace.Call, _ int) {
			if keepsTurn(c) && !slices.Contains(paths, c.Path) {
				paths = append(paths, c.Path)
			}
		})
		return nil
	})
	slices.Sort(paths)
	return paths, err
}

func keepsTurn(c *trace.Call) bool { return c.Path != "" && c.Outputs != nil }

// outerTurns yields the branch's turns numbered by position, each with the children's
// turn counts so far; without their calls when noCalls is set.
func outerTurns(src *Source, noCalls bool) func(yield func(savefile.Entry) error) error {
	return func(yield func(savefile.Entry) error) error {
		counts := map[string]int{}
		var seen []string
		i := -1
		return src.EachWith(storage.LoadOptions{NoRequests: noCalls}, func(t *trace.Turn) error {
			i++
			trace.WalkCalls(t.Calls, func(c *trace.Call, _ int) {
				if keepsTurn(c) {
					if _, ok := counts[c.Path]; !ok {
						seen = append(seen, c.Path)
					}
					counts[c.Path]++
				}
			})
			tt := *t
			tt.Index = i
			if noCalls {
				tt.Calls = nil
			}
			e := savefile.Entry{Turn: &tt}
			if len(seen) > 0 {
				sorted := slices.Sorted(slices.Values(seen))
				for _, p := range sorted {
					e.ChildTurns = append(e.ChildTurns, savefile.ChildCount{Path: p, Turns: counts[p]})
				}
			}
			return yield(e)
		})
	}
}

// childTurns yields the child session at path: one turn per successful call there, with
// the history that call saw as its snapshot.
func childTurns(src *Source, path string) func(yield func(savefile.Entry) error) error {
	return func(yield func(savefile.Entry) error) error {
		n := 0
		return src.EachWith(storage.LoadOptions{NoRequests: true}, func(t *trace.Turn) error {
			var err error
			trace.WalkCalls(t.Calls, func(c *trace.Call, _ int) {
				if err != nil || c.Path != path || !keepsTurn(c) {
					return
				}
				err = yield(savefile.Entry{Turn: &trace.Turn{Index: n, Inputs: c.Inputs, Outputs: c.Outputs, History: c.History, Score: c.Score}})
				n++
			})
			return err
		})
	}
}

// nodeExtras applies what an import kept of a child's state beyond its turns.
func nodeExtras(st *savefile.State, xm *sig.Map) error {
	if v, _ := xm.Get("initial_history"); v != nil {
		h, err := sig.HistoryFromValue(v)
		if err != nil {
			return fmt.Errorf("initial_history: %w", err)
		}
		st.InitialHistory = &h
	}
	st.L2Memory, _ = cfgValue(xm, "l2_memory").(string)
	if ns, ok := cfgValue(xm, "node_states").(*sig.Map); ok {
		ns.Range(func(p string, v any) bool {
			if vm, ok := v.(*sig.Map); ok {
				st.Nodes = append(st.Nodes, savefile.Node{Path: p, State: &savefile.State{Raw: vm}})
			}
			return true
		})
	}
	return nil
}

// importedConfig reads ConfigMetaKey back as ordered JSON values (empty when absent).
func importedConfig(md map[string]any) *sig.Map {
	raw, ok := md[ConfigMetaKey]
	if !ok {
		return sig.NewMap()
	}
	text, ok := raw.(string)
	if !ok { // an object set by hand: key order is lost, values are still good
		data, err := json.Marshal(raw)
		if err != nil {
			return sig.NewMap()
		}
		text = string(data)
	}
	v, err := sig.DecodeJSON([]byte(text))
	if m, ok := v.(*sig.Map); err == nil && ok {
		return m
	}
	return sig.NewMap()
}

func cfgValue(cfg *sig.Map, k string) any {
	v, _ := cfg.Get(k)
	return v
}
