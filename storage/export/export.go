// Package export writes a stored branch in the formats other tools read: dspy-session's
// save file (version 2, loadable by the Python library), DSPy Example JSONL at turn or
// call level, every call record as JSONL, OpenAI fine-tuning chat JSONL built from the
// exact requests, and a Markdown transcript.
package export

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
)

// Formats lists the format names Write accepts.
var Formats = []string{"session-json", "examples", "calls", "openai-jsonl", "markdown"}

// Source is what is exported: one branch of one conversation.
type Source struct {
	Conv   *storage.Conversation
	Branch string
	Turns  []*trace.Turn
}

// Load reads a branch for export.
func Load(ctx context.Context, s *storage.Store, convID, branch string) (*Source, error) {
	c, err := s.Conversation(ctx, convID)
	if err != nil {
		return nil, err
	}
	turns, err := s.LoadBranch(ctx, convID, branch)
	if err != nil {
		return nil, err
	}
	return &Source{Conv: c, Branch: branch, Turns: turns}, nil
}

// Options refine some formats.
type Options struct {
	// Path selects call-level examples (examples) or the calls of one predictor
	// (openai-jsonl); "" means turn level / every call.
	Path string
	// HistoryField is the session's history field name; "" means "history".
	HistoryField string
}

// Write writes src in format.
func Write(w io.Writer, format string, src *Source, o Options) error {
	if o.HistoryField == "" {
		o.HistoryField = "history"
	}
	bw := bufio.NewWriter(w)
	var err error
	switch format {
	case "session-json":
		err = SessionJSON(bw, src, o)
	case "examples":
		err = Examples(bw, src, o)
	case "calls":
		err = Calls(bw, src)
	case "openai-jsonl":
		err = OpenAIJSONL(bw, src, o)
	case "markdown":
		err = Markdown(bw, src)
	default:
		return fmt.Errorf("unknown export format %q (want one of %s)", format, strings.Join(Formats, ", "))
	}
	if err != nil {
		return err
	}
	return bw.Flush()
}

func scoreValue(s *float64) any {
	if s == nil {
		return nil
	}
	return *s
}

func orEmpty(m *sig.Map) *sig.Map {
	if m == nil {
		return sig.NewMap()
	}
	return m
}

func historyValue(h sig.History) *sig.Map {
	msgs := make([]any, len(h.Messages))
	for i, m := range h.Messages {
		msgs[i] = m
	}
	return sig.NewMap("messages", msgs)
}

