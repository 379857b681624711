package core

import (
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

// message builds the history message a turn contributes.
func (f filters) message(inputs, outputs *sig.Map) *sig.Map {
	m := sig.NewMap()
	inputs.Range(func(k string, v any) bool {
		if !f.exclude[k] && (f.allow == nil || f.allow[k]) {
			m.Set(k, v)
		}
		return true
	})
	outputs.Range(func(k string, v any) bool {
		if !f.exclude[k] {
			m.Set(k, v)
		}
		return true
	})
	return m
}

// buildHistory walks back from the tip to since (exclusive; nil = the beginning) collecting
// at most the window, then prepends seed messages while the window has room. Its cost
// is bounded by the window, not by the number of turns.
func (s *Session) buildHistory(since *node) sig.History {
	limit := -1
	if s.opts.MaxTurns != nil {
		limit = *s.opts.MaxTurns
	}
	stored := s.storedCount()
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
