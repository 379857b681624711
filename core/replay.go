package core

import (
	"fmt"
	"runtime"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// A restore replays the stored turns of a branch into a new session, oldest first. What
// each turn pushes, the root's record of it and each keep-child's turn with their
// history messages, depends only on the turn and on the session's shape, not on the
// turns before it: it is planned (planTurns), then linked in order (link). Planning is
// most of a restore's allocations (at 1,000 turns 1 of its 1.35 MB, each byte a page
// fault in a new process), so a long restore plans its later turns on the other cores
// while it links the first.

// replayChunkMin is the fewest turns a chunk planned beside the linking holds: a shorter
// restore costs less than starting a goroutine. replayChunksMax bounds the chunks, one a
// core.
const (
	replayChunkMin  = 128
	replayChunksMax = 8
)

// turnPlan is what one stored turn pushes: the root's record and message, and its
// keep-children's turns in the order restoring pushes them.
type turnPlan struct {
	root *trace.Turn
	msg  *sig.Map
	kids []childPush
}

// childPush is one turn a keep-child is given.
type childPush struct {
	s   *Session
	t   *trace.Turn
	msg *sig.Map
}

// replay pushes the restored turns, oldest first.
func (s *Session) replay(turns []*trace.Turn) error {
	for i, t := range turns {
		if t == nil {
			return fmt.Errorf("restore %s: turn %d is nil", s.name, i)
		}
	}
	plans := make([]turnPlan, len(turns))
	k := min(runtime.GOMAXPROCS(0), replayChunksMax, len(turns)/replayChunkMin)
	if k <= 1 {
		s.planTurns(turns, plans, 0, len(turns))
		s.link(plans)
		return nil
	}
	// no chunk is empty: the last starts before the end, as n/k >= replayChunkMin > k
	size := (len(turns) + k - 1) / k
	planned := make([]chan struct{}, k)
	for c := 1; c < k; c++ {
		lo, hi := c*size, min((c+1)*size, len(turns))
		planned[c] = make(chan struct{})
		go func() {
			defer close(planned[c])
			s.planTurns(turns, plans, lo, hi)
		}()
	}
	s.planTurns(turns, plans, 0, size)
	lg := s.linker()
	for c := range k {
		lo, hi := c*size, min((c+1)*size, len(turns))
		if c > 0 {
			<-planned[c]
		}
		lg.link(s, plans[lo:hi])
	}
	return nil
}

// planTurns plans turns [lo, hi) into plans. It only reads the session (its children
// and their options), so chunks are planned at once.
func (s *Session) planTurns(turns []*trace.Turn, plans []turnPlan, lo, hi int) {
	roots := make([]trace.Turn, hi-lo) // one allocation for the chunk's records
	var pushes []childPush
	ends := make([]int, hi-lo)
	for i := lo; i < hi; i++ {
		t := turns[i]
		pushes = planChildren(s, "", t.Calls, pushes)
		ends[i-lo] = len(pushes)
		roots[i-lo] = *t // the session's own record: its History may differ from the caller's
		plans[i] = turnPlan{root: &roots[i-lo], msg: s.message(t.Inputs, t.Outputs)}
	}
	from := 0
	for i := lo; i < hi; i++ {
		plans[i].kids = pushes[from:ends[i-lo]:ends[i-lo]]
		from = ends[i-lo]
	}
}

// planChildren appends the turns one outer turn's call records give the keep-children
// of s whose calls they are (prefix is s's own call path, "" for the root). A child that
// is itself a session or a module (a nested session around several predictors, or
// recursive="modules") recorded a module-level call whose Children are its inner calls:
// those go to its own children first, so its turn remembers their tips, as it does live.
func planChildren(s *Session, prefix string, calls []*trace.Call, out []childPush) []childPush {
	for _, c := range calls {
		var ch *child
		for _, cand := range s.children {
			if cand.session != nil && joinPath(prefix, cand.path) == c.Path {
				ch = cand
				break
			}
		}
		if ch == nil || c.Error != "" || c.Outputs == nil {
			continue
		}
		switch {
		case len(c.Children) == 0:
		case ch.kind == childModule:
			// recursive="modules": the parent session routes the module's inner calls too
			out = planChildren(s, prefix, c.Children, out)
		default:
			out = planChildren(ch.session, c.Path, c.Children, out)
		}
		if ch.nested != NestedKeep || ch.scope == Stateless || ch.session.opts.Lifespan == LifespanStateless {
			continue // an inheriting or stateless child keeps no turns of its own
		}
		t := &trace.Turn{Inputs: c.Inputs, Outputs: c.Outputs, History: c.History,
			Calls: []*trace.Call{}, Started: c.Started, Ended: c.Started.Add(c.Latency)}
		out = append(out, childPush{s: ch.session, t: t, msg: ch.session.message(t.Inputs, t.Outputs)})
	}
	return out
}

// linker links planned turns into a session, in order: the root's history log, which
// derives each turn's snapshot, and the children whose turns end with each root call.
type linker struct {
	log      *historyLog
	episodic []*Session
}

func (s *Session) linker() *linker {
	return &linker{log: newHistoryLog(s.opts, s.seed), episodic: s.episodicChildren()}
}

// link links all of plans.
func (s *Session) link(plans []turnPlan) { s.linker().link(s, plans) }

// link pushes planned turns, as the live session pushed them.
func (lg *linker) link(s *Session, plans []turnPlan) {
	for i := range plans {
		p := &plans[i]
		for _, k := range p.kids {
			k.s.pushMessage(k.t, nil, k.msg)
			fixIndex(k.s.tip)
		}
		for _, cs := range lg.episodic {
			cs.tip, cs.redo = nil, nil
		}
		if !p.root.Explicit {
			// Storage keeps only explicit snapshots; the rest derive from the path.
			p.root.History = lg.log.snapshot()
		}
		s.pushMessage(p.root, nil, p.msg)
		lg.log.add(s.tip.msg)
	}
}
