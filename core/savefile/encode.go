package savefile

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// Encode writes f as dspy-session's Session.save does (json.dump with indent 2, the
// Python keys in its order, version 2), then f.Extra, the extension and f.Meta. Turns are
// written one at a time as State.Each or State.Turns yields them; nothing else of the
// file is held, so the memory an export needs does not grow with its length.
func Encode(w io.Writer, f *File) error {
	bw := bufio.NewWriter(w)
	j := &jsonWriter{w: bw}
	st := &f.State
	set := f.Settings
	field := set.Field()
	j.open('{')
	j.field("version", int64(2))
	j.field("history_field", field)
	j.field("max_turns", intValue(set.MaxTurns))
	j.field("max_stored_turns", intValue(set.MaxStoredTurns))
	j.field("copy_mode", orDefault(set.CopyMode, "deep"))
	excl := set.ExcludeFields
	if excl == nil {
		excl = []string{field}
	}
	j.field("exclude_fields", strings2(excl))
	var allow any
	if set.HistoryInputFields != nil {
		allow = strings2(set.HistoryInputFields)
	}
	j.field("history_input_fields", allow)
	j.field("history_policy", orDefault(set.HistoryPolicy, "override"))
	if err := j.state(st, false); err != nil {
		return err
	}
	f.Extra.Range(func(k string, v any) bool {
		j.field(k, v)
		return true
	})
	j.key(ExtKey)
	j.open('{')
	j.field("format", int64(2))
	sh := newShared()
	if err := j.sharedValues(st, sh); err != nil {
		return err
	}
	j.key("turns")
	j.open('[')
	err := st.each(func(e Entry) error {
		v, err := turnExt(e, sh)
		if err != nil {
			return fmt.Errorf("turn %d: %w", e.Turn.Index, err)
		}
		j.item(v)
		return j.err
	})
	if err != nil {
		return err
	}
	j.close(']')
	f.Options.Range(func(k string, v any) bool {
		j.field(k, v)
		return true
	})
	j.close('}')
	if f.Meta != nil {
		j.field(MetaKey, metaValue(f.Meta))
	}
	j.close('}')
	j.raw("\n")
	if j.err != nil {
		return j.err
	}
	return bw.Flush()
}

// nodes writes node_states: each child as SessionState.to_dict (version 1) does.
func (j *jsonWriter) nodes(nodes []Node) error {
	j.open('{')
	for _, n := range nodes {
		j.key(n.Path)
		st := n.State
		if st.Raw != nil && st.Turns == nil && st.Each == nil {
			j.value(st.Raw)
			continue
		}
		j.open('{')
		j.field("version", int64(1))
		if err := j.state(st, true); err != nil {
			return err
		}
		j.close('}')
	}
	j.close('}')
	return j.err
}

// state writes a state's keys from "turns" to "node_states".
func (j *jsonWriter) state(st *State, v1 bool) error {
	if err := j.turns(st, v1); err != nil {
		return err
	}
	j.field("initial_history", historyValue(st.InitialHistory))
	j.field("l2_memory", st.L2Memory)
	j.key("node_states")
	return j.nodes(st.Nodes)
}

// turns writes the "turns" list, in version 1 form (with each turn's snapshot) for a
// child state.
func (j *jsonWriter) turns(st *State, v1 bool) error {
	j.key("turns")
	j.open('[')
	err := st.each(func(e Entry) error {
		t := e.Turn
		m := sig.NewMap("index", int64(t.Index), "inputs", orEmpty(t.Inputs), "outputs", orEmpty(t.Outputs))
		if v1 {
			m.Set("history_snapshot", t.History)
		}
		m.Set("score", scoreValue(t.Score))
		j.item(m)
		return j.err
	})
	j.close(']')
	return err
}

// sharedValues writes the "shared" list (when the calls have any messages or history):
// every distinct message and history entry of the turns' calls, once, in first-use order
// (shared.go). The turns are read once more for it; only a digest of each value is held.
func (j *jsonWriter) sharedValues(st *State, sh *shared) error {
	started := false
	err := st.each(func(e Entry) error {
		if len(e.Turn.Calls) == 0 {
			return nil
		}
		err := sh.collect(e.Turn.Calls, func(v any) error {
			if !started {
				j.key("shared")
				j.open('[')
				started = true
			}
			j.item(v)
			return j.err
		})
		if err != nil {
			return fmt.Errorf("turn %d: %w", e.Turn.Index, err)
		}
		return nil
	})
	if started {
		j.close(']')
	}
	return err
}

