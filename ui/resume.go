package ui

import (
	"context"
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// resumePrompt offers the turns a crash or kill left in flight, one at a time: resume
// (answered calls are replayed from storage), discard, or later. While it has a turn to
// offer it is drawn over everything and has the keys.
type resumePrompt struct {
	e     *env
	w, h  int
	queue []sessions.PendingInfo
	// taken are turns already resumed or discarded this session: the backend still
	// lists a turn while its resume runs, and it must not be offered twice.
	taken map[string]bool
	// after is a turn to resume once its conversation has opened.
	after *sessions.PendingInfo
}

type (
	pendingMsg struct {
		list []sessions.PendingInfo
		err  error
	}
	// resumeMsg asks the root to resume a turn (it owns the run in flight).
	resumeMsg struct{ p sessions.PendingInfo }
)

// checkPending asks for interrupted turns (conv "" = everywhere).
func checkPending(e *env, conv string) tea.Cmd {
	ctx, b := e.ctx, e.b
	return func() tea.Msg {
		list, err := b.Pending(ctx, conv)
		return pendingMsg{list: list, err: err}
	}
}

func (r *resumePrompt) SetSize(w, h int) { r.w, r.h = w, h }

func (r *resumePrompt) active() bool { return len(r.queue) > 0 }

// add queues the interrupted turns not offered yet.
func (r *resumePrompt) add(msg pendingMsg) tea.Cmd {
	if msg.err != nil {
		return r.e.fail(fmt.Errorf("interrupted turns: %w", msg.err))
	}
	for _, p := range msg.list {
		if !r.taken[p.TurnKey] && !r.queued(p.TurnKey) {
			r.queue = append(r.queue, p)
		}
	}
	return nil
}

func (r *resumePrompt) queued(key string) bool {
	for _, q := range r.queue {
		if q.TurnKey == key {
			return true
		}
	}
	return false
}

func (r *resumePrompt) take() sessions.PendingInfo {
	p := r.queue[0]
	r.queue = r.queue[1:]
	if r.taken == nil {
		r.taken = map[string]bool{}
	}
	r.taken[p.TurnKey] = true
	return p
}

func (r *resumePrompt) bindings() []binding {
	k := r.e.keys
	stale := func() bool { return len(r.queue) > 0 && r.queue[0].Stale }
	return []binding{
		bind(k.Resume, "resume", true, r.resume).only(func() bool { return !stale() }),
		bind(k.Discard, "discard", true, r.discard),
		bind(k.Later, "later", true, r.later),
		bind(k.Cancel, "later", false, r.later),
		bind(k.Resume, "resume", false, func() tea.Cmd {
			return r.e.say("the branch moved since this turn began: it can only be discarded (" + k.Discard.Help().Key + ")")
		}).only(stale),
	}
}

func (r *resumePrompt) Update(msg tea.Msg) tea.Cmd {
	if k, ok := msg.(tea.KeyPressMsg); ok && r.active() {
		cmd, _ := dispatch(k, r.bindings())
		return cmd
	}
	return nil
}

func (r *resumePrompt) resume() tea.Cmd {
	if r.e.running != nil && r.e.running() {
		return r.e.say("a turn is running: wait for it or cancel it (" + r.e.keys.Cancel.Help().Key + ") first")
	}
	p := r.take()
	r.e.emit(resumeMsg{p})
	return nil
}

func (r *resumePrompt) discard() tea.Cmd {
	p := r.take()
	reload := r.e.convID() == p.Conv
	key, label := p.TurnKey, pendingLabel(p)
	return r.e.op(func(ctx context.Context, b Backend) opMsg {
		if err := b.Discard(ctx, key); err != nil {
			return opMsg{err: fmt.Errorf("discard %s: %w", label, err)}
		}
		return opMsg{status: "discarded " + label, reload: reload}
	})
}

func (r *resumePrompt) later() tea.Cmd {
	p := r.queue[0]
	r.queue = r.queue[1:]
	return r.e.say(pendingLabel(p) + " kept: it is offered again when its conversation is opened")
}

func pendingLabel(p sessions.PendingInfo) string {
	return fmt.Sprintf("interrupted %s on %s", turnLabel(p.Index), termtext.OneLine(p.Branch))
}

// resumeText is the prompt's wording.
func resumeText(p sessions.PendingInfo, k KeyMap) string {
	done := termtext.Count(p.CallsDone, "call") + " done"
	if p.CallsExpected >= p.CallsDone && p.CallsExpected > 0 {
		done = fmt.Sprintf("%d of %d calls done", p.CallsDone, p.CallsExpected)
	}
	choices := choice(k.Discard, "discard") + " / " + choice(k.Later, "later")
	if p.Stale {
		return fmt.Sprintf("%s on branch %s was interrupted (%s), and the branch has moved since: %s",
			upper(turnLabel(p.Index)), termtext.OneLine(p.Branch), done, choices)
	}
	return fmt.Sprintf("%s on branch %s was interrupted (%s): %s / %s",
		upper(turnLabel(p.Index)), termtext.OneLine(p.Branch), done, choice(k.Resume, "resume"), choices)
}

// choice names a key and what it does: "[r]esume" when the word starts with the key,
// "[ctrl+r] resume" otherwise.
func choice(b key.Binding, word string) string {
	k := b.Help().Key
	if rest, ok := strings.CutPrefix(word, k); ok {
		return "[" + k + "]" + rest
	}
	return "[" + k + "] " + word
}

func upper(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// View draws the prompt for the first interrupted turn.
func (r *resumePrompt) View() []string {
	s := r.e.st.s
	p := r.queue[0]
	inner := max(r.w-4, 10)
	lines := []string{""}
	for _, l := range wrapLines(resumeText(p, r.e.keys), inner) {
		lines = append(lines, s.Warning.Render(l))
	}
	lines = append(lines, "", s.Muted.Render("conversation: ")+termtext.OneLine(p.ConvTitle))
	if !p.Started.IsZero() {
		lines = append(lines, s.Muted.Render("started: ")+p.Started.Local().Format("2006-01-02 15:04:05"))
	}
	lines = append(lines, s.Muted.Render("inputs:"))
	lines = append(lines, indent(fieldLines(r.e.rend(), p.Inputs, inner-2), "  ")...)
	lines = append(lines, "")
	for _, l := range wrapLines("Resuming replays the calls already answered from storage (they are not paid for again) "+
		"and sends only the rest; discarding leaves the branch as it is.", inner) {
		lines = append(lines, s.Muted.Render(l))
	}
	footer := hints(hintsOf(r.bindings())...)
	if n := len(r.queue); n > 1 {
		footer += fmt.Sprintf("· %d more ", n-1)
	}
	return frame(s.PaneFocused, s.PaneTitle, " interrupted turn ", footer, indent(lines, " "), r.w, r.h)
}
