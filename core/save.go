package core

import (
	"fmt"
	"io"

	"github.com/sessionbench/sessionbench/core/savefile"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// SaveState returns the session as a save file: dspy-session's version 2 keys, every
// child's state in node_states (version 1, snapshots included) followed by the states a
// loaded file had for children this session does not have, and our extension (call
// records, explicit snapshots, turn times, child tips per turn, session options).
func (s *Session) SaveState() *savefile.File {
	s.mu.Lock()
	defer s.mu.Unlock()
	nodes := s.visible()
	entries := make([]savefile.Entry, len(nodes))
	for i, nd := range nodes {
		e := savefile.Entry{Turn: s.turnCopy(nd)}
		if len(nd.kids) > 0 {
			e.ChildTurns = []savefile.ChildCount{}
			for _, ch := range s.children {
				if ch.session != nil {
					e.ChildTurns = append(e.ChildTurns, savefile.ChildCount{Path: ch.path, Turns: depthOf(nd.kids.get(ch.path))})
				}
			}
		}
		entries[i] = e
	}
	var initial *sig.History
	if len(s.seed.Messages) > 0 || s.opts.InitialHistory != nil {
		h := s.seed.Clone()
		initial = &h
	}
	o := s.opts
	f := &savefile.File{
		Version: 2,
		Settings: savefile.Settings{HistoryField: o.HistoryField, MaxTurns: o.MaxTurns, MaxStoredTurns: o.MaxStoredTurns,
			CopyMode: o.CopyMode, ExcludeFields: o.ExcludeFields, HistoryInputFields: o.HistoryInputFields,
			HistoryPolicy: string(o.HistoryPolicy)},
		State: savefile.State{Turns: entries, InitialHistory: initial, L2Memory: s.l2, Nodes: s.nodeStates()},
		Options: sig.NewMap("recursive", string(o.Recursive), "nested_sessions", string(o.NestedSessions),
			"inner_scope", string(o.InnerScope), "record", string(o.Record)),
	}
	return f
}

// nodeStates is every child's state, then the file's states no child took (caller
// holds s.mu).
func (s *Session) nodeStates() []savefile.Node {
	var out []savefile.Node
	for _, ch := range s.children {
		if ch.session != nil && ch.kind != childSession {
			out = append(out, savefile.Node{Path: ch.path, State: ch.session.nodeState()})
		}
	}
	return append(out, s.fileNodes...)
}

// nodeState is a child's state as dspy-session's SessionState.to_dict (version 1), which
// keeps each turn's snapshot.
func (s *Session) nodeState() *savefile.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	nodes := s.visible()
	entries := make([]savefile.Entry, len(nodes))
	for i, nd := range nodes {
		entries[i] = savefile.Entry{Turn: s.turnCopy(nd)}
	}
	var initial *sig.History
	if len(s.seed.Messages) > 0 {
		h := s.seed.Clone()
		initial = &h
	}
	return &savefile.State{Turns: entries, InitialHistory: initial, L2Memory: s.l2, Nodes: s.fileNodes}
}

// Save writes the session's save file (savefile.Encode of SaveState) to w.
func (s *Session) Save(w io.Writer) error {
	if err := savefile.Encode(w, s.SaveState()); err != nil {
		return fmt.Errorf("save session %s: %w", s.name, err)
	}
	return nil
}

// Load rebuilds a session from a save file (written by Save or by dspy-session, versions 1
// and 2). The file's history settings apply where opts leaves them unset; code-only
// options (recursion, hooks, sink) come from opts. Snapshots are rebuilt from the loaded
// settings, except explicit ones, which are kept. The file's l2_memory, copy_mode and
// node_states stay with the session, also the states of children it does not have, and
// are written back by Save.
func Load(data []byte, module Module, opts Options) (*Session, error) {
	f, err := savefile.Decode(data)
	if err != nil {
		return nil, err
	}
	return FromFile(f, module, opts)
}

// FromFile is Load for a decoded file.
func FromFile(f *savefile.File, module Module, opts Options) (*Session, error) {
	opts = opts.WithFileSettings(f.Settings, f.Options)
	s, err := Sessionify(module, opts)
	if err != nil {
		return nil, err
	}
	if f.InitialHistory != nil {
		s.seed = f.InitialHistory.Clone()
	}
	s.l2 = f.L2Memory
	// Children first, so each outer turn can point at their tips.
	for _, n := range f.Nodes {
		ch := s.childAt(n.Path)
		if ch == nil {
			s.fileNodes = append(s.fileNodes, n)
			continue
		}
		ch.session.loadNodeState(n.State)
	}
	for _, e := range f.Turns {
		t := filled(e.Turn)
		var kids kidTips
		if e.ChildTurns != nil {
			kids = s.kidsAt(e)
		}
		if !t.Explicit {
			t.History = s.buildHistory(nil)
		}
		s.pushNode(t, kids)
	}
	return s, nil
}

// childAt is the child session a node state at path belongs to (nil when none).
func (s *Session) childAt(path string) *child {
	for _, ch := range s.children {
		if ch.path == path && ch.session != nil && ch.kind != childSession {
			return ch
		}
	}
	return nil
}

// pushNode appends a loaded turn without hooks (caller owns s exclusively).
func (s *Session) pushNode(t *trace.Turn, kids kidTips) {
	s.pushMessage(t, kids, s.message(t.Inputs, t.Outputs))
}

// pushMessage is pushNode with the turn's history message made already.
func (s *Session) pushMessage(t *trace.Turn, kids kidTips, msg *sig.Map) {
	if kids == nil {
		kids = s.childTips()
	}
	s.tip = newNode(s.tip, s.base, t, msg, kids)
	s.base = 0
}

// kidsAt finds each child's node at the depth recorded for an outer turn.
func (s *Session) kidsAt(e savefile.Entry) kidTips {
	kids := make(kidTips, 0, len(s.children))
	for _, ch := range s.children {
		if ch.session == nil {
			continue
		}
		d, _ := e.ChildTurn(ch.path)
		nd := ch.session.tip
		for nd != nil && nd.depth > d {
			nd = nd.parent
		}
		kids = append(kids, kidTip{ch.path, nd})
	}
	return kids
}

// loadNodeState fills a child session from its saved state: its turns (with their
// snapshots, or rebuilt when the file has none), seed, L2 memory, and the states of its
// own children, kept as they are.
func (s *Session) loadNodeState(st *savefile.State) {
	if st.InitialHistory != nil {
		s.seed = st.InitialHistory.Clone()
	}
	s.l2 = st.L2Memory
	s.fileNodes = st.Nodes
	for _, e := range st.Turns {
		t := filled(e.Turn)
		if e.Snapshot != nil {
			t.History = *e.Snapshot
		} else {
			t.History = s.buildHistory(nil)
		}
		s.pushNode(t, nil)
	}
}

// filled gives a file's turn empty inputs and outputs where it has none.
func filled(t *trace.Turn) *trace.Turn {
	if t.Inputs == nil {
		t.Inputs = sig.NewMap()
	}
	if t.Outputs == nil {
		t.Outputs = sig.NewMap()
	}
	return t
}

func depthOf(n *node) int {
	if n == nil {
		return 0
	}
	return n.depth
}
