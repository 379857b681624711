package uitest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/ui/sessions"
)

// The echo model: the reply to a question is "echo: <question>", streamed word by word.
// An input containing "[retry]" makes the first try fail with a 429 and a backoff;
// "[fail]" makes the turn fail.

func (m *Memory) Send(ctx context.Context, req sessions.SendRequest, events chan<- sessions.Event) (*trace.Turn, error) {
	m.mu.Lock()
	c, err := m.convLocked(req.Conv)
	var b *branch
	if err == nil {
		b, err = m.branchLocked(c, req.Branch)
	}
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	m.supersede(req.Conv, req.Branch)
	t, err := m.runTurn(ctx, c, b, req.Inputs, m.model, events)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// runTurn computes a turn outside the lock (it streams and sleeps), then records it on
// the branch's tip, unless ctx ended first. A turn that began and did not complete is
// kept beside the branch with the calls it made, as the real backend keeps it.
func (m *Memory) runTurn(ctx context.Context, c *conv, b *branch, inputs *sig.Map, model string, events chan<- sessions.Event) (*trace.Turn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // cancelled before the turn began: nothing is kept
	}
	m.mu.Lock()
	parent, index := b.tip, len(c.path(b.tip))
	m.mu.Unlock()
	var made []*trace.Call
	t, err := m.runTurnCalls(ctx, c, b, inputs, model, events, &made)
	if err != nil {
		return nil, m.keep(ctx, c.info.ID, b.name, parent, index, inputs, made, err)
	}
	return t, nil
}