// turnExt is a turn's entry in the extension; its calls name their messages and
// history in sh.
func turnExt(e Entry, sh *shared) (*sig.Map, error) {
	t := e.Turn
	m := sig.NewMap("started", t.Started.Format(time.RFC3339Nano), "ended", t.Ended.Format(time.RFC3339Nano))
	if t.Explicit {
		m.Set("history_snapshot", t.History)
	}
	if len(t.Calls) > 0 {
		cv, err := sh.callsValue(t.Calls)
		if err != nil {
			return nil, err
		}
		m.Set("calls", cv)
	}
	if len(t.Attempts) > 0 {
		av, err := jsonValue(t.Attempts)
		if err != nil {
			return nil, fmt.Errorf("attempts: %w", err)
		}
		m.Set("attempts", av)
	}
	if e.ChildTurns != nil {
		ct := sig.NewMap()
		for _, c := range e.ChildTurns {
			ct.Set(c.Path, int64(c.Turns))
		}
		m.Set("child_turns", ct)
	}
	return m, nil
}

// CallsValue converts call records into ordered JSON values (their JSON form).
func CallsValue(calls []*trace.Call) (any, error) {
	v, err := jsonValue(calls)
	if err != nil {
		return nil, fmt.Errorf("call records: %w", err)
	}
	return v, nil
}

// jsonValue is v's JSON form as ordered JSON values.
func jsonValue(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return sig.DecodeJSON(data)
}

func metaValue(m *Meta) *sig.Map {
	v := sig.NewMap("conversation", m.Conversation, "title", m.Title, "agent", m.Agent, "status", m.Status, "branch", m.Branch)
	if len(m.Metadata) > 0 {
		if data, err := json.Marshal(m.Metadata); err == nil { // map keys come out sorted
			if mv, err := sig.DecodeJSON(data); err == nil {
				v.Set("metadata", mv)
			}
		}
	}
	if ac := strings.TrimSpace(string(m.AgentConfig)); ac != "" && ac != "{}" {
		if av, err := sig.DecodeJSON(m.AgentConfig); err == nil {
			v.Set("agent_config", av)
		}
	}
	return v
}

func orEmpty(m *sig.Map) *sig.Map {
	if m == nil {
		return sig.NewMap()
	}
	return m
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
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

func strings2(l []string) []any {
	out := make([]any, len(l))
	for i, s := range l {
		out[i] = s
	}
	return out
}

func historyValue(h *sig.History) any {
	if h == nil {
		return nil
	}
	return *h
}

// jsonWriter streams JSON spelled as Python's json.dump(indent=2, ensure_ascii=False):
// containers open and close as they are written, complete values are rendered in place.
// The first error sticks and stops all writing.
type jsonWriter struct {
	w     *bufio.Writer
	err   error
	depth int
	first []bool // per open container: nothing written in it yet
}

func (j *jsonWriter) raw(s string) {
	if j.err == nil {
		_, j.err = j.w.WriteString(s)
	}
}

func (j *jsonWriter) newline() { j.raw("\n" + strings.Repeat("  ", j.depth)) }

// sep starts a member or element: a comma after the first, then a new indented line.
func (j *jsonWriter) sep() {
	if n := len(j.first); n > 0 {
		if !j.first[n-1] {
			j.raw(",")
		}
		j.first[n-1] = false
	}
	j.newline()
}

func (j *jsonWriter) open(c byte) {
	j.raw(string(c))
	j.depth++
	j.first = append(j.first, true)
}

// close ends a container; an empty one is written "{}" or "[]", as Python does.
func (j *jsonWriter) close(c byte) {
	empty := j.first[len(j.first)-1]
	j.first = j.first[:len(j.first)-1]
	j.depth--
	if !empty {
		j.newline()
	}
	j.raw(string(c))
}

func (j *jsonWriter) key(k string) {
	j.sep()
	j.raw(py.JSON(k) + ": ")
}

func (j *jsonWriter) field(k string, v any) {
	j.key(k)
	j.value(v)
}

func (j *jsonWriter) item(v any) {
	j.sep()
	j.value(v)
}

// value writes a complete value at the current depth (JSON strings hold no raw newline,
// so indenting every line of the rendered value is exact).
func (j *jsonWriter) value(v any) {
	text := py.JSONIndent(v, 2)
	if j.depth > 0 {
		text = strings.ReplaceAll(text, "\n", "\n"+strings.Repeat("  ", j.depth))
	}
	j.raw(text)
}
