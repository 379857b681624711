package ui

import (
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/ui/sessions"
)

// Turns written by another process (a headless `run`, the recording proxy) appear
// without sending: every pollEvery the open conversation's branches are read (one cheap
// query) and panes whose branch moved are reloaded; while the conversation list is
// shown, it is read too (one query) and its rows change only where something did.

type pollTickMsg struct{}

// SetPoll sets how often the open conversation is checked for turns written elsewhere
// (0 turns it off; New leaves it off, Run sets it).
func (m *Model) SetPoll(every time.Duration) { m.pollEvery = every }

func (m *Model) schedulePoll() tea.Cmd {
	if m.pollEvery <= 0 || m.polling {
		return nil
	}
	m.polling = true
	return tea.Tick(m.pollEvery, func(time.Time) tea.Msg { return pollTickMsg{} })
}

// onPoll reloads what changed: a branch whose tip or length moved, a new branch.
func (m *Model) onPoll(msg branchesMsg) tea.Cmd {
	if msg.err != nil || msg.conv != m.e.convID() {
		return nil // a failed poll is retried at the next tick; errors show when acting
	}
	old := map[string]sessions.BranchInfo{}
	for _, b := range m.e.branches {
		old[b.Name] = b
	}
	changed := len(old) != len(msg.list)
	var cmds []tea.Cmd
	for _, b := range msg.list {
		o, ok := old[b.Name]
		if !ok || o.Tip != b.Tip || o.Turns != b.Turns || o.Redo != b.Redo {
			changed = true
			for _, p := range m.panes {
				// a pane streaming its own turn reloads when that turn is recorded
				if p.branch == b.Name && p.stream == nil {
					cmds = append(cmds, p.load(-1))
				}
			}
		}
	}
	if !changed {
		return nil
	}
	m.setBranches(msg.list)
	m.e.previews = previewCache{}
	return tea.Batch(cmds...)
}
