package ui

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// Results of backend commands. Every backend call happens in a tea.Cmd; Update only
// applies these results.
type (
	convsMsg struct {
		list  []sessions.ConversationInfo
		err   error
		start bool // the first load: open something
	}
	convOpenedMsg struct {
		conv     sessions.ConversationInfo
		branches []sessions.BranchInfo
		err      error
	}
	branchesMsg struct {
		conv string
		list []sessions.BranchInfo
		err  error
	}
	pageMsg struct {
		pane   *chatPane
		gen    int // the pane's generation when the page was asked for
		branch string
		page   sessions.TurnPage
		err    error
	}
	runEventMsg struct {
		id int
		ev sessions.Event
	}
	runDoneMsg struct {
		id     int
		branch string
		turn   *trace.Turn
		err    error
	}
	retryTickMsg struct{ id int }
	previewMsg   struct {
		key string
		r   sessions.Rendering
		err error
	}
	dryTickMsg struct{ version int }
	dryMsg     struct {
		version, strategy int
		rs                []sessions.Rendering
		err               error
	}
	// opMsg is the result of fork, undo, redo, rename, delete...
	opMsg struct {
		status     string
		err        error
		reload     bool   // reload branches and every pane
		openBranch string // open (or focus) a pane on this branch
	}
)

func (m *Model) loadConversations(start bool) tea.Cmd {
	ctx, b := m.ctx, m.b
	return func() tea.Msg {
		list, err := b.Conversations(ctx)
		sort.SliceStable(list, func(i, j int) bool { return list[i].Updated.After(list[j].Updated) })
		return convsMsg{list: list, err: err, start: start}
	}
}

func (m *Model) openConversation(c sessions.ConversationInfo) tea.Cmd {
	ctx, b := m.ctx, m.b
	return func() tea.Msg {
		br, err := b.Branches(ctx, c.ID)
		if err != nil {
			err = fmt.Errorf("open conversation %q: %w", c.Title, err)
		}
		return convOpenedMsg{conv: c, branches: br, err: err}
	}
}

func (m *Model) newConversation(agent, title string) tea.Cmd {
	ctx, b := m.ctx, m.b
	return func() tea.Msg {
		c, err := b.NewConversation(ctx, agent, title)
		if err != nil {
			return convOpenedMsg{err: fmt.Errorf("new conversation: %w", err)}
		}
		br, err := b.Branches(ctx, c.ID)
		return convOpenedMsg{conv: c, branches: br, err: err}
	}
}

func (m *Model) loadBranches() tea.Cmd {
	if m.conv == nil {
		return nil
	}
	ctx, b, conv := m.ctx, m.b, m.conv.ID
	return func() tea.Msg {
		list, err := b.Branches(ctx, conv)
		return branchesMsg{conv: conv, list: list, err: err}
	}
}

// loadPage fetches a page of p's branch; from < 0 means the last page, which reloads
// the pane: pages still in flight are dropped and the new one replaces the window.
func (m *Model) loadPage(p *chatPane, from int) tea.Cmd {
	if m.conv == nil {
		return nil
	}
	if from < 0 {
		p.gen++
		p.stale = true
	}
	ctx, b, conv, branch, gen := m.ctx, m.b, m.conv.ID, p.branch, p.gen
	return func() tea.Msg {
		f := from
		if f < 0 {
			head, err := b.LoadTurns(ctx, conv, branch, 0, 0)
			if err != nil {
				return pageMsg{pane: p, gen: gen, branch: branch, err: err}
			}
			f = max(0, head.Total-pageSize)
		}
		pg, err := b.LoadTurns(ctx, conv, branch, f, pageSize)
		if err != nil {
			err = fmt.Errorf("load branch %q: %w", branch, err)
		}
		return pageMsg{pane: p, gen: gen, branch: branch, page: pg, err: err}
	}
}

// startRun runs f (Send, EditAndResubmit or Replay) in the background, turning its events
// into messages; Esc cancels ctx.
func (m *Model) startRun(p *chatPane, kind string, f func(ctx context.Context, ev chan<- sessions.Event) (string, *trace.Turn, error)) tea.Cmd {
	m.runSeq++
	id := m.runSeq
	ctx, cancel := context.WithCancel(m.ctx)
	msgs := make(chan tea.Msg, 256)
	m.run = &runState{id: id, cancel: cancel, msgs: msgs, pane: p, kind: kind}
	m.runs.Add(1)
	go func() {
		events := make(chan sessions.Event, 64)
		fwd := make(chan struct{})
		go func() {
			for e := range events {
				msgs <- runEventMsg{id: id, ev: e}
			}
			close(fwd)
		}()
		branch, turn, err := f(ctx, events)
		m.runs.Done()
		close(events)
		<-fwd
		msgs <- runDoneMsg{id: id, branch: branch, turn: turn, err: err}
		close(msgs)
	}()
	return waitRun(msgs)
}

