package core

import (
	"slices"
	"sync"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// filters decide what of a turn goes into its history message (dspy-session's
// _build_history): inputs not excluded and allowed, then outputs not excluded.
type filters struct {
	exclude map[string]bool
	allow   map[string]bool // nil: every input
}

// newFilters reads the filters from normalised options. An empty allow-list is no
// allow-list (dspy-session loads [] as None).
func newFilters(o Options) filters {
	f := filters{exclude: map[string]bool{}}
	for _, x := range o.ExcludeFields {
		f.exclude[x] = true
	}
	f.exclude[o.HistoryField] = true
	if len(o.HistoryInputFields) > 0 {
		f.allow = map[string]bool{}
		for _, x := range o.HistoryInputFields {
			f.allow[x] = true
		}
	}
	return f
}

// message builds the history message a turn contributes: its inputs, then its outputs
// (an output of an input's name takes the input's place), values shared. Every turn
// keeps one, so it is built in one step (one allocation for up to four keys).
func (f filters) message(inputs, outputs *sig.Map) *sig.Map {
	var kb [8]string
	var vb [8]any
	keys, vals := kb[:0], vb[:0]
	for i := range inputs.Len() {
		if k, v := inputs.Entry(i); !f.exclude[k] && (f.allow == nil || f.allow[k]) {
			keys, vals = append(keys, k), append(vals, v)
		}
	}
	nIn := len(keys)
	for i := range outputs.Len() {
		k, v := outputs.Entry(i)
		switch j := slices.Index(keys[:nIn], k); {
		case f.exclude[k]:
		case j >= 0:
			vals[j] = v
		default:
			keys, vals = append(keys, k), append(vals, v)
		}
	}
	m, mv := sig.MakeMap(keys)
	copy(mv, vals)
	return m
}

// msgLog is the history messages of a line of turns by depth (msgs[d-1-off] is the
// message of the turn at depth d), shared by the line's nodes: a session's history is a
// window of it, shared rather than copied (without a window it is every earlier turn, so
// copying it made each turn cost the whole conversation). It only grows: a turn added
// after a node that is not the line's last (after an undo, on a fork) starts a new line
// holding a copy of what comes before it. off is the depth before the line's first
// message: a session restored from the last turns of a branch (RestoreTail) has no
// messages of the turns before them. mu guards msgs against a fork appending meanwhile.
type msgLog struct {
	mu   sync.Mutex
	off  int
	msgs []*sig.Map
}

// newNode is the node of turn t after parent, its message on parent's line. A node
// without a parent is at depth base+1 (base > 0: the first of the turns a RestoreTail
// holds).
func newNode(parent *node, base int, t *trace.Turn, msg *sig.Map, kids kidTips) *node {
	if parent == nil {
		return &node{turn: t, depth: base + 1, msg: msg, kids: kids, log: &msgLog{off: base, msgs: []*sig.Map{msg}}}
	}
	pl, lg := parent.log, parent.log
	pl.mu.Lock()
	if pl.off+len(pl.msgs) == parent.depth {
		pl.msgs = append(pl.msgs, msg)
	} else {
		held := parent.depth - pl.off
		msgs := make([]*sig.Map, held, held+1)
		copy(msgs, pl.msgs)
		lg = &msgLog{off: pl.off, msgs: append(msgs, msg)}
	}
	pl.mu.Unlock()
	return &node{turn: t, parent: parent, depth: parent.depth + 1, msg: msg, kids: kids, log: lg}
}

// window is the messages of the turns at depths (from, to] of nd's line, shared; on a
// line that starts later (RestoreTail) only those it holds.
func (nd *node) window(from, to int) []*sig.Map {
	nd.log.mu.Lock()
	defer nd.log.mu.Unlock()
	from, to = max(from-nd.log.off, 0), to-nd.log.off
	return nd.log.msgs[from:to:to]
}

// buildHistory is the tip's history: the turns after since (exclusive; nil = the
// beginning), at most the window, with seed messages before them while the window has
// room. From the beginning it is a window of the tip's line, shared; since a node (a
// per-turn child's start) it walks back to it, the turns of one outer turn.
func (s *Session) buildHistory(since *node) sig.History {
	limit := -1
	if s.opts.MaxTurns != nil {
		limit = *s.opts.MaxTurns
	}
	stored := s.storedCount()
	if since == nil && s.tip != nil && s.tip.log != nil {
		k := stored
		if limit >= 0 {
			k = min(k, limit)
		}
		turns := s.tip.window(s.tip.depth-k, s.tip.depth)
		seed := s.seed.Messages
		room := len(seed)
		if limit >= 0 {
			room = min(room, max(limit-k, 0))
		}
		if room == 0 {
			if turns == nil {
				turns = []*sig.Map{}
			}
			return sig.History{Messages: turns}
		}
		msgs := make([]*sig.Map, 0, room+len(turns))
		return sig.History{Messages: append(append(msgs, seed[len(seed)-room:]...), turns...)}
	}
	var rev []*sig.Map
	nd := s.tip
	for i := 0; nd != nil && nd != since && i < stored && (limit < 0 || len(rev) < limit); i++ {
		rev = append(rev, nd.msg)
		nd = nd.parent
	}
	seed := s.seed.Messages
	if since != nil {
		seed = nil // per-turn scope: only this outer turn's calls
	}
	room := len(seed)
	if limit >= 0 && limit-len(rev) < room {
		room = max(limit-len(rev), 0)
	}
	msgs := make([]*sig.Map, 0, room+len(rev))
	msgs = append(msgs, seed[len(seed)-room:]...)
	for i := len(rev) - 1; i >= 0; i-- {
		msgs = append(msgs, rev[i])
	}
	return sig.History{Messages: msgs}
}

// historyLog derives, in O(1) per turn, the history buildHistory(nil) gives the next turn
// of a session that only grows (as in Restore): buildHistory walks back from the tip, so
// deriving every turn's snapshot that way cost O(n²) on an unwindowed branch. The log
// holds the seed messages followed by every added turn's message; a snapshot is a window
// of it. Snapshots share the log's array, capped so appending to one copies instead of
// overwriting a later message.
type historyLog struct {
	msgs      []*sig.Map
	nSeed     int
	maxTurns  int // -1: no window
	maxStored int // -1: every turn is kept
}

func newHistoryLog(o Options, seed sig.History) *historyLog {
	l := &historyLog{msgs: append([]*sig.Map(nil), seed.Messages...), nSeed: len(seed.Messages), maxTurns: -1, maxStored: -1}
	if o.MaxTurns != nil {
		l.maxTurns = *o.MaxTurns
	}
	if o.MaxStoredTurns != nil {
		l.maxStored = *o.MaxStoredTurns
	}
	return l
}

func (l *historyLog) add(m *sig.Map) { l.msgs = append(l.msgs, m) }

// snapshot is what buildHistory(nil) gives after the added turns.
func (l *historyLog) snapshot() sig.History {
	depth := len(l.msgs) - l.nSeed
	k := depth // turns buildHistory may walk back over (max_stored_turns)
	if l.maxStored >= 0 {
		k = min(k, l.maxStored)
	}
	if l.maxTurns >= 0 {
		k = min(k, l.maxTurns)
	}
	room := l.nSeed
	if l.maxTurns >= 0 && l.maxTurns-k < room {
		room = max(l.maxTurns-k, 0)
	}
	end := l.nSeed + depth
	var msgs []*sig.Map
	switch {
	case room+k == 0:
		msgs = []*sig.Map{}
	case k == depth || room == 0:
		// seed tail and turn messages are adjacent in the log
		msgs = l.msgs[end-k-room : end : end]
	default:
		// max_stored_turns dropped turns between the seed and the stored ones
		msgs = make([]*sig.Map, 0, room+k)
		msgs = append(msgs, l.msgs[l.nSeed-room:l.nSeed]...)
		msgs = append(msgs, l.msgs[end-k:end]...)
	}
	return sig.History{Messages: msgs}
}

// HistoryBuilder is the engine's history builder for turns given one at a time, oldest
// first, without a module: what a session with these options and this seed would have
// sent each turn (the seed, every earlier turn's filtered message, the window). Exports
// use it so that a stored conversation's examples equal Session.ToExamples.
type HistoryBuilder struct {
	filters
	log *historyLog
	n   int
}

// NewHistoryBuilder checks and normalises the options as Sessionify does.
func NewHistoryBuilder(o Options, seed sig.History) (*HistoryBuilder, error) {
	o, err := o.normalize()
	if err != nil {
		return nil, err
	}
	return &HistoryBuilder{filters: newFilters(o), log: newHistoryLog(o, seed)}, nil
}

// Snapshot is the history the next turn sees: the turn's own when it is explicit (as
// Restore keeps it), else the derived one.
func (b *HistoryBuilder) Snapshot(next *trace.Turn) sig.History {
	if next != nil && next.Explicit {
		return next.History
	}
	return b.log.snapshot()
}

// Add records a turn, whose message the following turns see.
func (b *HistoryBuilder) Add(t *trace.Turn) {
	b.log.add(b.message(t.Inputs, t.Outputs))
	b.n++
}

// Len is the number of turns added.
func (b *HistoryBuilder) Len() int { return b.n }
