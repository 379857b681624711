// Package uitest holds an in-memory ui.Backend for the workbench's tests and benchmarks.
// It is what it says: conversations, branches and the turn tree live in maps, and its
// "model" is a deterministic echo that streams word by word. It does not run the engine,
// the real adapters or token counting; the wire renderings it produces follow a simple
// format of its own so the UI has realistic shapes to draw (several strategies, lint
// warnings, differing messages), not DSPy's exact bytes.
package uitest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/ui"
	"github.com/sessionbench/sessionbench/ui/sessions"
)

// Memory is an in-memory Backend. The zero value is not usable; use New.
type Memory struct {
	mu     sync.Mutex
	model  string
	agents []sessions.AgentInfo
	convs  map[string]*conv
	seq    int
	clock  time.Time
	// pending are interrupted turns (AddPending), oldest first.
	pending []*pendingTurn
	// kept are turns that did not complete (failed, cancelled), oldest first.
	kept []*keptTurn

	// Delay is slept between streamed words (0 streams at once).
	Delay time.Duration
	// RetryWait is the backoff announced when an input contains "[retry]".
	RetryWait time.Duration
	// prefetched lists the branches Prefetch was asked for ("conv/branch"), in order.
	prefetched []string
}

type conv struct {
	info     sessions.ConversationInfo
	nodes    map[string]*node
	order    []string // node IDs in creation order (parents first)
	branches map[string]*branch
	border   []string // branch names in creation order
	// paths memoises root-to-tip paths by tip: a node's parent never changes, so a
	// path, once computed, stays right (a 100,000-turn branch is walked once).
	paths map[string][]string
}

type node struct {
	id, parent string
	turn       *trace.Turn
}

type branch struct {
	name, tip string
	redo      []string // tips to move forward to, last = next
}

// New makes an empty backend with one agent, "support": question -> reply.
func New() *Memory {
	s := sig.New("Support", "Answer the customer's question.",
		[]sig.Field{{Name: "question", Desc: "the customer's message"}},
		[]sig.Field{{Name: "reply"}})
	return &Memory{
		model:     "memory (in-process test backend)",
		agents:    []sessions.AgentInfo{{Name: "support", Description: "answers questions", Signature: s}},
		convs:     map[string]*conv{},
		clock:     time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		RetryWait: 2 * time.Second,
	}
}

// AddAgent registers another agent.
func (m *Memory) AddAgent(a sessions.AgentInfo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.agents = append(m.agents, a)
}

// tick is a deterministic clock so golden screens do not depend on the time of day.
func (m *Memory) tick() time.Time {
	m.clock = m.clock.Add(time.Second)
	return m.clock
}

func (m *Memory) ModelName() string               { return m.model }
func (m *Memory) Agents() []sessions.AgentInfo    { return slices.Clone(m.agents) }
func (m *Memory) Strategies() []core.StrategyInfo { return core.Strategies }