// SessionJSON writes dspy-session's save format version 2 (json.dump indent 2) with the
// Python keys, so Session.load_from reads it, plus node_states built from the call records:
// each predictor path becomes a child session whose turns are that predictor's calls (the
// `keep` policy), in SessionState version 1 form as the library writes them. Two extension
// keys, which the library ignores, make the file lossless for Import and core.Load:
// "sessionbench" (per turn: times, explicit snapshot, every call record, the children's
// turn counts; the same shape core.Session.Save writes) and "x_sessionbench" (the
// conversation: id, title, agent, status, branch, metadata). Settings an imported file
// carried (conversation metadata ConfigMetaKey) replace the defaults.
func SessionJSON(w io.Writer, src *Source, o Options) error {
	cfg := importedConfig(src.Conv)
	field := o.HistoryField
	if hf, ok := cfg.Get("history_field"); ok && (field == "" || field == "history") {
		if s, ok := hf.(string); ok && s != "" {
			field = s
		}
	}
	if field == "" {
		field = "history"
	}
	turns := make([]any, len(src.Turns))
	ext := make([]any, len(src.Turns))
	type node struct{ turns []any }
	nodes := map[string]*node{}
	var paths []string
	for i, t := range src.Turns {
		turns[i] = sig.NewMap("index", int64(i), "inputs", orEmpty(t.Inputs), "outputs", orEmpty(t.Outputs), "score", scoreValue(t.Score))
		trace.WalkCalls(t.Calls, func(c *trace.Call, _ int) {
			if c.Path == "" || c.Outputs == nil {
				return // a failed call records no turn in a child session
			}
			n := nodes[c.Path]
			if n == nil {
				n = &node{}
				nodes[c.Path] = n
				paths = append(paths, c.Path)
			}
			n.turns = append(n.turns, sig.NewMap("index", int64(len(n.turns)), "inputs", orEmpty(c.Inputs),
				"outputs", c.Outputs, "history_snapshot", historyValue(c.History), "score", scoreValue(c.Score)))
		})
		e := sig.NewMap("started", t.Started.Format(time.RFC3339Nano), "ended", t.Ended.Format(time.RFC3339Nano))
		if t.Explicit {
			e.Set("history_snapshot", historyValue(t.History))
		}
		if len(t.Calls) > 0 {
			cv, err := callsValue(t.Calls)
			if err != nil {
				return fmt.Errorf("turn %d: %w", i, err)
			}
			e.Set("calls", cv)
		}
		if len(paths) > 0 {
			sorted := append([]string(nil), paths...)
			sort.Strings(sorted)
			ct := sig.NewMap()
			for _, p := range sorted {
				ct.Set(p, int64(len(nodes[p].turns)))
			}
			e.Set("child_turns", ct)
		}
		ext[i] = e
	}
	sort.Strings(paths)
	states := sig.NewMap()
	extraStates, _ := cfgValue(cfg, "node_states").(*sig.Map)
	for _, p := range paths {
		st := sig.NewMap("version", int64(1), "turns", nodes[p].turns, "initial_history", nil,
			"l2_memory", "", "node_states", sig.NewMap())
		if x, ok := extraStates.Get(p); ok {
			if xm, ok := x.(*sig.Map); ok {
				xm.Range(func(k string, v any) bool {
					if k != "turns" && k != "version" {
						st.Set(k, v)
					}
					return true
				})
			}
		}
		states.Set(p, st)
	}
	// Node states an import could not attach to turns are written back as they came.
	extraStates.Range(func(p string, v any) bool {
		if !states.Has(p) {
			states.Set(p, v)
		}
		return true
	})
	excl := cfgValue(cfg, "exclude_fields")
	if excl == nil {
		excl = []any{field}
	}
	copyMode := cfgValue(cfg, "copy_mode")
	if copyMode == nil {
		copyMode = "deep"
	}
	policy := cfgValue(cfg, "history_policy")
	if policy == nil {
		policy = "override"
	}
	l2 := cfgValue(cfg, "l2_memory")
	if l2 == nil {
		l2 = ""
	}
	doc := sig.NewMap(
		"version", int64(2),
		"history_field", field,
		"max_turns", cfgValue(cfg, "max_turns"),
		"max_stored_turns", cfgValue(cfg, "max_stored_turns"),
		"copy_mode", copyMode,
		"exclude_fields", excl,
		"history_input_fields", cfgValue(cfg, "history_input_fields"),
		"history_policy", policy,
		"turns", turns,
		"initial_history", cfgValue(cfg, "initial_history"),
		"l2_memory", l2,
		"node_states", states,
	)
	if extra, ok := cfgValue(cfg, "extra").(*sig.Map); ok {
		extra.Range(func(k string, v any) bool {
			if !doc.Has(k) && k != extKey && k != metaKey {
				doc.Set(k, v)
			}
			return true
		})
	}
	extDoc := sig.NewMap("format", int64(1), "turns", ext)
	if opts, ok := cfgValue(cfg, "extension").(*sig.Map); ok {
		opts.Range(func(k string, v any) bool {
			if !extDoc.Has(k) {
				extDoc.Set(k, v)
			}
			return true
		})
	}
	doc.Set(extKey, extDoc)
	if src.Conv != nil {
		meta := sig.NewMap("conversation", src.Conv.ID, "title", src.Conv.Title,
			"agent", src.Conv.Agent, "status", string(src.Conv.Status), "branch", src.Branch)
		if mv := metadataValue(src.Conv.Metadata); mv != nil {
			meta.Set("metadata", mv)
		}
		if ac := strings.TrimSpace(string(src.Conv.AgentConfig)); ac != "" && ac != "{}" {
			if v, err := sig.DecodeJSON(src.Conv.AgentConfig); err == nil {
				meta.Set("agent_config", v)
			}
		}
		doc.Set(metaKey, meta)
	}
	_, err := io.WriteString(w, sig.PyJSONIndent(doc, 2)+"\n")
	return err
}

