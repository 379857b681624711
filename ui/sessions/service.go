// Package sessions is the application service over stored sessions: it runs turns on a
// conversation's stored branches (restoring the branch's core.Session from its path,
// running it with a storage sink so every inner call is committed as it finishes, and
// letting the branch tip move), forks, undoes and redoes, resumes interrupted turns and
// renders what a recorded call sends under each history strategy. The workbench (ui) and
// the headless commands (ui/cli) both use it; it knows nothing of terminals.
package sessions

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/core/workflow"
	"github.com/sessionbench/sessionbench/demo"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/storage/capture"
)

// Service runs and inspects the turns of stored conversations; safe for concurrent use
// (turns on one branch are serialised).
type Service struct {
	store *storage.Store
	model lm.LM
	// resolver finds the models that agent-file predictors name for themselves.
	resolver workflow.ModelResolver
	files    *Catalog
	// mu serialises turns per branch: one writer per branch path at a time.
	mu    sync.Mutex
	locks map[string]*sync.Mutex
	// cache keeps the paths and sessions of the branches in use (checked against the
	// store's tip on every use), so consecutive Sends neither reload nor restore the
	// whole branch.
	cache branchCache
	// tails is how many of a branch's last turns a session of each agent (by agentKey)
	// is restored from (0: all of them); guarded by mu.
	tails map[string]int
	// turns keeps the turns pages were read with (LoadTurns: without requests and
	// histories).
	turns turnCache
	// histories reads the histories previews show, callHists keeps those read (by turn
	// and call).
	histories *storage.HistoryReader
	callHists pathCache[sig.History]
	// warm is what this service has warmed up (warm.go).
	warm warmed
	// aheads holds the RestoreAheads not yet taken over by a Send, by conv + "\x00" +
	// branch; guarded by mu.
	aheads map[string]*aheadTurn
	// ahead counts the first calls made ahead (CallAhead) and those a turn took.
	ahead struct{ made, taken atomic.Int64 }
}

// New returns the service over an open store and a model. Agent files are looked for in
// AgentDirs(os.Getenv); SetAgentDirs changes that.
func New(store *storage.Store, model lm.LM) *Service {
	a := &Service{store: store, model: model, locks: map[string]*sync.Mutex{}, tails: map[string]int{},
		histories: store.NewHistoryReader()}
	a.files = DefaultCatalog()
	return a
}

// SetModelResolver lets agent-file predictors that name their own model (model = "..."
// in the file) find it; without one such a predictor's call fails with a clear error.
func (a *Service) SetModelResolver(r workflow.ModelResolver) { a.resolver = r }

func (a *Service) branchLock(conv, branch string) *sync.Mutex {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := conv + "\x00" + branch
	if a.locks[k] == nil {
		a.locks[k] = &sync.Mutex{}
	}
	return a.locks[k]
}

// ModelName labels the model.
func (a *Service) ModelName() string { return a.model.Name() }

func agentInfo(ag demo.Agent) AgentInfo {
	return AgentInfo{Name: ag.Name, Description: ag.Description, Signature: ag.Signature()}
}

// Strategies are the five history strategies of seed 000 §6 (core.Strategies: the one
// source of their names).
func (a *Service) Strategies() []core.StrategyInfo { return core.Strategies }

// Conversations lists stored conversations.
func (a *Service) Conversations(ctx context.Context) ([]ConversationInfo, error) {
	rows, err := a.store.ListConversations(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ConversationInfo, len(rows))
	for i, r := range rows {
		out[i] = ConversationInfo{ID: r.ID, Title: r.Title, Agent: a.files.Name(r.Agent), Status: r.Status, Kept: r.Kept,
			Recorded: capture.Recorded(r.Agent), Branches: r.Branches, Turns: r.Turns, Updated: r.UpdatedAt}
	}
	return out, nil
}

