package ui

import (
	"context"
	"errors"
	"fmt"

	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// branchesMsg is a conversation's branch list.
type branchesMsg struct {
	conv string
	list []sessions.BranchInfo
	err  error
	poll bool // read by the poll: reload what moved
	// rows holds only some branches (those an undo, a redo or a fork moved or made):
	// they replace or join the rows known, the others stay
	rows bool
}

// result routes the result of a command to what asked for it.
func (m *Model) result(msg tea.Msg) tea.Cmd {
	e := m.e
	switch msg := msg.(type) {
	case convsMsg:
		if msg.err != nil && msg.poll {
			return nil // retried at the next tick; errors show when acting
		}
		if msg.err != nil {
			return e.fail(fmt.Errorf("list conversations: %w", msg.err))
		}
		m.convs = msg.list
		var cmd tea.Cmd
		if cl, ok := m.topModal().(*convList); ok {
			cmd = cl.Update(msg)
		}
		if msg.start && e.conv == nil {
			if len(msg.list) == 0 {
				return newConversation(e, e.agent.Name, "untitled")
			}
			return m.openConvList()
		}
		return cmd
	case convOpenedMsg:
		if msg.err != nil {
			return e.fail(msg.err)
		}
		return m.applyOpened(msg)
	case branchesMsg:
		if msg.poll {
			return m.onPoll(msg)
		}
		if msg.err != nil {
			return e.fail(fmt.Errorf("branches: %w", msg.err))
		}
		if msg.conv == e.convID() && msg.rows {
			m.setBranches(mergeBranches(e.branches, msg.list))
		} else if msg.conv == e.convID() {
			m.setBranches(msg.list)
		}
	case pageMsg:
		return msg.pane.Update(msg)
	case pollTickMsg:
		m.polling = false
		var list tea.Cmd
		if _, ok := m.topModal().(*convList); ok {
			// conversations made elsewhere (a proxy, a headless run) join the list shown
			list = pollConversations(e)
		}
		return tea.Batch(m.loadBranches(true), list, m.schedulePoll())
	case pendingMsg:
		return m.resume.add(msg)
	case resumeMsg:
		return m.startResume(msg.p)
	case runEventMsg:
		return m.runner.event(msg)
	case runDoneMsg:
		return m.onRunDone(msg)
	case retryTickMsg:
		return m.runner.tick(msg)
	case previewMsg:
		e.previews.apply(msg)
	case dryTickMsg:
		if msg.version == m.input.version && m.showDryRun() && m.showWire {
			p := m.pane()
			if p == nil {
				return nil
			}
			inputs, err := m.input.values()
			return m.wire.runDry(e.convID(), p.branch, msg.version, inputs, err)
		}
	case dryMsg:
		return m.wire.Update(msg)
	case opMsg:
		return m.onOp(msg)
	case editMsg:
		m.modals = nil
		m.input.beginEdit(msg)
		e.status.set(fmt.Sprintf("editing %s: %s resubmits it as a new branch, %s abandons", turnLabel(msg.index),
			e.keys.Send.Help().Key, e.keys.Cancel.Help().Key))
		return m.setFocus(focusInput, 0)
	case submitMsg:
		if msg.retry {
			return m.startRetry(retryMsg{key: msg.editTurn, inputs: msg.inputs, edited: true, index: m.input.editIndex})
		}
		return m.send(msg)
	case retryMsg:
		return m.startRetry(msg)
	case quitMsg:
		m.runner.cancel(fmt.Errorf("the workbench quit during the turn: %w", trace.ErrInterrupted))
		m.quitting = true
	case leaveEditorMsg:
		return m.setFocus(focusChat, m.cur)
	case focusTreeMsg:
		if m.showTree {
			return m.setFocus(focusTree, 0)
		}
	case openModalMsg:
		m.push(msg.m)
	case callDetailMsg:
		if msg.err != nil {
			return m.e.fail(msg.err)
		}
		m.push(callDetailView(m.e, msg))
	case closeModalMsg:
		if len(m.modals) > 0 {
			m.modals = m.modals[:len(m.modals)-1]
		}
		if len(m.modals) == 0 && m.focus == focusInput {
			return m.input.focus()
		}
	case helpMsg:
		m.openHelp()
	case switchBranchMsg:
		return m.switchBranch(msg)
	case replayMsg:
		return m.startReplay(msg.req)
	case openCompareMsg:
		return m.openCompare(msg.t)
	default:
		// the rest (the navigator's tree, the runs' turns, the compare's diff, the
		// list's filter matches, saves) belongs to an open modal; each takes its own
		var cmds []tea.Cmd
		for _, md := range m.modals {
			cmds = append(cmds, md.Update(msg))
		}
		return tea.Batch(cmds...)
	}
	return nil
}

// setBranches takes a fresh branch list: the panes' headers follow it.
func (m *Model) setBranches(list []sessions.BranchInfo) {
	m.e.branches = list
	for _, p := range m.panes {
		p.info, _ = m.e.branchInfo(p.branch)
	}
	for _, md := range m.modals {
		if n, ok := md.(*navigator); ok && n.byID != nil {
			n.setBranches(list) // its tips and marks follow the list
		}
	}
}

// loadBranches reads the open conversation's branches (poll: for the poll).
func (m *Model) loadBranches(poll bool) tea.Cmd {
	conv := m.e.convID()
	if conv == "" {
		return nil
	}
	ctx, b := m.e.ctx, m.e.b
	return func() tea.Msg {
		list, err := b.Branches(ctx, conv)
		return branchesMsg{conv: conv, list: list, err: err, poll: poll}
	}
}

// loadBranchRows reads the rows of the named branches of the open conversation alone:
// after an undo, a redo or a fork only they changed, and reading every branch would make
// each of those keys cost more as a conversation's branches accumulate.
func (m *Model) loadBranchRows(names []string) tea.Cmd {
	conv := m.e.convID()
	if conv == "" {
		return nil
	}
	ctx, b := m.e.ctx, m.e.b
	return func() tea.Msg {
		list := make([]sessions.BranchInfo, 0, len(names))
		for _, n := range names {
			bi, err := b.Branch(ctx, conv, n)
			if err != nil {
				return branchesMsg{conv: conv, err: err}
			}
			list = append(list, bi)
		}
		return branchesMsg{conv: conv, list: list, rows: true}
	}
}

// mergeBranches is the branch list known with rows replacing the rows of the same name;
// a new branch (a fork: the newest) is added last, where Branches lists it.
func mergeBranches(known, rows []sessions.BranchInfo) []sessions.BranchInfo {
	out := append([]sessions.BranchInfo(nil), known...)
	for _, r := range rows {
		found := false
		for i := range out {
			if out[i].Name == r.Name {
				out[i], found = r, true
				break
			}
		}
		if !found {
			out = append(out, r)
		}
	}
	return out
}

func (m *Model) applyOpened(msg convOpenedMsg) tea.Cmd {
	e := m.e
	c := msg.conv
	e.conv = &c
	e.branches = msg.branches
	for _, a := range e.agents {
		if a.Name == c.Agent {
			e.agent = a
		}
	}
	if c.Recorded {
		// the program that made it runs outside: no agent, no input form
		e.agent = sessions.AgentInfo{Name: c.Agent}
	}
	m.input = newInputPane(e, e.agent)
	m.panes = nil
	e.previews = previewCache{}
	m.tree.set("", nil)
	m.modals = nil
	main := "main"
	if len(msg.branches) > 0 {
		main = msg.branches[0].Name
		for _, b := range msg.branches {
			if b.Name == "main" {
				main = "main"
			}
		}
	}
	cmd := m.openBranch(main)
	e.status.set("opened " + termtext.OneLine(c.Title))
	if c.Recorded {
		e.status.set("opened " + termtext.OneLine(c.Title) + ": recorded by sessionbench proxy, read only")
	}
	return tea.Batch(cmd, m.setFocus(focusInput, 0), m.afterOpen(c.ID))
}

// afterOpen follows a conversation opening: a resume asked for before it opened starts
// now; otherwise the conversation's interrupted turns are offered.
func (m *Model) afterOpen(conv string) tea.Cmd {
	if p := m.resume.after; p != nil && p.Conv == conv {
		m.resume.after = nil
		return m.runResume(*p)
	}
	return checkPending(m.e, conv)
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
	p := newChatPane(m.e, branch)
	m.panes = append(m.panes, p)
	m.cur, m.focus = len(m.panes)-1, focusChat
	m.input.blur()
	return p.load(-1)
}

// reloadAll refreshes branches and every pane (after undo, redo, fork, a turn from
// elsewhere). The panes stay the same objects, so a turn running in one keeps streaming
// there and lands there; they show their old turns until the fresh pages replace them.
func (m *Model) reloadAll() tea.Cmd {
	cmds := []tea.Cmd{m.loadBranches(false)}
	for _, p := range m.panes {
		cmds = append(cmds, p.load(-1))
	}
	m.e.previews = previewCache{}
	return tea.Batch(cmds...)
}

// reloadBranches refreshes the named branches' rows and the panes showing them (after an
// undo, a redo or a fork, which move or make those branches alone).
func (m *Model) reloadBranches(names []string) tea.Cmd {
	cmds := []tea.Cmd{m.loadBranchRows(names)}
	for _, p := range m.panes {
		for _, n := range names {
			if p.branch == n {
				cmds = append(cmds, p.load(-1))
			}
		}
	}
	m.e.previews = previewCache{}
	return tea.Batch(cmds...)
}

func (m *Model) onOp(msg opMsg) tea.Cmd {
	e := m.e
	if msg.err != nil {
		return e.fail(msg.err)
	}
	if msg.status != "" {
		e.status.set(msg.status)
	}
	if msg.deleted != "" && msg.deleted == e.convID() {
		e.conv, m.panes = nil, nil
		m.tree.set("", nil)
	}
	if msg.renamed != "" && msg.renamed == e.convID() {
		e.conv.Title = msg.title
	}
	var cmds []tea.Cmd
	if msg.reload {
		cmds = append(cmds, m.reloadAll())
	} else if len(msg.branches) > 0 {
		cmds = append(cmds, m.reloadBranches(msg.branches))
	}
	if msg.openBranch != "" {
		cmds = append(cmds, m.openBranch(msg.openBranch))
	}
	return tea.Batch(cmds...)
}

// send runs the submitted form: a new turn on the focused pane's branch, or the edit of
// a turn as a sibling branch.
func (m *Model) send(msg submitMsg) tea.Cmd {
	e := m.e
	p := m.pane()
	if e.conv == nil || p == nil {
		m.input.set(msg.inputs)
		return e.say("no conversation open: " + e.keys.Conversations.Help().Key + " lists them")
	}
	if m.runner.active() {
		m.input.set(msg.inputs)
		return e.say("a turn is running: " + e.keys.Cancel.Help().Key + " cancels it")
	}
	conv, b, inputs := e.convID(), e.b, msg.inputs
	if edit := msg.editTurn; edit != "" {
		e.status.set("resubmitting as a new branch…")
		return m.runner.start(p, runEdit, inputs, func(ctx context.Context, ev chan<- sessions.Event) (string, *trace.Turn, error) {
			return b.EditAndResubmit(ctx, sessions.EditRequest{Conv: conv, Turn: edit, Inputs: inputs}, ev)
		})
	}
	branch := p.branch
	e.status.set("sending on " + termtext.OneLine(branch))
	return m.runner.start(p, runSend, inputs, func(ctx context.Context, ev chan<- sessions.Event) (string, *trace.Turn, error) {
		t, err := b.Send(ctx, sessions.SendRequest{Conv: conv, Branch: branch, Inputs: inputs}, ev)
		return branch, t, err
	})
}

// cancelRun aborts the turn in flight; a send's text goes back to the editor. The turn,
// if it began, is kept cancelled beside the branch (it appears when its run ends).
func (m *Model) cancelRun() {
	kind, st := m.runner.cancel(nil)
	m.giveBack(kind, st)
	m.e.status.set("cancelled: the turn is kept beside the branch as cancelled (your text is back in the editor)")
}

// giveBack puts a send's inputs back in the editor after it was cancelled or failed,
// so nothing typed is lost; text typed meanwhile is left alone.
func (m *Model) giveBack(kind runKind, st *streamState) {
	if kind == runSend && st != nil && st.inputs != nil && m.input.empty() {
		m.input.set(st.inputs)
	}
}

func (m *Model) onRunDone(msg runDoneMsg) tea.Cmd {
	e := m.e
	f, ok := m.runner.done(msg)
	if ok && msg.branch != "" && e.conv != nil {
		// the branch's next message readies its turn again (prefetch): the model's
		// connection may have closed while the user read this one
		delete(m.prefetched, e.convID()+"\x00"+msg.branch)
	}
	if !ok || f.pane == nil {
		if !ok && msg.err != nil {
			// a cancelled run has ended: the turn it kept appears beside its branch
			return m.reloadAll()
		}
		return nil
	}
	if msg.err != nil {
		m.giveBack(f.kind, f.stream)
		var kt *sessions.KeptTurnError
		if errors.As(msg.err, &kt) {
			// the turn is kept beside the branch: show it, selected, with its calls
			keptFailed(e, kt)
			f.pane.sel = -1
			return tea.Batch(m.loadBranches(false), f.pane.load(-1))
		}
		if errors.Is(msg.err, context.Canceled) {
			return e.say("cancelled before the turn began: nothing recorded")
		}
		e.fail(fmt.Errorf("turn failed: %w", msg.err))
		return m.loadBranches(false)
	}
	if f.kind == runReplay {
		e.status.set("replayed into " + termtext.OneLine(msg.branch))
		v, load := newRunsView(e, f.pane.branch, msg.branch)
		m.push(v)
		return tea.Batch(m.loadBranches(false), load)
	}
	e.status.set("turn recorded on " + termtext.OneLine(msg.branch))
	if f.kind == runRetry {
		e.status.set("retried: the turn is recorded on " + termtext.OneLine(msg.branch) + "; the failed one stays beside it")
	}
	if f.kind != runSend && f.kind != runResume && msg.branch != "" && msg.branch != f.pane.branch {
		return tea.Batch(m.loadBranches(false), m.openBranch(msg.branch))
	}
	f.pane.total++ // the new turn; its page follows
	e.previews = previewCache{}
	return tea.Batch(m.loadBranches(false), f.pane.load(-1))
}

// startReplay runs a replay (from the form) into a new sibling of the focused pane's
// branch.
func (m *Model) startReplay(req sessions.ReplayRequest) tea.Cmd {
	if m.runner.active() {
		return m.e.say("a turn is running: " + m.e.keys.Cancel.Help().Key + " cancels it")
	}
	m.e.status.set("replaying " + termtext.OneLine(req.Branch) + "…")
	b := m.e.b
	return m.runner.start(m.pane(), runReplay, nil, func(ctx context.Context, ev chan<- sessions.Event) (string, *trace.Turn, error) {
		name, err := b.Replay(ctx, req, ev)
		return name, nil, err
	})
}

// startResume resumes an interrupted turn: in its conversation, opened first if need be.
func (m *Model) startResume(p sessions.PendingInfo) tea.Cmd {
	if m.e.convID() == p.Conv {
		return m.runResume(p)
	}
	m.resume.after = &p
	ctx, b, id := m.e.ctx, m.e.b, p.Conv
	return func() tea.Msg {
		list, err := b.Conversations(ctx)
		if err != nil {
			return convOpenedMsg{err: fmt.Errorf("open conversation %s: %w", id, err)}
		}
		for _, c := range list {
			if c.ID == id {
				br, err := b.Branches(ctx, id)
				return convOpenedMsg{conv: c, branches: br, err: err}
			}
		}
		return convOpenedMsg{err: fmt.Errorf("conversation %s no longer exists", id)}
	}
}

// runResume streams the resumed turn into its branch's pane, as a send would.
func (m *Model) runResume(p sessions.PendingInfo) tea.Cmd {
	open := m.openBranch(p.Branch)
	pane := m.pane()
	if pane == nil {
		return open
	}
	b, key, branch := m.e.b, p.TurnKey, p.Branch
	m.e.status.set(fmt.Sprintf("resuming %s: answered calls are replayed from storage…", pendingLabel(p)))
	return tea.Batch(open, m.runner.start(pane, runResume, p.Inputs, func(ctx context.Context, ev chan<- sessions.Event) (string, *trace.Turn, error) {
		t, err := b.Resume(ctx, key, ev)
		return branch, t, err
	}))
}