// callsValue converts call records into ordered JSON values (their JSON form).
func callsValue(calls []*trace.Call) (any, error) {
	data, err := json.Marshal(calls)
	if err != nil {
		return nil, fmt.Errorf("call records: %w", err)
	}
	return sig.DecodeJSON(data)
}

// ConfigMetaKey is the conversation metadata key under which Import keeps (as JSON text) what a
// dspy-session file said that a conversation has no column for: non-default settings
// (history_field, max_turns, exclude_fields, initial_history, l2_memory, ...), unknown
// top-level keys ("extra") and child states it could not attach to turns ("node_states").
// SessionJSON writes them back.
const ConfigMetaKey = "dspy_session"

// importedConfig reads ConfigMetaKey back as ordered JSON values (empty when absent).
func importedConfig(c *storage.Conversation) *sig.Map {
	if c == nil {
		return sig.NewMap()
	}
	raw, ok := c.Metadata[ConfigMetaKey]
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

// metadataValue is the conversation's metadata in key order, nil when empty. The
// imported settings are left out: the Python keys already carry them.
func metadataValue(md map[string]any) any {
	rest := make(map[string]any, len(md))
	for k, v := range md {
		if k != ConfigMetaKey {
			rest[k] = v
		}
	}
	if len(rest) == 0 {
		return nil
	}
	data, err := json.Marshal(rest) // map keys come out sorted
	if err != nil {
		return nil
	}
	v, err := sig.DecodeJSON(data)
	if err != nil {
		return nil
	}
	return v
}

// derivedHistory is the history dspy-session would have sent at turn i without a window:
// each earlier turn's inputs (history excluded) and outputs as one message.
func derivedHistory(turns []*trace.Turn, i int, field string) sig.History {
	if turns[i].Explicit {
		return turns[i].History
	}
	var h sig.History
	for _, t := range turns[:i] {
		m := sig.NewMap()
		for _, src := range []*sig.Map{t.Inputs, t.Outputs} {
			src.Range(func(k string, v any) bool {
				if k != field {
					m.Set(k, v)
				}
				return true
			})
		}
		h.Messages = append(h.Messages, m)
	}
	return h
}

// example renders one DSPy Example: inputs, history, outputs, and the input keys.
func example(inputs, outputs *sig.Map, h sig.History, field string) string {
	ex := sig.NewMap()
	var keys []any
	inputs.Range(func(k string, v any) bool {
		if k != field {
			ex.Set(k, v)
			keys = append(keys, k)
		}
		return true
	})
	ex.Set(field, historyValue(h))
	keys = append(keys, field)
	outputs.Range(func(k string, v any) bool {
		if !ex.Has(k) {
			ex.Set(k, v)
		}
		return true
	})
	ex.Set("_input_keys", keys)
	return sig.JSON(ex)
}

// Examples writes DSPy Example JSONL: one line per turn (dspy-session's to_examples:
// inputs, the history snapshot, outputs; turns without outputs skipped), or with o.Path one
// line per successful call of that predictor, with the history that call saw. Each line
// carries "_input_keys" for Example(**d).with_inputs(*keys).
func Examples(w io.Writer, src *Source, o Options) error {
	field := o.HistoryField
	if field == "" {
		field = "history"
	}
	n := 0
	for i, t := range src.Turns {
		if o.Path == "" {
			if t.Outputs.Len() == 0 {
				continue
			}
			if _, err := io.WriteString(w, example(t.Inputs, t.Outputs, derivedHistory(src.Turns, i, field), field)+"\n"); err != nil {
				return err
			}
			n++
			continue
		}
		var err error
		trace.WalkCalls(t.Calls, func(c *trace.Call, _ int) {
			if err != nil || c.Path != o.Path || c.Outputs == nil || c.Error != "" {
				return
			}
			_, err = io.WriteString(w, example(c.Inputs, c.Outputs, c.History, field)+"\n")
			n++
		})
		if err != nil {
			return err
		}
	}
	if n == 0 && o.Path != "" {
		return fmt.Errorf("no successful calls with path %q on this branch", o.Path)
	}
	return nil
}

// callLine is one call record in the calls export.
type callLine struct {
	Turn   int    `json:"turn"`
	Parent string `json:"parent,omitempty"`
	Depth  int    `json:"depth"`
	*trace.Call
	Children []string `json:"children,omitempty"` // shadows the embedded tree: ids only
}

// Calls writes every call record as JSONL, parents before children, with the exact request,
// raw completion, usage, latency, error and attempts; children are listed by id.
func Calls(w io.Writer, src *Source) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, t := range src.Turns {
		var rec func(parent string, c *trace.Call, depth int) error
		rec = func(parent string, c *trace.Call, depth int) error {
			line := callLine{Turn: t.Index, Parent: parent, Depth: depth, Call: c}
			for _, ch := range c.Children {
				line.Children = append(line.Children, ch.ID)
			}
			if err := enc.Encode(line); err != nil {
				return err
			}
			for _, ch := range c.Children {
				if err := rec(c.ID, ch, depth+1); err != nil {
					return err
				}
			}
			return nil
		}
		for _, c := range t.Calls {
			if err := rec("", c, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// OpenAIJSONL writes OpenAI fine-tuning chat lines: the exact messages of each successful
// call followed by the model's raw answer as the assistant message.
func OpenAIJSONL(w io.Writer, src *Source, o Options) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	var err error
	for _, t := range src.Turns {
		trace.WalkCalls(t.Calls, func(c *trace.Call, _ int) {
			if err != nil || c.Error != "" || c.Completion == "" || len(c.Messages) == 0 || (o.Path != "" && c.Path != o.Path) {
				return
			}
			msgs := append(append([]lm.Message(nil), c.Messages...), lm.Message{Role: "assistant", Content: c.Completion})
			err = enc.Encode(struct {
				Messages []lm.Message `json:"messages"`
			}{msgs})
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Markdown writes a readable transcript: each turn's inputs and outputs, its score, and a
// list of the inner calls.
func Markdown(w io.Writer, src *Source) error {
	var b strings.Builder
	title := "Conversation"
	if src.Conv != nil {
		title = src.Conv.Title
		if title == "" {
			title = src.Conv.ID
		}
	}
	fmt.Fprintf(&b, "# %s\n\n", title)
	if src.Conv != nil {
		fmt.Fprintf(&b, "- conversation: `%s`\n- branch: `%s`\n- agent: %s\n- status: %s\n- turns: %d\n\n",
			src.Conv.ID, src.Branch, orDash(src.Conv.Agent), src.Conv.Status, len(src.Turns))
	}
	for _, t := range src.Turns {
		fmt.Fprintf(&b, "## Turn %d\n\n", t.Index)
		fields := func(m *sig.Map) {
			m.Range(func(k string, v any) bool {
				text := sig.PyStr(v)
				if strings.Contains(text, "\n") {
					fmt.Fprintf(&b, "**%s**:\n\n%s\n\n", k, text)
				} else {
					fmt.Fprintf(&b, "**%s**: %s\n\n", k, text)
				}
				return true
			})
		}
		fields(t.Inputs)
		if t.Outputs == nil {
			b.WriteString("_(no outputs)_\n\n")
		} else {
			fields(t.Outputs)
		}
		if t.Score != nil {
			fmt.Fprintf(&b, "score: %s\n\n", sig.PyFloat(*t.Score))
		}
		if len(t.Calls) > 0 {
			b.WriteString("Calls:\n\n")
			trace.WalkCalls(t.Calls, func(c *trace.Call, d int) {
				fmt.Fprintf(&b, "%s- `%s` %s, %d tokens, %s", strings.Repeat("  ", d), c.Path, c.PredictorType,
					c.Usage.TotalTokens, c.Latency.Round(1e6))
				if c.Error != "" {
					fmt.Fprintf(&b, " — error: %s", c.Error)
				}
				b.WriteString("\n")
			})
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