func waitRun(ch chan tea.Msg) tea.Cmd {
	return func() tea.Msg {
		msg, ok := <-ch
		if !ok {
			return nil
		}
		return msg
	}
}

// send submits the input form: a new turn, or the edit of a turn as a sibling branch.
func (m *Model) send() tea.Cmd {
	p := m.pane()
	if m.conv == nil || p == nil {
		m.setStatus("no conversation open: press L for the list")
		return nil
	}
	if m.run != nil {
		m.setStatus("a turn is running: esc cancels it")
		return nil
	}
	if m.input.empty() {
		return nil
	}
	inputs, err := m.input.values()
	if err != nil {
		m.setError(err)
		return nil
	}
	m.input.remember(inputs)
	edit := m.input.editTurn
	m.input.clear()
	conv, b, strategy := m.conv.ID, m.b, m.wire.strategy
	p.stream = &streamState{inputs: inputs, started: time.Now()}
	p.list.follow = true
	if edit != "" {
		m.setStatus("resubmitting as a new branch…")
		return m.startRun(p, "edit", func(ctx context.Context, ev chan<- sessions.Event) (string, *trace.Turn, error) {
			return b.EditAndResubmit(ctx, sessions.EditRequest{Conv: conv, Turn: edit, Inputs: inputs}, ev)
		})
	}
	branch := p.branch
	m.setStatus("sending on " + termtext.OneLine(branch))
	return m.startRun(p, "send", func(ctx context.Context, ev chan<- sessions.Event) (string, *trace.Turn, error) {
		t, err := b.Send(ctx, sessions.SendRequest{Conv: conv, Branch: branch, Inputs: inputs, Strategy: strategy}, ev)
		return branch, t, err
	})
}

// cancelRun aborts the turn in flight at once; the backend records nothing.
func (m *Model) cancelRun() {
	if m.run == nil {
		return
	}
	m.run.cancel()
	if m.run.pane != nil {
		m.giveBackInput(m.run.kind, m.run.pane.stream)
		m.run.pane.stream = nil
	}
	m.run = nil
	m.setStatus("cancelled: no turn recorded (your text is back in the editor)")
}

// giveBackInput puts a send's inputs back in the editor after it was cancelled or
// failed, so nothing typed is lost; text typed meanwhile is left alone.
func (m *Model) giveBackInput(kind string, st *streamState) {
	if kind == "send" && st != nil && st.inputs != nil && m.input.empty() {
		m.input.set(st.inputs)
	}
}

func (m *Model) onRunEvent(msg runEventMsg) tea.Cmd {
	if m.run == nil || msg.id != m.run.id {
		return nil // a cancelled run still draining
	}
	next := waitRun(m.run.msgs)
	ev := msg.ev
	if m.run.kind == "replay" && ev.Kind == sessions.EventTurn && ev.Turn != nil {
		m.setStatus(fmt.Sprintf("replayed turn %d…", ev.Turn.Index+1))
	}
	if m.run.pane == nil || m.run.pane.stream == nil {
		return next
	}
	st := m.run.pane.stream
	switch ev.Kind {
	case sessions.EventDelta:
		st.path, st.field = ev.Path, ev.Field
		if st.outputs == nil {
			st.outputs = map[string][]adapter.FieldText{}
		}
		st.outputs[ev.Path] = ev.Output
		st.try.Retrying = false
	case sessions.EventTry:
		st.try = ev.Try
		if ev.Try.Retrying {
			st.retryAt = time.Now().Add(ev.Try.Wait)
			delete(st.outputs, ev.Path) // the next try writes its completion from the start
			return tea.Batch(next, m.retryTick(msg.id))
		}
	case sessions.EventCall:
		st.calls++
		delete(st.outputs, ev.Path) // a loop calls the same path again: start its text afresh
	case sessions.EventBranch:
		m.setStatus("new branch " + termtext.OneLine(ev.Branch))
	}
	return next
}

func (m *Model) retryTick(id int) tea.Cmd {
	return tea.Tick(time.Second, func(time.Time) tea.Msg { return retryTickMsg{id: id} })
}