// NewConversation creates a conversation (with its main branch). agent is a built-in
// agent's name, an agent file's name (found in the agent directories) or an agent
// file's path; the conversation stores the built-in name or the file's absolute path,
// so a file agent is found again on reopen wherever the workbench starts.
func (a *Service) NewConversation(ctx context.Context, agent, title string) (ConversationInfo, error) {
	ag, err := a.files.Resolve(agent)
	if err != nil {
		return ConversationInfo{}, fmt.Errorf("new conversation: %w", err)
	}
	if title == "" {
		title = ag.Name + " conversation"
	}
	c, err := a.store.CreateConversation(ctx, storage.NewConversation{Title: title, Agent: AgentRef(ag)})
	if err != nil {
		return ConversationInfo{}, err
	}
	return ConversationInfo{ID: c.ID, Title: c.Title, Agent: ag.Name, Status: c.Status, Branches: 1, Updated: c.UpdatedAt}, nil
}

// RenameConversation sets the title.
func (a *Service) RenameConversation(ctx context.Context, conv, title string) error {
	return a.store.SetTitle(ctx, conv, title)
}

// DeleteConversation removes a conversation entirely.
func (a *Service) DeleteConversation(ctx context.Context, conv string) error {
	return a.store.DeleteConversation(ctx, conv)
}

// Branches lists a conversation's branches with token totals of their paths.
func (a *Service) Branches(ctx context.Context, conv string) ([]BranchInfo, error) {
	bs, err := a.store.Branches(ctx, conv)
	if err != nil {
		return nil, err
	}
	usage, err := a.store.BranchUsage(ctx, conv)
	if err != nil {
		return nil, err
	}
	out := make([]BranchInfo, len(bs))
	for i, b := range bs {
		out[i] = BranchInfo{Name: b.Name, Tip: b.Tip, Turns: b.Length, Model: a.model.Name(), Usage: usage[b.Name], Redo: b.Redo}
	}
	return out, nil
}

// Branch is one branch's row as Branches lists it, read alone (indexed lookups): what
// the workbench refreshes after an undo, a redo or a fork instead of every branch.
func (a *Service) Branch(ctx context.Context, conv, name string) (BranchInfo, error) {
	b, err := a.store.BranchRow(ctx, conv, name)
	if err != nil {
		return BranchInfo{}, err
	}
	u, err := a.store.BranchUsageOf(ctx, conv, name)
	if err != nil {
		return BranchInfo{}, err
	}
	return BranchInfo{Name: b.Name, Tip: b.Tip, Turns: b.Length, Model: a.model.Name(), Usage: u, Redo: b.Redo}, nil
}

// TurnTree is every committed turn, parents first. A node's InputPreview and
// OutputPreview are its first input and output value on one line (storage keeps them,
// so a long conversation's tree decodes no JSON).
func (a *Service) TurnTree(ctx context.Context, conv string) ([]storage.TurnNode, error) {
	nodes, err := a.store.TurnOutline(ctx, conv)
	if err != nil {
		return nil, err
	}
	out := make([]storage.TurnNode, 0, len(nodes))
	for _, n := range nodes {
		if n.Status == trace.StatusCompleted {
			out = append(out, *n)
		}
	}
	return out, nil
}

// TurnTreePage is up to limit turns of the tree after the turn after ("" for the first
// page), parents before children, and the key to continue from ("" after the last page):
// the navigator shows the tree as its pages arrive instead of waiting for the whole of a
// long conversation. Turns kept beside their branch (failed, cancelled, interrupted,
// running elsewhere) are listed with their Status, as leaves of the turn they followed.
func (a *Service) TurnTreePage(ctx context.Context, conv, after string, limit int) ([]storage.TurnNode, string, error) {
	nodes, next, err := a.store.TurnTreePage(ctx, conv, after, limit)
	if err != nil {
		return nil, "", err
	}
	out := make([]storage.TurnNode, len(nodes))
	for i, n := range nodes {
		out[i] = *n
	}
	return out, next, nil
}

// Turn loads one turn.
func (a *Service) Turn(ctx context.Context, conv, turn string) (*trace.Turn, error) {
	return a.store.LoadTurn(ctx, turn)
}

// turnRun is a branch's restored session, ready to run a turn.
type turnRun struct {
	s     *core.Session
	mod   core.Module
	sink  *storage.BranchSink
	agent demo.Agent
	// conv and branch are where the sink stores the turns.
	conv, branch string
}