func (m *Memory) Conversations(ctx context.Context) ([]sessions.ConversationInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]sessions.ConversationInfo, 0, len(m.convs))
	for _, c := range m.convs {
		out = append(out, m.infoLocked(c))
	}
	slices.SortFunc(out, func(a, b sessions.ConversationInfo) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func (m *Memory) infoLocked(c *conv) sessions.ConversationInfo {
	i := c.info
	i.Branches = len(c.branches)
	i.Turns = len(c.nodes)
	return i
}

func (m *Memory) NewConversation(ctx context.Context, agent, title string) (sessions.ConversationInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if agent == "" && len(m.agents) > 0 {
		agent = m.agents[0].Name
	}
	if _, ok := m.agentLocked(agent); !ok {
		return sessions.ConversationInfo{}, fmt.Errorf("unknown agent %q", agent)
	}
	m.seq++
	c := &conv{
		info:     sessions.ConversationInfo{ID: fmt.Sprintf("c%d", m.seq), Title: title, Agent: agent, Status: "in_progress", Updated: m.tick()},
		nodes:    map[string]*node{},
		branches: map[string]*branch{"main": {name: "main"}},
		border:   []string{"main"},
	}
	m.convs[c.info.ID] = c
	return m.infoLocked(c), nil
}

func (m *Memory) agentLocked(name string) (sessions.AgentInfo, bool) {
	for _, a := range m.agents {
		if a.Name == name {
			return a, true
		}
	}
	return sessions.AgentInfo{}, false
}

func (m *Memory) RenameConversation(ctx context.Context, id, title string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, err := m.convLocked(id)
	if err != nil {
		return err
	}
	c.info.Title = title
	return nil
}

func (m *Memory) DeleteConversation(ctx context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.convLocked(id); err != nil {
		return err
	}
	delete(m.convs, id)
	return nil
}

func (m *Memory) convLocked(id string) (*conv, error) {
	c, ok := m.convs[id]
	if !ok {
		return nil, fmt.Errorf("no conversation %q", id)
	}
	return c, nil
}

func (m *Memory) branchLocked(c *conv, name string) (*branch, error) {
	b, ok := c.branches[name]
	if !ok {
		return nil, fmt.Errorf("conversation %q has no branch %q", c.info.ID, name)
	}
	return b, nil
}

// path is the node IDs from the root to tip (shared: callers must not modify it).
func (c *conv) path(tip string) []string {
	if p, ok := c.paths[tip]; ok {
		return p
	}
	if c.paths == nil {
		c.paths = map[string][]string{}
	}
	// walk up to the nearest ancestor whose path is known, then extend that
	var up []string
	id := tip
	for ; id != ""; id = c.nodes[id].parent {
		if _, ok := c.paths[id]; ok {
			break
		}
		up = append(up, id)
	}
	base := c.paths[id]
	ids := make([]string, len(base), len(base)+len(up))
	copy(ids, base)
	for i := len(up) - 1; i >= 0; i-- {
		ids = append(ids, up[i])
	}
	c.paths[tip] = ids
	return ids
}

func (m *Memory) Branches(ctx context.Context, id string) ([]sessions.BranchInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, err := m.convLocked(id)
	if err != nil {
		return nil, err
	}
	var out []sessions.BranchInfo
	for _, name := range c.border {
		b := c.branches[name]
		bi := sessions.BranchInfo{Name: name, Tip: b.tip, Model: m.model, Status: c.info.Status, Redo: len(b.redo)}
		for _, nid := range c.path(b.tip) {
			bi.Turns++
			trace.WalkCalls(c.nodes[nid].turn.Calls, func(cl *trace.Call, _ int) {
				bi.Usage.PromptTokens += cl.Usage.PromptTokens
				bi.Usage.CompletionTokens += cl.Usage.CompletionTokens
				bi.Usage.TotalTokens += cl.Usage.TotalTokens
			})
		}
		out = append(out, bi)
	}
	return out, nil
}

// Branch is one row of Branches.
func (m *Memory) Branch(ctx context.Context, id, name string) (sessions.BranchInfo, error) {
	all, err := m.Branches(ctx, id)
	if err != nil {
		return sessions.BranchInfo{}, err
	}
	for _, b := range all {
		if b.Name == name {
			return b, nil
		}
	}
	return sessions.BranchInfo{}, fmt.Errorf("branch %q not found in conversation %q", name, id)
}

func (m *Memory) TurnTreePage(ctx context.Context, id, after string, limit int) ([]storage.TurnNode, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, err := m.convLocked(id)
	if err != nil {
		return nil, "", err
	}
	if limit <= 0 {
		return nil, "", fmt.Errorf("turn tree page: limit must be positive (got %d)", limit)
	}
	from := 0
	if after != "" {
		from = slices.Index(c.order, after) + 1
		if from == 0 {
			return nil, "", fmt.Errorf("conversation %q has no turn %q", id, after)
		}
	}
	var out []storage.TurnNode
	for _, nid := range c.order[from:min(from+limit, len(c.order))] {
		n := c.nodes[nid]
		out = append(out, storage.TurnNode{Key: n.id, Parent: n.parent, Index: n.turn.Index, Status: trace.StatusCompleted,
			Started: n.turn.Started, InputPreview: firstValue(n.turn.Inputs), OutputPreview: firstValue(n.turn.Outputs)})
	}
	next := ""
	if from+limit < len(c.order) {
		next = c.order[from+limit-1]
	} else {
		// the last page: the turns kept beside the branches, as the real backend lists them
		for _, k := range m.kept {
			if k.conv == id {
				out = append(out, storage.TurnNode{Key: k.kt.Key, Parent: k.parent, Index: k.kt.Index, Status: k.kt.Status,
					Error: k.kt.Reason, Started: k.kt.Turn.Started, InputPreview: firstValue(k.kt.Turn.Inputs)})
			}
		}
	}
	return out, next, nil
}

func firstValue(m *sig.Map) string {
	if m.Len() == 0 {
		return ""
	}
	return m.String(m.Keys()[0])
}

func (m *Memory) LoadTurns(ctx context.Context, id, branchName string, from, limit int) (sessions.TurnPage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, err := m.convLocked(id)
	if err != nil {
		return sessions.TurnPage{}, err
	}
	b, err := m.branchLocked(c, branchName)
	if err != nil {
		return sessions.TurnPage{}, err
	}
	if limit < 0 {
		return sessions.TurnPage{}, fmt.Errorf("load turns: bad window from=%d limit=%d", from, limit)
	}
	p := c.path(b.tip)
	if from < 0 { // counted from the end
		from = max(len(p)+from, 0)
	}
	pg := sessions.TurnPage{From: from, Total: len(p)}
	for i := from; i < len(p) && i < from+limit; i++ {
		pg.IDs = append(pg.IDs, p[i])
		pg.Turns = append(pg.Turns, c.nodes[p[i]].turn.Clone())
	}
	return pg, nil
}

func (m *Memory) Turn(ctx context.Context, id, turn string) (*trace.Turn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, err := m.convLocked(id)
	if err != nil {
		return nil, err
	}
	n, ok := c.nodes[turn]
	if !ok {
		return nil, fmt.Errorf("conversation %q has no turn %q", id, turn)
	}
	return n.turn.Clone(), nil
}

func (m *Memory) Fork(ctx context.Context, id, turn, name string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, err := m.convLocked(id)
	if err != nil {
		return "", err
	}
	if _, ok := c.nodes[turn]; !ok {
		return "", fmt.Errorf("turn %s is on no branch of conversation %s", turn, id)
	}
	return m.newBranchLocked(c, name, "fork", turn)
}

// AddBranch makes an empty branch (the real backend's storage can; its Fork cannot).
func (m *Memory) AddBranch(id, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, err := m.convLocked(id)
	if err != nil {
		return err
	}
	_, err = m.newBranchLocked(c, name, "", "")
	return err
}

func (m *Memory) newBranchLocked(c *conv, name, prefix, tip string) (string, error) {
	if name == "" {
		for i := 1; ; i++ {
			name = fmt.Sprintf("%s-%d", prefix, i)
			if _, taken := c.branches[name]; !taken {
				break
			}
		}
	}
	if _, taken := c.branches[name]; taken {
		return "", fmt.Errorf("branch %q exists", name)
	}
	c.branches[name] = &branch{name: name, tip: tip}
	c.border = append(c.border, name)
	return name, nil
}

// Undo moves the tip back as the real backend does: no turn to undo is not an error,
// and the result counts the undone turns' model requests (leaf calls).
func (m *Memory) Undo(ctx context.Context, id, branchName string, steps int) (sessions.UndoResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, err := m.convLocked(id)
	if err != nil {
		return sessions.UndoResult{}, err
	}
	b, err := m.branchLocked(c, branchName)
	if err != nil {
		return sessions.UndoResult{}, err
	}
	var res sessions.UndoResult
	for ; steps > 0 && b.tip != ""; steps-- {
		n := c.nodes[b.tip]
		b.redo = append(b.redo, b.tip)
		b.tip = n.parent
		res.Turns++
		trace.WalkCalls(n.turn.Calls, func(cl *trace.Call, _ int) {
			if len(cl.Children) == 0 && cl.Error == "" {
				res.Calls++
			}
		})
	}
	return res, nil
}

// Redo moves the tip forward again; it returns how many turns moved (0: nothing to redo).
func (m *Memory) Redo(ctx context.Context, id, branchName string, steps int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, err := m.convLocked(id)
	if err != nil {
		return 0, err
	}
	b, err := m.branchLocked(c, branchName)
	if err != nil {
		return 0, err
	}
	n := 0
	for ; steps > 0 && len(b.redo) > 0; steps-- {
		b.tip = b.redo[len(b.redo)-1]
		b.redo = b.redo[:len(b.redo)-1]
		n++
	}
	return n, nil
}

var _ ui.Backend = (*Memory)(nil)
