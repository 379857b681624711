package sessions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/storage"
)

// The first call made ahead. A new process's first turn on a long branch cannot make
// its first model call before the branch's session is restored (at 1,000 turns about
// 6 ms of `sessionbench run`, nearly all it spends beyond the model). The process that
// ran the branch's last turn therefore keeps, in the store, the history the next turn's
// first call will send, as its session renders it (storage.FirstCall, written as the
// process leaves: KeepFirstCalls). `run` reads it while the session is restored
// (RestoreAhead), and once it has its inputs (CallAhead) makes the request from it and
// sends it, before the session is ready. The turn then runs on the restored session as
// always; its first call finds the answer already coming (aheadLM), but only when its
// own request is the one sent ahead, message for message and with the same parameters.
// Otherwise the call ahead is cancelled and the turn's own request is sent: a wasted
// call, which only a change the stored record could not see would cause (an agent
// whose first call depends on more than its inputs); the record holds the agent's
// definition (agentKey), the predictor and which of the turn's inputs it was given.

// firstAhead is the branch's FirstCall as RestoreAhead read it, with the session to
// make its request (built, no turn restored), and the call made from it.
type firstAhead struct {
	ready chan struct{} // closed once fc and s are set (nil when there is none)
	fc    *storage.FirstCall
	s     *core.Session
	// asked is set when CallAhead was called, decided closed once it made its call
	// (spec) or made none
	asked   atomic.Bool
	decided chan struct{}
	spec    atomic.Pointer[speculation]
}

// call is the call CallAhead made, once it decided, if it was asked to (nil: none).
func (fa *firstAhead) call() *speculation {
	if fa.asked.Load() {
		<-fa.decided
	}
	return fa.spec.Load()
}

// newFirstAhead is a firstAhead whose FirstCall is still to be read (read).
func newFirstAhead() *firstAhead {
	return &firstAhead{ready: make(chan struct{}), decided: make(chan struct{})}
}

// read reads the branch's FirstCall, and builds the session its request is made with,
// when the FirstCall follows the branch's tip and was rendered by the conversation's
// agent as it is now defined. RestoreAhead reads it before it restores the session:
// what it reads is then the first thing it has, and the call made from it waits for no
// restore.
func (fa *firstAhead) read(ctx context.Context, a *Service, conv, branch string) {
	func() {
		defer close(fa.ready)
		fc, ref, err := a.store.FirstCall(ctx, conv, branch)
		if err != nil || fc == nil {
			return
		}
		ag, err := a.agentOf(conv, ref)
		if err != nil || hashKey(agentKey(ag)) != fc.Agent {
			return
		}
		mod, opts, err := ag.Build()
		if err != nil {
			return
		}
		if p := core.FindPredictor(mod, fc.Path); p == nil || p.LM != nil {
			return // a predictor with a model of its own is not called through a.model
		}
		s, err := core.Restore(mod, opts, nil)
		if err != nil {
			return
		}
		fa.fc, fa.s = fc, s
	}()
	if fa.fc != nil {
		a.knowFirstCall(conv, branch, fa.fc.Tip, fa.fc.History)
	}
}

// CallAhead makes the first model call of the branch's next turn, with its inputs,
// before the turn's Send has restored the branch's session, when RestoreAhead found
// what the branch's last turn left for it (storage.FirstCall). The Send uses its answer
// if its first request is the same, and cancels it otherwise. `sessionbench run` calls
// it as soon as it has the turn's inputs; it returns at once (the Send waits for what it
// decides).
func (a *Service) CallAhead(ctx context.Context, conv, branch string, inputs *sig.Map) {
	a.mu.Lock()
	ah := a.aheads[conv+"\x00"+branch]
	a.mu.Unlock()
	if ah == nil || !ah.first.asked.CompareAndSwap(false, true) {
		return
	}
	fa := ah.first
	go func() {
		defer close(fa.decided)
		<-fa.ready
		if fa.fc == nil {
			return
		}
		if _, explicit := inputs.Get(fa.s.HistoryField()); explicit {
			return // the turn gives its own history
		}
		in := sig.NewMap()
		for _, f := range fa.fc.Fields {
			v, ok := inputs.Get(f)
			if !ok {
				return
			}
			in.Set(f, v)
		}
		req, ok, err := fa.s.NextCallRequest(fa.fc.Path, fa.fc.History, in)
		if !ok || err != nil {
			return
		}
		fa.spec.Store(a.speculate(ctx, req))
		a.ahead.made.Add(1)
	}()
}

// speculation is a model call made ahead of the turn that will want it.
type speculation struct {
	req    lm.Request
	cancel context.CancelFunc
	done   chan struct{}
	resp   lm.Response
	err    error
	// claimed is set by the first call of the turn, which takes the answer or cancels
	// it (a later call never sees it)
	claimed atomic.Bool
	// what streams, held until the call takes it over, then passed on
	mu     sync.Mutex
	deltas relay[string]
	tries  relay[lm.Try]
}

// relay holds what arrives for a callback not yet given, and passes on what arrives
// once it is (the speculation's mu guards it).
type relay[T any] struct {
	held  []T
	to    func(T)
	given bool
}

// put passes v on, or holds it (mu held).
func (r *relay[T]) put(v T) {
	if !r.given {
		r.held = append(r.held, v)
	} else if r.to != nil {
		r.to(v)
	}
}