// conversationAgent finds the agent a conversation runs (or override, when set).
func (a *Service) conversationAgent(ctx context.Context, conv, override string) (demo.Agent, error) {
	ref := override
	if ref == "" {
		var err error
		if ref, err = a.store.ConversationAgent(ctx, conv); err != nil {
			return demo.Agent{}, err
		}
	}
	return a.agentOf(conv, ref)
}

// agentOf is the agent ref names, for conversation conv.
func (a *Service) agentOf(conv, ref string) (demo.Agent, error) {
	if capture.Recorded(ref) {
		return demo.Agent{}, fmt.Errorf("conversation %s was recorded by `sessionbench proxy` from a program that runs outside sessionbench: its calls can be inspected, previewed and exported, but it takes no turns here", conv)
	}
	ag, err := a.files.Resolve(ref)
	if err != nil {
		return demo.Agent{}, fmt.Errorf("conversation %s: %w", conv, err)
	}
	return ag, nil
}

// session is the branch's engine session, wired to store its turns: the one kept for the
// branch (for the conversation's own agent), or restored from its path for another.
// It is the caller's alone to run a turn on.
func (a *Service) session(ctx context.Context, conv, branch, agentOverride string) (*turnRun, error) {
	if agentOverride == "" {
		_, _, l, err := a.liveState(ctx, conv, branch, true, false)
		if err != nil {
			return nil, err
		}
		return l.run, nil
	}
	defer pauseGC()() // over the path's load and the restore (gcpause.go)
	path, err := a.branchPath(ctx, conv, branch)
	if err != nil {
		return nil, err
	}
	return a.restore(ctx, conv, branch, agentOverride, 0, path.turns)
}

// sessionFrom restores the session from the branch's path turns (shared, not changed).
func (a *Service) sessionFrom(ctx context.Context, conv, branch, agentOverride string, turns []*trace.Turn) (*turnRun, error) {
	return a.restore(ctx, conv, branch, agentOverride, 0, turns)
}

// restore is sessionFrom with the agent run under strategy (0: as configured).
func (a *Service) restore(ctx context.Context, conv, branch, agentOverride string, strategy int, turns []*trace.Turn) (*turnRun, error) {
	ag, err := a.conversationAgent(ctx, conv, agentOverride)
	if err != nil {
		return nil, err
	}
	r, _, err := a.restoreAgent(ag, conv, branch, strategy, 0, turns)
	return r, err
}

// restoreAgent restores agent ag's session from the branch's path turns from index
// first on (see core.RestoreTail: exact says whether they were enough). The session
// keeps its calls without their requests (record "calls"): the store has them, and a
// session kept between turns would otherwise hold every request of the branch.
func (a *Service) restoreAgent(ag demo.Agent, conv, branch string, strategy, first int, turns []*trace.Turn) (*turnRun, bool, error) {
	defer pauseGC()()
	mod, opts, err := ag.Build()
	if err != nil {
		return nil, false, fmt.Errorf("agent %s: %w", ag.Name, err)
	}
	if strategy > 0 {
		if err := applyStrategy(mod, &opts, strategy, agentInfo(ag).Signature); err != nil {
			return nil, false, fmt.Errorf("agent %s under strategy %d: %w", ag.Name, strategy, err)
		}
	}
	sink := a.store.Sink(conv, branch)
	opts.Record = core.RecordCalls
	opts.Sink = sink
	s, exact, err := core.RestoreTail(mod, opts, first, turns)
	if err != nil {
		return nil, false, fmt.Errorf("restore branch %s: %w", branch, err)
	}
	return &turnRun{s: s, mod: mod, sink: sink, agent: ag, conv: conv, branch: branch}, exact, nil
}

// sendPauseMax bounds how long a Send holds the collector off before its first call.
const sendPauseMax = 100 * time.Millisecond

