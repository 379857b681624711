package ui

import (
	"context"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// resumePrompt offers the turns a crash or kill left in flight, one at a time: resume
// (answered calls are replayed from storage), discard, or later.
type resumePrompt struct {
	queue []sessions.PendingInfo
	// taken are turns already resumed or discarded this session: the backend still
	// lists a turn while its resume runs, and it must not be offered twice.
	taken map[string]bool
	// after is a turn to resume once its conversation has opened.
	after *sessions.PendingInfo
}

type pendingMsg struct {
	list []sessions.PendingInfo
	err  error
}

// checkPending asks for interrupted turns (conv "" = everywhere).
func (m *Model) checkPending(conv string) tea.Cmd {
	ctx, b := m.ctx, m.b
	return func() tea.Msg {
		list, err := b.Pending(ctx, conv)
		return pendingMsg{list: list, err: err}
	}
}

func (m *Model) resumeActive() bool { return len(m.resume.queue) > 0 }

func (m *Model) onPending(msg pendingMsg) tea.Cmd {
	if msg.err != nil {
		m.setError(fmt.Errorf("interrupted turns: %w", msg.err))
		return nil
	}
	for _, p := range msg.list {
		if m.resume.taken[p.TurnKey] || m.queued(p.TurnKey) {
			continue
		}
		m.resume.queue = append(m.resume.queue, p)
	}
	return nil
}

func (m *Model) queued(key string) bool {
	for _, q := range m.resume.queue {
		if q.TurnKey == key {
			return true
		}
	}
	return false
}

// afterOpen follows a conversation opening: a resume asked for before it opened starts
// now; otherwise the conversation's interrupted turns are offered.
func (m *Model) afterOpen(conv string) tea.Cmd {
	if p := m.resume.after; p != nil && p.Conv == conv {
		m.resume.after = nil
		return m.runResume(*p)
	}
	return m.checkPending(conv)
}

// resumeKey answers the prompt: r resumes, d discards, l or esc puts it off.
func (m *Model) resumeKey(k tea.KeyPressMsg) tea.Cmd {
	p := m.resume.queue[0]
	take := func() {
		m.resume.queue = m.resume.queue[1:]
		if m.resume.taken == nil {
			m.resume.taken = map[string]bool{}
		}
		m.resume.taken[p.TurnKey] = true
	}
	switch k.String() {
	case "r":
		if p.Stale {
			m.setStatus("the branch moved since this turn began: it can only be discarded (d)")
			return nil
		}
		if m.run != nil {
			m.setStatus("a turn is running: wait for it or cancel it (esc) first")
			return nil
		}
		take()
		if m.conv != nil && m.conv.ID == p.Conv {
			return m.runResume(p)
		}
		m.resume.after = &p
		return m.openByID(p.Conv)
	case "d":
		take()
		reload := m.conv != nil && m.conv.ID == p.Conv
		key, label := p.TurnKey, pendingLabel(p)
		return m.op(func(ctx context.Context, b Backend) opMsg {
			if err := b.Discard(ctx, key); err != nil {
				return opMsg{err: fmt.Errorf("discard %s: %w", label, err)}
			}
			return opMsg{status: "discarded " + label, reload: reload}
		})
	case "l", "esc":
		m.resume.queue = m.resume.queue[1:]
		m.setStatus(pendingLabel(p) + " kept: it is offered again when its conversation is opened")
	}
	return nil
}

// openByID opens a conversation known only by ID (the list may not be loaded yet).
func (m *Model) openByID(id string) tea.Cmd {
	ctx, b := m.ctx, m.b
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
	pane.stream = &streamState{inputs: p.Inputs, started: time.Now()}
	pane.list.follow = true
	b, key, branch := m.b, p.TurnKey, p.Branch
	m.setStatus(fmt.Sprintf("resuming %s: answered calls are replayed from storage…", pendingLabel(p)))
	return tea.Batch(open, m.startRun(pane, "resume", func(ctx context.Context, ev chan<- sessions.Event) (string, *trace.Turn, error) {
		t, err := b.Resume(ctx, key, ev)
		return branch, t, err
	}))
}

func pendingLabel(p sessions.PendingInfo) string {
	return fmt.Sprintf("interrupted turn %d on %s", p.Index+1, termtext.OneLine(p.Branch))
}

// resumeText is the prompt's wording.
func resumeText(p sessions.PendingInfo) string {
	done := fmt.Sprintf("%d calls done", p.CallsDone)
	if p.CallsExpected >= p.CallsDone && p.CallsExpected > 0 {
		done = fmt.Sprintf("%d of %d calls done", p.CallsDone, p.CallsExpected)
	}
	if p.Stale {
		return fmt.Sprintf("Turn %d on branch %s was interrupted (%s), and the branch has moved since: [d]iscard / [l]ater",
			p.Index+1, termtext.OneLine(p.Branch), done)
	}
	return fmt.Sprintf("Turn %d on branch %s was interrupted (%s): [r]esume / [d]iscard / [l]ater",
		p.Index+1, termtext.OneLine(p.Branch), done)
}

// resumeView draws the prompt for the first interrupted turn in the body area.
func (m *Model) resumeView(w, h int) []string {
	s := m.st.s
	p := m.resume.queue[0]
	inner := max(w-4, 10)
	lines := []string{""}
	for _, l := range wrapLines(resumeText(p), inner) {
		lines = append(lines, s.Warning.Render(l))
	}
	lines = append(lines, "", s.Muted.Render("conversation: ")+termtext.OneLine(p.ConvTitle))
	if !p.Started.IsZero() {
		lines = append(lines, s.Muted.Render("started: ")+p.Started.Local().Format("2006-01-02 15:04:05"))
	}
	lines = append(lines, s.Muted.Render("inputs:"))
	lines = append(lines, indent(fieldLines(m.rend(), p.Inputs, inner-2), "  ")...)
	lines = append(lines, "")
	for _, l := range wrapLines("Resuming replays the calls already answered from storage (they are not paid for again) "+
		"and sends only the rest; discarding leaves the branch as it is.", inner) {
		lines = append(lines, s.Muted.Render(l))
	}
	footer := " r resume · d discard · l later "
	if p.Stale {
		footer = " d discard · l later "
	}
	if n := len(m.resume.queue); n > 1 {
		footer += fmt.Sprintf("· %d more ", n-1)
	}
	return frame(s.PaneFocused, s.PaneTitle, " interrupted turn ", footer, indent(lines, " "), w, h)
}
