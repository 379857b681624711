package ui

import (
	"context"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/themes"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// env is what the components share: the backend and context their commands use, the
// styles and key map, and the open conversation. The root model owns it and is the only
// one to change the conversation; components read it to build their commands (which run
// the backend calls off the update loop).
type env struct {
	ctx  context.Context
	b    Backend
	keys KeyMap
	st   *stylesheet
	md   *markdown
	// styleGen counts theme changes: components drop lines rendered in an old theme.
	styleGen int

	strats []core.StrategyInfo
	agents []sessions.AgentInfo
	model  string

	conv     *sessions.ConversationInfo
	agent    sessions.AgentInfo
	branches []sessions.BranchInfo

	status   *statusBar
	previews previewCache
	// running reports a turn in flight (undo and redo wait for it)
	running func() bool
	// saveDir is where the compare view writes requests (Options.SaveDir).
	saveDir string
	// readOnly says why the database is read-only (Options.ReadOnly); "" when it is not.
	readOnly string
	// outbox holds what components asked of the root during this update (emit)
	outbox []tea.Msg
}

// emit asks the root for something a component cannot do itself (move the focus, open
// or close a modal, run a turn). The root handles it before this update ends, so the
// next key already sees the result: a command's message would come later, and a key
// typed right after esc would land in the editor it was meant to leave.
func (e *env) emit(msg tea.Msg) { e.outbox = append(e.outbox, msg) }

// emitter is an action that emits msg.
func (e *env) emitter(msg tea.Msg) func() tea.Cmd {
	return func() tea.Cmd { e.emit(msg); return nil }
}

// stylesheet is the active theme and its derived styles.
type stylesheet struct {
	theme themes.Theme
	s     themes.Styles
}

func (e *env) rend() renderer { return renderer{st: e.st, md: e.md} }

// convID is the open conversation's ID ("" when none is open).
func (e *env) convID() string {
	if e.conv == nil {
		return ""
	}
	return e.conv.ID
}

// recorded reports that the open conversation was recorded by the proxy: it is read
// only here (no editor, no edit, retry or replay with its own agent), since its program
// runs outside sessionbench.
func (e *env) recorded() bool { return e.conv != nil && e.conv.Recorded }

// branchInfo is the named branch's row, if the branch is known.
func (e *env) branchInfo(name string) (sessions.BranchInfo, bool) {
	for _, b := range e.branches {
		if b.Name == name {
			return b, true
		}
	}
	return sessions.BranchInfo{}, false
}

// statusBar is the line under the panes: what the last action did, or why it failed.
// A message is about the action that caused it: once it is a few seconds old, the next
// key press clears it (errors stay longer and are kept in the log that E opens), so no
// stale text stays on screen. No timer: a frame only changes on an event anyway.
type statusBar struct {
	text string
	err  bool
	at   time.Time
	log  []string
}

// statusLife is how long a message outlives key presses; errors stay errLife.
const (
	statusLife = 3 * time.Second
	errLife    = 10 * time.Second
)

// set shows a message.
func (s *statusBar) set(text string) { s.text, s.err, s.at = text, false, time.Now() }

// fail shows an error and logs it.
func (s *statusBar) fail(err error) {
	if err == nil {
		return
	}
	s.text, s.err, s.at = termtext.OneLine(err.Error()), true, time.Now()
	s.log = append(s.log, time.Now().Format("15:04:05")+"  "+termtext.Sanitize(err.Error()))
}

// keyPressed clears a message old enough to be about an earlier action.
func (s *statusBar) keyPressed(now time.Time) {
	life := statusLife
	if s.err {
		life = errLife
	}
	if s.text != "" && now.Sub(s.at) > life {
		s.text, s.err = "", false
	}
}

// say shows a message; it returns no command, so actions can end with it.
func (e *env) say(text string) tea.Cmd {
	e.status.set(text)
	return nil
}

// fail shows and logs an error.
func (e *env) fail(err error) tea.Cmd {
	e.status.fail(err)
	return nil
}

// busy reports a turn in flight in the status line: undo and redo wait for it (they
// would move the branch tip under it).
func (e *env) busy() bool {
	if e.running == nil || !e.running() {
		return false
	}
	e.status.set("undo and redo wait for the running turn (" + e.keys.Cancel.Help().Key + " cancels it)")
	return true
}

// opMsg is the result of a backend operation that changes branches (fork, undo, redo,
// rename, delete, discard).
type opMsg struct {
	status string
	err    error
	reload bool // reload branches and every pane
	// branches are the branches the operation moved or made: their rows and the panes
	// showing them are reloaded, not the others (without reload)
	branches   []string
	openBranch string // open (or focus) a pane on this branch
	deleted    string // a conversation was deleted (closed if it is open)
	renamed    string // a conversation was renamed to title
	title      string
}

// op runs a backend operation in a command; the root applies its opMsg.
func (e *env) op(f func(ctx context.Context, b Backend) opMsg) tea.Cmd {
	ctx, b := e.ctx, e.b
	return func() tea.Msg { return f(ctx, b) }
}