// run runs one turn of r with model, streaming to events. gc is a pause of the collector
// (pauseGC) that ends once the turn's first call is on its way, or with the turn (nil:
// none).
func (a *Service) run(ctx context.Context, r *turnRun, model lm.LM, resolver workflow.ModelResolver, inputs *sig.Map, events chan<- Event, gc func()) (*trace.Turn, error) {
	var gcEnding atomic.Bool
	if gc != nil {
		defer gc()
	}
	obs := newObserver(events, r.mod)
	obs.started = func(c *trace.Call) {
		if gc != nil && gcEnding.CompareAndSwap(false, true) {
			time.AfterFunc(warmAfter, gc)
		}
		a.warmAtCall(ctx, r.conv, r.branch)
		r.sink.PrepareCall(context.WithoutCancel(ctx), c)
	}
	ctx = core.WithObserver(core.WithLM(ctx, model), obs)
	if resolver != nil {
		ctx = workflow.WithModelResolver(ctx, resolver)
	}
	_, t, err := r.s.Run(ctx, inputs)
	if err != nil {
		if key := r.sink.Began(); t != nil && key != "" {
			return nil, &KeptTurnError{Key: key, Turn: t, Err: err}
		}
		return nil, err
	}
	if t != nil {
		send(events, Event{Kind: EventTurn, Turn: t})
	}
	return t, nil
}

// Send runs one turn on the branch's tip, on the session kept for the branch.
func (a *Service) Send(ctx context.Context, req SendRequest, events chan<- Event) (*trace.Turn, error) {
	l := a.branchLock(req.Conv, req.Branch)
	l.Lock()
	defer l.Unlock()
	// the collector waits until the turn's first request is on its way, or for
	// sendPauseMax at most (an agent may work a while before it calls a model): the
	// restore, if any, and the request then do not share the CPU with it (gcpause.go)
	gc := pauseGC()
	defer gc()
	defer time.AfterFunc(sendPauseMax, gc).Stop()
	// the branch locked for the turn first, so that the session is restored from the
	// branch the turn follows (storage.TurnHold), which the turn then begins on
	hold, spec, err := a.holdTurn(ctx, req.Conv, req.Branch)
	if spec != nil {
		defer spec.abandon() // when the turn made no call
	}
	if err != nil {
		return nil, err
	}
	defer hold.Release() // a no-op once the turn took it over
	st, from, live, err := a.liveStateAt(ctx, req.Conv, req.Branch, true, false, hold)
	if err != nil {
		return nil, err
	}
	live.run.sink.Adopt(hold)
	model := a.model
	if spec != nil {
		model = aheadLM{LM: a.model, sp: spec, taken: &a.ahead.taken}
	}
	t, err := a.run(ctx, live.run, model, a.resolver, req.Inputs, events, gc)
	if _, explicit := req.Inputs.Get(live.run.s.HistoryField()); !explicit && keepsLive(live.run.s) {
		// An explicit history may replace the session's; otherwise the session is the
		// branch's path, with the new turn when one was committed.
		key := ""
		if err == nil && t != nil {
			key = live.run.sink.Began()
		}
		a.giveBack(st, from, live, key, t)
	}
	return t, err
}

// locate finds a turn's position: a branch whose path holds it (main first, then by
// creation) and its index there, by ancestor lookups rather than walking the paths.
func (a *Service) locate(ctx context.Context, conv, turn string) (string, int, error) {
	b, i, err := a.store.Locate(ctx, conv, turn)
	if errors.Is(err, storage.ErrNotFound) {
		return "", 0, fmt.Errorf("turn %s is on no branch of conversation %s", turn, conv)
	}
	return b, i, err
}

// Fork makes a branch whose tip is turn.
func (a *Service) Fork(ctx context.Context, conv, turn, name string) (string, error) {
	src, at, err := a.locate(ctx, conv, turn)
	if err != nil {
		return "", err
	}
	if name == "" {
		if name, err = a.store.FreeBranchName(ctx, conv, "fork"); err != nil {
			return "", err
		}
	}
	if err := a.store.ForkOnly(ctx, conv, src, name, at); err != nil {
		return "", err
	}
	return name, nil
}