// give passes what is held to to, and what arrives from now on (mu held; to may be
// nil: dropped).
func (r *relay[T]) give(to func(T)) {
	r.to, r.given = to, true
	for _, v := range r.held {
		r.put(v)
	}
	r.held = nil
}

// speculate sends req to the service's model in the background.
func (a *Service) speculate(ctx context.Context, req lm.Request) *speculation {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	sp := &speculation{req: req, cancel: cancel, done: make(chan struct{})}
	req.OnDelta = func(d string) {
		sp.mu.Lock()
		defer sp.mu.Unlock()
		sp.deltas.put(d)
	}
	req.OnTry = func(t lm.Try) {
		sp.mu.Lock()
		defer sp.mu.Unlock()
		sp.tries.put(t)
	}
	go func() {
		defer close(sp.done)
		sp.resp, sp.err = a.model.Call(ctx, req)
	}()
	return sp
}

// abandon cancels the call when no turn took it, and says whether it did.
func (sp *speculation) abandon() bool {
	if sp.claimed.CompareAndSwap(false, true) {
		sp.cancel()
		return true
	}
	return false
}

// take hands the call's answer to req, the turn's first request, when req is the
// request sent ahead: what streamed so far, then the rest as it comes; the answer is
// then sp.resp and sp.err. It says false (the call cancelled) when req is another
// request, or when a call took it before.
func (sp *speculation) take(ctx context.Context, req lm.Request) bool {
	if !sp.claimed.CompareAndSwap(false, true) {
		return false
	}
	if !sameRequest(sp.req, req) {
		sp.cancel()
		return false
	}
	sp.mu.Lock()
	sp.tries.give(req.OnTry)
	sp.deltas.give(req.OnDelta)
	sp.mu.Unlock()
	select {
	case <-sp.done:
	case <-ctx.Done():
		sp.cancel()
		<-sp.done
	}
	return true
}

// sameRequest says whether a and b send the same: the same messages, parameters and
// predictor.
func sameRequest(a, b lm.Request) bool {
	return a.Meta.Path == b.Meta.Path && a.Meta.Adapter == b.Meta.Adapter && reflect.DeepEqual(a.Params, b.Params) &&
		a.Messages.Equal(b.Messages)
}

// aheadLM is the model a turn runs with while a call made ahead waits for it: its
// first call takes that call's answer when it sends the same request.
type aheadLM struct {
	lm.LM
	sp    *speculation
	taken *atomic.Int64 // counts the calls taken
}

func (m aheadLM) Call(ctx context.Context, req lm.Request) (lm.Response, error) {
	if m.sp.take(ctx, req) {
		m.taken.Add(1)
		return m.sp.resp, m.sp.err
	}
	return m.LM.Call(ctx, req)
}

// hashKey is an agentKey as the store keeps it.
func hashKey(k string) string {
	h := sha256.Sum256([]byte(k))
	return hex.EncodeToString(h[:16])
}

// knowFirstCall notes what the store holds as the branch's FirstCall: after turn tip,
// history.
func (a *Service) knowFirstCall(conv, branch, tip string, history lm.MessageList) {
	st := a.cache.state(conv + "\x00" + branch)
	st.first.mu.Lock()
	st.first.tip, st.first.history = tip, history
	st.first.mu.Unlock()
}

// KeepFirstCalls writes, for each branch the service holds a session of, what the
// branch's next turn's first call will send for its history (storage.FirstCall), when
// the branch's last turn's first call was a predictor's given some of the turn's
// inputs as they are: what the next process's CallAhead sends from. A process calls it
// once, before it closes the store (`run`, the workbench): one write a branch, none on
// a turn's path.
func (a *Service) KeepFirstCalls(ctx context.Context) {
	ctx = context.WithoutCancel(ctx) // an interrupted run keeps its turns' too
	for k, st := range a.cache.states() {
		conv, branch, _ := strings.Cut(k, "\x00")
		st.mu.Lock()
		fc := firstCallOf(st)
		st.mu.Unlock()
		if fc == nil {
			continue
		}
		st.first.mu.Lock()
		prevTip, prev := st.first.tip, st.first.history
		st.first.mu.Unlock()
		held := 0
		if prevTip != "" {
			held = prev.CommonPrefix(fc.History)
		}
		if a.store.PutFirstCall(ctx, conv, branch, fc, prevTip, held) == nil {
			a.knowFirstCall(conv, branch, fc.Tip, fc.History)
		}
	}
}

// firstCallOf is the FirstCall of branch state st at its tip, from its session, or
// nil when its last turn's first call is not one to make ahead (caller holds st.mu).
func firstCallOf(st *branchState) *storage.FirstCall {
	l, p := st.live, st.path
	if l == nil || p == nil || len(p.keys) == 0 {
		return nil
	}
	key, t := p.keys[len(p.keys)-1], p.turns[len(p.turns)-1]
	if t == nil || len(t.Calls) == 0 || len(t.Calls[0].Children) > 0 {
		return nil
	}
	c := t.Calls[0]
	var fields []string
	same := true
	c.Inputs.Range(func(k string, v any) bool {
		tv, ok := t.Inputs.Get(k)
		fields = append(fields, k)
		same = ok && sig.NewMap(k, tv).Equal(sig.NewMap(k, v))
		return same
	})
	if !same {
		return nil
	}
	hist, ok, err := l.run.s.NextCallHistory(c.Path)
	if !ok || err != nil {
		return nil
	}
	return &storage.FirstCall{Tip: key, Agent: hashKey(l.agentKey), Path: c.Path, Fields: fields, History: hist}
}
