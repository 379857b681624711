package ui

import (
	"context"
	"fmt"

	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// Turns that did not complete (issue 13) in the transcript. A failed, cancelled or
// interrupted turn never enters its branch, but it is kept beside it with every call it
// made. The chat pane shows it where it happened: after the branch's tip as a turn of
// its own (✗, the one-line reason, its calls in the call tree, the failing request in the
// wire pane), which can be retried from the failure, edited and retried, or deleted; or,
// when the branch went on past it, as a line before the turn that took its place.

// setKept takes the branch's kept turns: those after the tip become items, the others
// notes. Rendered lines that show notes are dropped.
func (p *chatPane) setKept(list []sessions.KeptTurn) {
	selKey, noteKey := "", ""
	if k := p.keptAt(p.sel); k != nil {
		selKey = k.Key
	}
	if k := p.noteAt(); k != nil {
		noteKey = k.Key
	}
	p.tail, p.notes = nil, nil
	for _, k := range list {
		switch {
		case k.Index == p.total:
			p.tail = append(p.tail, k)
		case k.Index < p.total:
			if p.notes == nil {
				p.notes = map[int][]sessions.KeptTurn{}
			}
			p.notes[k.Index] = append(p.notes[k.Index], k)
		}
	}
	p.cache = map[string][]string{}
	p.note = -1
	for i, k := range p.notes[p.sel] {
		if k.Key == noteKey {
			p.note = i // the line selected before is still there
		}
	}
	if p.want != "" && p.selectKept(p.want) {
		p.want = ""
		return
	}
	switch {
	case selKey != "":
		p.sel = -1 // the kept turn selected before is gone (retried, deleted): the last item
		for i, k := range p.tail {
			if k.Key == selKey {
				p.sel = p.total + i
			}
		}
	case p.sel >= p.items():
		p.sel = p.items() - 1
	}
}

// keptAt is the kept turn at item i (after the path's turns), or nil.
func (p *chatPane) keptAt(i int) *sessions.KeptTurn {
	if i < 0 && p.items() > 0 {
		i = p.items() - 1 // the implicit selection
	}
	if j := i - p.total; j >= 0 && j < len(p.tail) {
		return &p.tail[j]
	}
	return nil
}

// noteCount is how many kept turns' lines are drawn before turn i (0 until it is loaded:
// a placeholder shows none).
func (p *chatPane) noteCount(i int) int {
	if i < 0 || i >= p.total {
		return 0
	}
	if _, t := p.turnAt(i); t == nil {
		return 0
	}
	return len(p.notes[i])
}

// noteAt is the kept turn whose line before the selected turn is selected, or nil. It
// is inspected like any turn (its calls in the call tree, its requests in the wire
// pane); the branch went on past it, so retrying it makes a branch of its own.
func (p *chatPane) noteAt() *sessions.KeptTurn {
	if p.note < 0 || p.note >= p.noteCount(p.sel) {
		return nil
	}
	return &p.notes[p.sel][p.note]
}

// selectKept selects the kept turn key, after the tip or as a line before a turn, and
// scrolls it into view; false when the branch's kept turns read so far lack it.
func (p *chatPane) selectKept(key string) bool {
	for j, k := range p.tail {
		if k.Key == key {
			p.selectAt(p.total + j)
			return true
		}
	}
	for i, list := range p.notes {
		for j, k := range list {
			if k.Key == key {
				p.selectAt(i)
				p.note = j
				return true
			}
		}
	}
	return false
}

// keptSelected reports whether the selection is a kept turn.
func (p *chatPane) keptSelected() bool { return p.keptAt(p.sel) != nil }

// keptMark is a kept turn's sign and status: "✗ failed".
func keptMark(e *env, st trace.Status) string {
	s := e.st.s.Error
	if st == trace.StatusInterrupted || st == trace.StatusRunning {
		s = e.st.s.Muted
	}
	return s.Render(st.Mark() + " " + string(st))
}

// renderKept draws a kept turn: its inputs, ✗ with the one-line reason and the call that
// failed, and what can be done with it.
func renderKept(e *env, k sessions.KeptTurn, w int) []string {
	s := e.st.s
	out := []string{s.UserLabel.Render(fmt.Sprintf("#%d you", k.Index))}
	if k.Turn != nil {
		out = append(out, indent(fieldLines(e.rend(), k.Turn.Inputs, w-2), "  ")...)
	}
	calls := 0
	if k.Turn != nil {
		trace.WalkCalls(k.Turn.Calls, func(*trace.Call, int) { calls++ })
	}
	head := keptMark(e, k.Status) + s.Muted.Render(" · "+termtext.Count(calls, "call")+" kept · not in the branch's history")
	out = append(out, head)
	if c := k.FailedCall; c != nil {
		out = append(out, "  "+s.Error.Render("✗ ")+s.Muted.Render("failed call: ")+termtext.OneLine(c.Path))
	}
	if k.Reason != "" {
		// one line: the whole error is in the call tree's detail and the error log (E)
		out = append(out, "  "+fit(termtext.OneLine(k.Reason), w-2))
	}
	if k.Status == trace.StatusRunning && k.Owner != nil {
		out = append(out, s.Muted.Render("  running in "+termtext.OneLine(k.Owner.String())))
	}
	if e.recorded() {
		// its program runs outside sessionbench: nothing here can run it again
		out = append(out, s.Muted.Render(fmt.Sprintf("  recorded by the proxy · %s deletes", e.keys.Delete.Help().Key)))
	} else if k.Retryable() {
		kk := e.keys
		out = append(out, s.Muted.Render(fmt.Sprintf("  %s retries from the failure (answered calls are reused) · %s edits and retries · %s deletes",
			kk.Retry.Help().Key, kk.Edit.Help().Key, kk.Delete.Help().Key)))
	}
	return append(out, "")
}

// noteLines are the one-line marks of kept turns placed before a turn of the path.
func noteLines(e *env, list []sessions.KeptTurn, w int) []string {
	var out []string
	for _, k := range list {
		line := keptMark(e, k.Status) + e.st.s.Muted.Render(fmt.Sprintf(" #%d ", k.Index)) + termtext.OneLine(mapText(k.Turn.Inputs))
		if k.Reason != "" {
			line += e.st.s.Muted.Render(" · " + termtext.OneLine(k.Reason))
		}
		out = append(out, fit(line, w))
	}
	return out
}

// retry runs the selected kept turn again from where it stopped: on the branch when the
// turn follows its tip, else (a kept turn the branch went on past) on a new branch
// forked where the turn began.
func (p *chatPane) retry() tea.Cmd {
	if k := p.noteAt(); k != nil && !p.e.recorded() {
		if !k.Retryable() {
			return p.e.say(fmt.Sprintf("%s is %s: it cannot be retried now", turnLabel(k.Index), k.Status))
		}
		p.e.emit(retryMsg{key: k.Key, index: k.Index, inputs: k.Turn.Inputs, newBranch: true})
		return nil
	}
	k := p.keptAt(p.sel)
	if k == nil {
		return p.e.say("select a failed, cancelled or interrupted turn to retry")
	}
	if !k.Retryable() {
		return p.e.say(fmt.Sprintf("%s is %s: it cannot be retried now", turnLabel(k.Index), k.Status))
	}
	p.e.emit(retryMsg{key: k.Key, index: k.Index, inputs: k.Turn.Inputs})
	return nil
}

// deleteKept asks to delete the selected kept turn with its calls.
func (p *chatPane) deleteKept() tea.Cmd {
	k := p.keptAt(p.sel)
	if k == nil {
		return nil
	}
	key, label := k.Key, fmt.Sprintf("the %s %s", k.Status, turnLabel(k.Index))
	question := fmt.Sprintf("Delete %s with its calls? It can no longer be retried.", label)
	p.e.emit(openModalMsg{m: newConfirm(p.e, "delete turn", question, func() tea.Cmd {
		return p.e.op(func(ctx context.Context, b Backend) opMsg {
			if err := b.DeleteTurn(ctx, key); err != nil {
				return opMsg{err: err}
			}
			return opMsg{status: "deleted " + label, reload: true}
		})
	})})
	return nil
}

// retryMsg asks the root to run a kept turn again: with its own inputs, or edited ones.
type retryMsg struct {
	key    string
	index  int
	inputs *sig.Map
	edited bool
	// newBranch retries on a new branch forked at the turn's parent (its own branch
	// went on past it).
	newBranch bool
}

// startRetry runs a kept turn again in the focused pane, streaming like a send; edited
// inputs replace its own (edit and retry).
func (m *Model) startRetry(msg retryMsg) tea.Cmd {
	p := m.pane()
	if p == nil || m.e.conv == nil {
		return nil
	}
	if m.runner.active() {
		return m.e.say("a turn is running: " + m.e.keys.Cancel.Help().Key + " cancels it")
	}
	b, branch := m.e.b, p.branch
	req := sessions.RetryRequest{Key: msg.key, NewBranch: msg.newBranch}
	if msg.edited {
		req.Inputs = msg.inputs
	}
	where := ""
	if msg.newBranch {
		where = " on a new branch from where it began"
	}
	m.e.status.set(fmt.Sprintf("retrying %s%s: answered calls are reused, the rest is sent…", turnLabel(msg.index), where))
	return m.runner.start(p, runRetry, msg.inputs, func(ctx context.Context, ev chan<- sessions.Event) (string, *trace.Turn, error) {
		on, t, err := b.Retry(ctx, req, ev)
		if on == "" {
			on = branch
		}
		return on, t, err
	})
}

// quitMsg quits the workbench; a running turn is left interrupted, resumable.
type quitMsg struct{}

// confirmView asks a yes/no question; the confirm key runs yes, back closes it.
type confirmView struct {
	e        *env
	title    string
	question string
	yes      func() tea.Cmd
	w, h     int
	quit     bool // the quit question: the quit key answers it too
}

func newConfirm(e *env, title, question string, yes func() tea.Cmd) *confirmView {
	return &confirmView{e: e, title: title, question: question, yes: yes}
}

func (c *confirmView) SetSize(w, h int) { c.w, c.h = w, h }

func (c *confirmView) bindings() []binding {
	return []binding{
		bind(c.e.keys.Confirm, "yes", true, func() tea.Cmd {
			c.e.emit(closeModalMsg{})
			return c.yes()
		}),
		bind(c.e.keys.Cancel, "no", true, c.e.emitter(closeModalMsg{})),
	}
}

func (c *confirmView) Update(msg tea.Msg) tea.Cmd {
	cmd, _ := keyOrWheel(msg, c.bindings(), func(int) {})
	return cmd
}

func (c *confirmView) View() []string {
	s := c.e.st.s
	body := append([]string{""}, indent(wrapLines(termtext.Sanitize(c.question), max(c.w-4, 10)), " ")...)
	return frame(s.PaneFocused, s.PaneTitle, " "+c.title+" ", hints(hintsOf(c.bindings())...), body, c.w, c.h)
}

// keptFailed puts a turn that did not complete in the status line: what happened to it,
// shortly, and what can be done; the whole error goes to the log (E).
func keptFailed(e *env, kt *sessions.KeptTurnError) {
	k := e.keys
	label := turnLabel(kt.Turn.Index)
	var text string
	switch kt.Turn.Status {
	case trace.StatusCancelled:
		text = fmt.Sprintf("cancelled: %s is kept as a cancelled turn (%s retries it, %s deletes it)", label, k.Retry.Help().Key, k.Delete.Help().Key)
	case trace.StatusInterrupted:
		text = fmt.Sprintf("interrupted: %s is kept, resumable (%s resumes it)", label, k.Retry.Help().Key)
	default:
		where := ""
		if c := trace.FailedCall(kt.Turn.Calls); c != nil {
			where = " in " + termtext.OneLine(c.Path)
		}
		text = fmt.Sprintf("%s failed%s · kept: %s retries from the failure", label, where, k.Retry.Help().Key)
	}
	e.status.fail(kt.Err)
	e.status.text = text
}

// keptCounts marks a conversation's kept turns after its title: " ✗2 ⏸1" (failed and
// cancelled, interrupted and running); "" when there are none.
func keptCounts(kept map[trace.Status]int) string {
	out := ""
	if n := kept[trace.StatusFailed] + kept[trace.StatusCancelled]; n > 0 {
		out += fmt.Sprintf(" ✗%d", n)
	}
	if n := kept[trace.StatusInterrupted] + kept[trace.StatusRunning]; n > 0 {
		out += fmt.Sprintf(" ⏸%d", n)
	}
	return out
}