// forkBefore makes a new branch ending just before turn (empty when it is the first).
func (a *Service) forkBefore(ctx context.Context, conv, turn, name, base string) (string, error) {
	src, at, err := a.locate(ctx, conv, turn)
	if err != nil {
		return "", err
	}
	if name == "" {
		if name, err = a.store.FreeBranchName(ctx, conv, base); err != nil {
			return "", err
		}
	}
	if at == 0 {
		if _, err := a.store.CreateBranch(ctx, conv, name); err != nil {
			return "", err
		}
		return name, nil
	}
	if err := a.store.ForkOnly(ctx, conv, src, name, at-1); err != nil {
		return "", err
	}
	return name, nil
}

// EditAndResubmit runs new inputs as a sibling of turn on a new branch.
func (a *Service) EditAndResubmit(ctx context.Context, req EditRequest, events chan<- Event) (string, *trace.Turn, error) {
	name, err := a.forkBefore(ctx, req.Conv, req.Turn, req.Name, "edit")
	if err != nil {
		return "", nil, err
	}
	send(events, Event{Kind: EventBranch, Branch: name})
	t, err := a.Send(ctx, SendRequest{Conv: req.Conv, Branch: name, Inputs: req.Inputs}, events)
	return name, t, err
}

// Replay re-runs a branch from a turn on into a sibling branch, optionally with another
// agent (compare runs).
func (a *Service) Replay(ctx context.Context, req ReplayRequest, events chan<- Event) (string, error) {
	page, err := a.store.LoadBranchRangeWith(ctx, req.Conv, req.Branch, 0, 0, storage.LoadOptions{NoRequests: true})
	if err != nil {
		return "", err
	}
	turns, path := page.Turns, page.Nodes
	if len(path) == 0 {
		return "", fmt.Errorf("replay: branch %s has no turns", req.Branch)
	}
	from := req.From
	if from == "" {
		from = path[0].Key
	}
	name, err := a.forkBefore(ctx, req.Conv, from, req.Name, "replay")
	if err != nil {
		return "", err
	}
	send(events, Event{Kind: EventBranch, Branch: name})
	start := 0
	for i, n := range path {
		if n.Key == from {
			start = i
		}
	}
	model := a.model
	if req.Model != "" {
		if a.resolver == nil {
			return name, fmt.Errorf("replay with model %q: no model resolver is set", req.Model)
		}
		if model, err = a.resolver(req.Model); err != nil {
			return name, fmt.Errorf("replay with model %q: %w", req.Model, err)
		}
	}
	for _, t := range turns[start:] {
		l := a.branchLock(req.Conv, name)
		l.Lock()
		var r *turnRun
		p, err := a.branchPath(ctx, req.Conv, name)
		if err == nil {
			r, err = a.restore(ctx, req.Conv, name, req.Agent, req.Strategy, p.turns)
		}
		if err == nil {
			_, err = a.run(ctx, r, model, a.resolver, t.Inputs, events, nil)
		}
		l.Unlock()
		if err != nil {
			return name, fmt.Errorf("replay turn %d: %w", t.Index, err)
		}
	}
	return name, nil
}

// Undo moves the tip back; the inner predictors' histories follow by construction (they
// are derived from the path). The result counts the model requests of the turns taken
// off, as the rollback of their inner predictors' turns.
func (a *Service) Undo(ctx context.Context, conv, branch string, steps int) (UndoResult, error) {
	keys, err := a.store.Undo(ctx, conv, branch, steps)
	if err != nil {
		return UndoResult{}, err
	}
	res := UndoResult{Turns: len(keys)}
	if turns := a.cachedTurns(conv, branch, keys); turns != nil {
		for _, t := range turns {
			res.Calls += requests(t.Calls)
		}
		return res, nil
	}
	if res.Calls, err = a.store.CountRequests(ctx, keys); err != nil {
		return res, fmt.Errorf("undo on %s: the undone turns: %w", branch, err)
	}
	return res, nil
}

// Redo moves the tip forward again; 0 turns moved means there was nothing to redo.
func (a *Service) Redo(ctx context.Context, conv, branch string, steps int) (int, error) {
	redone, err := a.store.Redo(ctx, conv, branch, steps)
	return len(redone), err
}