func (m *Memory) runTurnCalls(ctx context.Context, c *conv, b *branch, inputs *sig.Map, model string, events chan<- sessions.Event, made *[]*trace.Call) (*trace.Turn, error) {
	m.mu.Lock()
	agent, _ := m.agentLocked(c.info.Agent)
	history := m.historyLocked(c, b.tip)
	index := len(c.path(b.tip))
	start := m.tick()
	m.mu.Unlock()

	question := firstValue(inputs)
	send := func(e sessions.Event) error {
		select {
		case events <- e:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	sleep := func(d time.Duration) error {
		if d <= 0 {
			return ctx.Err()
		}
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var tries []lm.Try
	if strings.Contains(question, "[retry]") {
		a := lm.Try{N: 1, Status: 429, Err: "rate limited", Wait: m.RetryWait, Retrying: true}
		tries = append(tries, a)
		if err := send(sessions.Event{Kind: sessions.EventTry, Path: "respond", Try: a}); err != nil {
			return nil, err
		}
		if err := sleep(m.RetryWait); err != nil {
			return nil, err
		}
	}
	tries = append(tries, lm.Try{N: len(tries) + 1, Status: 200})
	classify := &trace.Call{ID: fmt.Sprintf("t%d.c1", index), Path: "classify", PredictorType: "Predict", Adapter: "chat",
		Inputs: inputs.Clone(), Outputs: sig.NewMap("intent", "question"), History: history, Model: model,
		Messages: lm.MessagesOf(render(agent, inputs, history, 1)), Completion: "[[ ## intent ## ]]\nquestion",
		Usage: lm.Usage{PromptTokens: 40, CompletionTokens: 3, TotalTokens: 43}, Latency: 120 * time.Millisecond, Started: start}
	*made = append(*made, classify)
	if err := send(sessions.Event{Kind: sessions.EventCall, Path: "classify", Call: classify}); err != nil {
		return nil, err
	}
	reply := "echo: " + question
	if model != m.model {
		reply = "echo (" + model + "): " + question
	}
	so := ""
	for i, w := range strings.SplitAfter(reply, " ") {
		if i > 0 {
			if err := sleep(m.Delay); err != nil {
				return nil, err
			}
		}
		so += w
		if err := send(sessions.Event{Kind: sessions.EventDelta, Path: "respond", Field: "reply",
			Output: []adapter.FieldText{{Name: "reply", Text: so}}}); err != nil {
			return nil, err
		}
	}
	respond := &trace.Call{ID: fmt.Sprintf("t%d.c2", index), Path: "respond", PredictorType: "ChainOfThought", Adapter: "chat",
		Inputs: inputs.Clone(), Outputs: sig.NewMap("reasoning", "The user asked.", "reply", reply), History: history, Model: model,
		Messages: lm.MessagesOf(render(agent, inputs, history, 1)), Completion: "[[ ## reasoning ## ]]\nThe user asked.\n\n[[ ## reply ## ]]\n" + reply,
		Usage:   lm.Usage{PromptTokens: 60 + 10*len(history.Messages), CompletionTokens: len(strings.Fields(reply)), TotalTokens: 60 + 10*len(history.Messages) + len(strings.Fields(reply))},
		Latency: 300 * time.Millisecond, Started: start, Tries: tries}
	if strings.Contains(question, "[fail]") {
		err := errors.New("respond: the model's answer has no [[ ## reply ## ]] field")
		respond.Outputs, respond.Error = nil, err.Error()
		*made = append(*made, respond)
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err // cancelled: record nothing
	}
	t := &trace.Turn{Index: index, Inputs: inputs.Clone(), Outputs: sig.NewMap("reply", reply), History: history,
		Calls: []*trace.Call{classify, respond}, Started: start, Ended: start.Add(420 * time.Millisecond)}
	m.mu.Lock()
	m.seq++
	id := fmt.Sprintf("n%d", m.seq)
	c.nodes[id] = &node{id: id, parent: b.tip, turn: t}
	c.order = append(c.order, id)
	b.tip, b.redo = id, nil
	c.info.Updated = m.tick()
	m.mu.Unlock()
	if err := send(sessions.Event{Kind: sessions.EventTurn, Turn: t.Clone(), Branch: b.name}); err != nil {
		return nil, err
	}
	return t.Clone(), nil
}

// historyLocked is the path's turns as a DSPy history (inputs and outputs merged).
func (m *Memory) historyLocked(c *conv, tip string) sig.History {
	var h sig.History
	for _, id := range c.path(tip) {
		t := c.nodes[id].turn
		msg := t.Inputs.Clone()
		t.Outputs.Range(func(k string, v any) bool { msg.Set(k, v); return true })
		h.Messages = append(h.Messages, msg)
	}
	return h
}

// render is this backend's own simple request format, varied by strategy so that the
// wire pane has differences to show. It is not DSPy's format.
func render(agent sessions.AgentInfo, inputs *sig.Map, h sig.History, strategy int) []lm.Message {
	sys := "Answer the customer's question."
	if agent.Signature != nil {
		sys = agent.Signature.Instructions
	}
	msgs := []lm.Message{{Role: "system", Content: sys}}
	switch strategy {
	case 3, 5:
		var b strings.Builder
		for _, e := range h.Messages {
			b.WriteString("- " + firstValue(e) + "\n")
		}
		msgs[0].Content += "\n\nConversation so far:\n" + b.String()
	}
	if strategy != 3 {
		for _, e := range h.Messages {
			u := firstValue(e)
			a := e.String("reply")
			if strategy == 2 && !e.Has("intent") {
				a = "None"
			}
			msgs = append(msgs, lm.Message{Role: "user", Content: "question: " + u}, lm.Message{Role: "assistant", Content: "reply: " + a})
		}
	}
	var b strings.Builder
	inputs.Range(func(k string, v any) bool {
		b.WriteString(k + ": " + py.Text(v) + "\n")
		return true
	})
	return append(msgs, lm.Message{Role: "user", Content: strings.TrimSuffix(b.String(), "\n")})
}

func rendering(path, callID string, msgs []lm.Message, strategy int) sessions.Rendering {
	r := sessions.Rendering{Strategy: strategy, CallID: callID, Path: path}
	for i, msg := range msgs {
		tok := len(msg.Content)/4 + 1
		r.Messages = append(r.Messages, sessions.RenderedMessage{Message: msg, Tokens: tok})
		r.Tokens += tok
		if strings.Contains(msg.Content, "reply: None") {
			r.Warnings = append(r.Warnings, sessions.Lint{Message: i, Text: "history entry renders None for reply: the outer history lacks this predictor's field"})
		}
	}
	if strategy == 3 {
		r.Warnings = append(r.Warnings, sessions.Lint{Message: -1, Text: "history is inline text: the model sees no turn structure"})
	}
	return r
}

func (m *Memory) Preview(ctx context.Context, req sessions.PreviewRequest) (sessions.Rendering, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, err := m.convLocked(req.Conv)
	if err != nil {
		return sessions.Rendering{}, err
	}
	n, ok := c.nodes[req.Turn]
	if !ok {
		return sessions.Rendering{}, fmt.Errorf("no turn %q", req.Turn)
	}
	var call *trace.Call
	trace.WalkCalls(n.turn.Calls, func(cl *trace.Call, _ int) {
		if call == nil && (req.Call == "" || cl.ID == req.Call) {
			call = cl
		}
	})
	if call == nil {
		return sessions.Rendering{}, fmt.Errorf("turn %q has no call %q", req.Turn, req.Call)
	}
	if req.Strategy == 0 {
		return rendering(call.Path, call.ID, call.Messages.Slice(), 0), nil
	}
	agent, _ := m.agentLocked(c.info.Agent)
	return rendering(call.Path, call.ID, render(agent, call.Inputs, call.History, req.Strategy), req.Strategy), nil
}

// Prefetch records that the workbench readied branchName of conversation id.
func (m *Memory) Prefetch(_ context.Context, id, branchName string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.prefetched = append(m.prefetched, id+"/"+branchName)
}

// Prefetched lists the branches Prefetch was asked for ("conv/branch"), in order.
func (m *Memory) Prefetched() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.prefetched...)
}

func (m *Memory) DryRun(ctx context.Context, id, branchName string, inputs *sig.Map, strategy int) ([]sessions.Rendering, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, err := m.convLocked(id)
	if err != nil {
		return nil, err
	}
	b, err := m.branchLocked(c, branchName)
	if err != nil {
		return nil, err
	}
	agent, _ := m.agentLocked(c.info.Agent)
	h := m.historyLocked(c, b.tip)
	s := max(strategy, 1)
	return []sessions.Rendering{
		rendering("classify", "", render(agent, inputs, h, s), s),
		rendering("respond", "", render(agent, inputs, h, s), s),
	}, nil
}

func (m *Memory) EditAndResubmit(ctx context.Context, req sessions.EditRequest, events chan<- sessions.Event) (string, *trace.Turn, error) {
	m.mu.Lock()
	c, err := m.convLocked(req.Conv)
	if err != nil {
		m.mu.Unlock()
		return "", nil, err
	}
	n, ok := c.nodes[req.Turn]
	if !ok {
		m.mu.Unlock()
		return "", nil, fmt.Errorf("no turn %q", req.Turn)
	}
	name, err := m.newBranchLocked(c, req.Name, "edit", n.parent)
	b := c.branches[name]
	m.mu.Unlock()
	if err != nil {
		return "", nil, err
	}
	if err := sendEvent(ctx, events, sessions.Event{Kind: sessions.EventBranch, Branch: name}); err != nil {
		return "", nil, err
	}
	t, err := m.runTurn(ctx, c, b, req.Inputs, m.model, events)
	if err != nil {
		return "", nil, err
	}
	return name, t, nil
}

func sendEvent(ctx context.Context, events chan<- sessions.Event, e sessions.Event) error {
	select {
	case events <- e:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *Memory) Replay(ctx context.Context, req sessions.ReplayRequest, events chan<- sessions.Event) (string, error) {
	m.mu.Lock()
	c, err := m.convLocked(req.Conv)
	var src *branch
	if err == nil {
		src, err = m.branchLocked(c, req.Branch)
	}
	if err != nil {
		m.mu.Unlock()
		return "", err
	}
	path := c.path(src.tip)
	start := 0
	if req.From != "" {
		start = -1
		for i, id := range path {
			if id == req.From {
				start = i
			}
		}
		if start < 0 {
			m.mu.Unlock()
			return "", fmt.Errorf("turn %q is not on branch %q", req.From, req.Branch)
		}
	}
	base := ""
	if start > 0 {
		base = path[start-1]
	}
	name, err := m.newBranchLocked(c, req.Name, "replay", base)
	var inputs []*sig.Map
	for _, id := range path[start:] {
		inputs = append(inputs, c.nodes[id].turn.Inputs.Clone())
	}
	b := c.branches[name]
	m.mu.Unlock()
	if err != nil {
		return "", err
	}
	model := m.model
	if req.Model != "" {
		model = req.Model
	}
	for _, in := range inputs {
		if _, err := m.runTurn(ctx, c, b, in, model, events); err != nil {
			return name, err
		}
	}
	return name, nil
}

// Seed appends n finished turns to a branch at once (for benchmarks and screens), each
// with a call tree of calls inner calls.
func (m *Memory) Seed(id, branchName string, n, calls int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, err := m.convLocked(id)
	if err != nil {
		return err
	}
	b, err := m.branchLocked(c, branchName)
	if err != nil {
		return err
	}
	index := len(c.path(b.tip))
	for i := 0; i < n; i++ {
		q := fmt.Sprintf("question number %d", index+i+1)
		t := &trace.Turn{Index: index + i, Inputs: sig.NewMap("question", q),
			Outputs: sig.NewMap("reply", fmt.Sprintf("**Answer %d.** Here is a *short* reply with `code` and a list:\n\n- one\n- two", index+i+1)),
			Calls:   []*trace.Call{CallTree(fmt.Sprintf("t%d", index+i), calls)}}
		m.seq++
		nid := fmt.Sprintf("n%d", m.seq)
		c.nodes[nid] = &node{id: nid, parent: b.tip, turn: t}
		c.order = append(c.order, nid)
		b.tip = nid
	}
	return nil
}

// CallTree builds a call tree of n calls, four children per call, breadth-first.
func CallTree(prefix string, n int) *trace.Call {
	mk := func(i int) *trace.Call {
		return &trace.Call{ID: fmt.Sprintf("%s.c%d", prefix, i), Path: fmt.Sprintf("agent.step%d", i), PredictorType: "Predict",
			Adapter: "chat", Inputs: sig.NewMap("question", "q"), Outputs: sig.NewMap("answer", "a"),
			Messages: lm.MessagesOf([]lm.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "question: q"}}),
			Usage:    lm.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}, Latency: 50 * time.Millisecond}
	}
	all := []*trace.Call{mk(0)}
	for i := 1; i < max(n, 1); i++ {
		c := mk(i)
		parent := all[(i-1)/4]
		parent.Children = append(parent.Children, c)
		all = append(all, c)
	}
	return all[0]
}

// AddTurn appends a finished turn, as given, to a branch (for screens that need
// particular content, such as hostile model text). It returns the turn's ID.
func (m *Memory) AddTurn(id, branchName string, t *trace.Turn) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, err := m.convLocked(id)
	if err != nil {
		return "", err
	}
	b, err := m.branchLocked(c, branchName)
	if err != nil {
		return "", err
	}
	t = t.Clone()
	t.Index = len(c.path(b.tip))
	m.seq++
	nid := fmt.Sprintf("n%d", m.seq)
	c.nodes[nid] = &node{id: nid, parent: b.tip, turn: t}
	c.order = append(c.order, nid)
	b.tip = nid
	return nid, nil
}