func (m *Model) onRunDone(msg runDoneMsg) tea.Cmd {
	if m.run == nil || msg.id != m.run.id {
		return nil
	}
	p := m.run.pane
	kind := m.run.kind
	m.run = nil
	if p == nil {
		return nil
	}
	st := p.stream
	p.stream = nil
	if msg.err != nil {
		m.giveBackInput(kind, st)
		if errors.Is(msg.err, context.Canceled) {
			m.setStatus("cancelled: no turn recorded")
			return nil
		}
		m.setError(fmt.Errorf("turn failed: %w", msg.err))
		return m.loadBranches()
	}
	if kind == "replay" {
		m.setStatus("replayed into " + termtext.OneLine(msg.branch))
		return tea.Batch(m.loadBranches(), m.openCompare(p.branch, msg.branch))
	}
	m.setStatus("turn recorded on " + termtext.OneLine(msg.branch))
	if kind != "send" && msg.branch != "" && msg.branch != p.branch {
		return tea.Batch(m.loadBranches(), m.openBranch(msg.branch))
	}
	p.total++ // the new turn; its page follows
	p.loading = true
	return tea.Batch(m.loadBranches(), m.loadPage(p, -1))
}

// openBranch shows branch in a pane (focusing an existing one) and loads it.
func (m *Model) openBranch(branch string) tea.Cmd {
	for i, p := range m.panes {
		if p.branch == branch {
			m.cur, m.focus = i, focusChat
			m.input.blur()
			return nil
		}
	}
	p := newChatPane(branch)
	for _, bi := range m.branches {
		if bi.Name == branch {
			p.info = bi
		}
	}
	m.panes = append(m.panes, p)
	m.cur, m.focus = len(m.panes)-1, focusChat
	m.input.blur()
	p.loading = true
	return m.loadPage(p, -1)
}

// op runs a backend operation that changes branches, then reloads.
func (m *Model) op(f func(ctx context.Context, b Backend) opMsg) tea.Cmd {
	ctx, b := m.ctx, m.b
	return func() tea.Msg { return f(ctx, b) }
}

func previewKey(req sessions.PreviewRequest) string {
	return fmt.Sprintf("%s|%s|%s|%s|%d", req.Conv, req.Branch, req.Turn, req.Call, req.Strategy)
}

// wantedPreviews are the renderings the wire pane shows now.
func (m *Model) wantedPreviews() []sessions.PreviewRequest {
	p := m.pane()
	id, t := m.selectedTurn()
	if p == nil || t == nil {
		return nil
	}
	c := m.tree.selected()
	if c == nil || isModuleRecord(c) {
		return nil // no calls, or a module record: it sent nothing itself
	}
	call := c.ID
	base := sessions.PreviewRequest{Conv: m.conv.ID, Branch: p.branch, Turn: id, Call: call}
	if m.wire.compare {
		a, b := base, base
		a.Strategy, b.Strategy = m.wire.cmpA, m.wire.cmpB
		return []sessions.PreviewRequest{a, b}
	}
	base.Strategy = m.wire.strategy
	return []sessions.PreviewRequest{base}
}

func (m *Model) ensurePreviews() []tea.Cmd {
	if m.showDryRun() {
		return nil
	}
	var cmds []tea.Cmd
	for _, req := range m.wantedPreviews() {
		k := previewKey(req)
		if _, ok := m.previews[k]; ok {
			continue
		}
		m.previews[k] = &previewResult{pending: true}
		ctx, b, req := m.ctx, m.b, req
		cmds = append(cmds, func() tea.Msg {
			r, err := b.Preview(ctx, req)
			return previewMsg{key: k, r: r, err: err}
		})
	}
	return cmds
}

// showDryRun: while the user types, the wire pane previews the typed text.
func (m *Model) showDryRun() bool {
	return m.focus == focusInput && !m.input.empty() && m.input.editTurn == ""
}

// scheduleDryRun debounces: the dry run starts when typing pauses for 250ms.
func (m *Model) scheduleDryRun() tea.Cmd {
	if !m.showDryRun() || !m.showWire || m.dry.version == m.input.version && m.dry.strategy == m.wire.strategy {
		return nil
	}
	v := m.input.version
	return tea.Tick(250*time.Millisecond, func(time.Time) tea.Msg { return dryTickMsg{version: v} })
}

func (m *Model) runDryRun() tea.Cmd {
	p := m.pane()
	if m.conv == nil || p == nil {
		return nil
	}
	inputs, err := m.input.values()
	v, strategy := m.input.version, m.wire.strategy
	if err != nil {
		m.dry = dryState{version: v, strategy: strategy, err: err}
		return nil
	}
	m.dry.pending = true
	ctx, b, conv, branch := m.ctx, m.b, m.conv.ID, p.branch
	return func() tea.Msg {
		rs, err := b.DryRun(ctx, conv, branch, inputs, strategy)
		return dryMsg{version: v, strategy: strategy, rs: rs, err: err}
	}
}

// inputsOf returns a turn's inputs for the editor (a copy).
func inputsOf(t *trace.Turn) *sig.Map {
	if t == nil {
		return sig.NewMap()
	}
	return t.Inputs.Clone()
}
