package core

import (
	"fmt"
	"math"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// Restore rebuilds a session from recorded turns (for example one branch's path loaded from
// storage), oldest first. NestedKeep-children need nothing stored of their own: a child's turns are
// its call records along the path (ARCHITECTURE.md), so they are replayed from each turn's calls,
// down into nested modules (per_turn children included; their history resets per outer
// turn anyway).
// Turn indices and explicit snapshots are kept as recorded; other snapshots are derived
// from the path with the session's settings, as Load does.
//
// The session shares the turns' values, calls and histories instead of deep-copying them
// (a call's history grows with the branch, so copies made restoring a long unwindowed
// branch cost O(n²)): the caller must not change the turns afterwards. The turns
// themselves are not modified.
func Restore(module Module, opts Options, turns []*trace.Turn) (*Session, error) {
	s, _, err := RestoreTail(module, opts, 0, turns)
	return s, err
}

// RestoreTail is Restore from the turns of a branch from index first on (first > 0: the
// earlier ones are left out; turns holds the rest, up to the tip). A session keeps
// reading only the last turns when every history in it has a window (max_turns or
// max_stored_turns): exact reports whether the turns given cover what the next turn's
// histories read, the root's and every child's that keeps turns of its own, so the next
// turn sends exactly what a session restored from the whole branch would (with first 0
// it always does). The session knows its length (first + len(turns)); HistoryAt answers
// for the turns whose window it holds, and Undo stops at the first turn it holds.
func RestoreTail(module Module, opts Options, first int, turns []*trace.Turn) (s *Session, exact bool, err error) {
	if first < 0 {
		return nil, false, fmt.Errorf("restore: first turn %d is negative", first)
	}
	s, err = Sessionify(module, opts)
	if err != nil {
		return nil, false, err
	}
	if first > 0 {
		s.base, s.partial = first, true
		s.exactFrom = math.MaxInt
		if w := s.window(); w >= 0 {
			s.exactFrom = first + w
		}
	}
	if err := s.replay(turns); err != nil {
		return nil, false, err
	}
	return s, first == 0 || s.holdsWindows(), nil
}

// Exact reports whether the next turn's histories are what a session holding every turn
// of its branch would give: always, unless restored from a tail (RestoreTail) that does
// not, or no longer (after an undo), hold the windows they read.
func (s *Session) Exact() bool {
	if !s.partial {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.holdsWindows()
}

// window is the most turns the session's history reads (max_turns, max_stored_turns),
// -1 without a bound.
func (s *Session) window() int {
	w := -1
	for _, p := range []*int{s.opts.MaxTurns, s.opts.MaxStoredTurns} {
		if p != nil && (w < 0 || *p < w) {
			w = max(*p, 0)
		}
	}
	return w
}

// holdsWindows reports whether a session restored from a tail holds every turn the next
// turn's histories read: its own window, and the window of each child that keeps turns
// of its own across outer turns (the children planChildren fills; per-turn ones start
// each outer turn afresh, episodic ones each root call).
func (s *Session) holdsWindows() bool {
	if w := s.window(); w < 0 || s.held() < w {
		return false
	}
	return s.childrenHoldWindows()
}

func (s *Session) childrenHoldWindows() bool {
	for _, ch := range s.children {
		cs := ch.session
		if cs == nil {
			continue
		}
		if ch.kind == childSession && !cs.childrenHoldWindows() {
			return false
		}
		if ch.nested != NestedKeep || ch.scope == Stateless || ch.scope == PerTurn || cs.opts.Lifespan != LifespanPersistent {
			continue
		}
		if w := cs.window(); w < 0 || cs.held() < w {
			return false
		}
	}
	return true
}

// held counts the turns the session holds (after a RestoreTail, fewer than its length).
func (s *Session) held() int {
	n := 0
	for nd := s.tip; nd != nil; nd = nd.parent {
		n++
	}
	return n
}

// episodicChildren are the children whose lifespan ends their turns with each root call:
// Restore clears them after each turn, as the live session did (their consolidated L2
// memory is not in the call records, so a restored session starts with what its options
// give).
func (s *Session) episodicChildren() []*Session {
	var out []*Session
	for _, n := range s.sessionTree()[1:] {
		if l := n.s.opts.Lifespan; l == LifespanEpisodic || l == LifespanStateless {
			out = append(out, n.s)
		}
	}
	return out
}

// fixIndex numbers a restored child turn after its parent.
func fixIndex(nd *node) {
	if nd.parent != nil {
		nd.turn.Index = nd.parent.turn.Index + 1
	} else {
		nd.turn.Index = 0
	}
}

// Seed replaces the session's initial history (e.g. a stored conversation's seed).
func (s *Session) Seed(h sig.History) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seed = h.Clone()
}
