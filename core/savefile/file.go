// Package savefile reads and writes session save files: dspy-session's format (version 2
// as Session.save writes it, version 1 as SessionState.to_dict writes it) plus the
// extension keys the Python library ignores ("sessionbench": per-turn times, explicit
// snapshots, call records whose requests and histories are written once and shared
// (format 2, shared.go), attempts, children's turn counts and session options;
// "x_sessionbench": the conversation an export came from).
//
// It is the one codec behind core.Session.Save and core.Load, and behind the
// workbench's import and export. It knows the file, not the engine: settings are read
// and written as the file spells them, and what they mean is the caller's business. It
// does no file I/O: it decodes bytes and encodes to an io.Writer, streaming the turns,
// so an export never holds the whole file.
package savefile

import (
	"encoding/json"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// ExtKey is the top-level key of our extension (Python's loader ignores it).
const ExtKey = "sessionbench"

// MetaKey holds the exported conversation's own fields (id, title, agent, status, ...).
const MetaKey = "x_sessionbench"

// PythonKeys are the top-level keys dspy-session's Session.save writes, in its order.
var PythonKeys = []string{"version", "history_field", "max_turns", "max_stored_turns", "copy_mode", "exclude_fields",
	"history_input_fields", "history_policy", "turns", "initial_history", "l2_memory", "node_states"}

// Settings are the session settings a version 2 file carries at the top level. A zero
// field is absent or null in the file; Encode writes dspy-session's defaults for the
// zero values (history_field "history", copy_mode "deep", exclude_fields [history_field],
// history_policy "override").
type Settings struct {
	HistoryField   string
	MaxTurns       *int
	MaxStoredTurns *int
	CopyMode       string
	ExcludeFields  []string // nil: absent
	// HistoryInputFields is the allow-list as the file spells it: nil for null or absent,
	// an empty list kept as such (it means "no allow-list" to dspy-session, which loads
	// the empty list as None; the caller applies that).
	HistoryInputFields []string
	HistoryPolicy      string
}

// Field returns the history field name, "history" when unset.
func (s Settings) Field() string {
	if s.HistoryField == "" {
		return "history"
	}
	return s.HistoryField
}

// State is one session's state: the top level of a file, or one child in node_states
// (dspy-session's SessionState, written as version 1).
type State struct {
	Turns []Entry
	// Each, when set, yields the turns instead of Turns, so an encoder streams them from
	// their source (it may be run more than once: the top-level turns are listed again
	// in the extension).
	Each           func(yield func(Entry) error) error
	InitialHistory *sig.History // nil: null
	L2Memory       string
	Nodes          []Node // node_states, in file order
	// Raw is the object the state was decoded from. Encode writes a state with Raw and
	// neither Turns nor Each verbatim (a child kept as the file had it).
	Raw *sig.Map
}

// Node is one entry of node_states: a child session's state under its dotted path.
type Node struct {
	Path  string
	State *State
}

// Node returns the child state at path, or nil.
func (s *State) Node(path string) *State {
	for _, n := range s.Nodes {
		if n.Path == path {
			return n.State
		}
	}
	return nil
}

// each yields the state's turns from Each or Turns.
func (s *State) each(yield func(Entry) error) error {
	if s.Each != nil {
		return s.Each(yield)
	}
	for _, e := range s.Turns {
		if err := yield(e); err != nil {
			return err
		}
	}
	return nil
}

// Entry is one turn as a file holds it.
//   - Turn: index, inputs, outputs and score; from the extension its times, its call
//     records, its attempts and, when the extension marked it explicit, its snapshot (History with
//     Explicit set). Encode writes the version 2 keys, and the extension's
//     history_snapshot only for an explicit snapshot.
//   - Snapshot is the turn's own "history_snapshot" key (version 1 form); nil when
//     absent. Encoding a child state writes Turn.History there.
//   - ChildTurns is the extension's child_turns: each child's number of turns right after
//     this one, in order; nil when the file does not say (and then not written).
type Entry struct {
	Turn       *trace.Turn
	Snapshot   *sig.History
	ChildTurns []ChildCount
}

// ChildCount is a child's number of turns after an outer turn.
type ChildCount struct {
	Path  string
	Turns int
}

// ChildTurn returns the child's count recorded for path.
func (e Entry) ChildTurn(path string) (int, bool) {
	for _, c := range e.ChildTurns {
		if c.Path == path {
			return c.Turns, true
		}
	}
	return 0, false
}

// File is a whole save file.
type File struct {
	Version  int // 1 or 2; Encode always writes 2
	Settings Settings
	State
	// Extra holds the top-level keys that are neither dspy-session's nor ours, in file
	// order; Encode writes them back after node_states.
	Extra *sig.Map
	// Options are the extension's keys besides "format" and "turns" (the session options
	// core writes: recursive, nested_sessions, inner_scope, record), in file order.
	Options *sig.Map
	// HasCalls reports that the extension carried call records for at least one turn.
	HasCalls bool
	Meta     *Meta // the x_sessionbench block; nil when absent
}

// Meta is what an export recorded about its conversation.
type Meta struct {
	Conversation, Title, Agent, Status, Branch string
	Metadata                                   map[string]any
	AgentConfig                                json.RawMessage
}
