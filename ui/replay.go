package ui

import (
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// replayForm chooses what a replay changes: model, strategy or agent. Enter replays the
// branch into a new sibling and opens the runs compare on both.
type replayForm struct {
	e        *env
	w, h     int
	branch   string
	from     string // TurnID; "" = whole branch
	fromIdx  int
	strategy int // 0 keeps
	agent    int // -1 keeps
	model    textinput.Model
}

// replayMsg asks the root to run a replay (it owns the run in flight).
type replayMsg struct{ req sessions.ReplayRequest }

func newReplayForm(e *env, branch, from string, fromIdx int) *replayForm {
	f := &replayForm{e: e, branch: branch, from: from, fromIdx: fromIdx, agent: -1, model: textinput.New()}
	if e.recorded() && len(e.agents) > 0 {
		// a recorded conversation has no agent of its own to keep: its turns' inputs go
		// to an agent chosen here
		f.agent = 0
	}
	f.model.Placeholder = "model (empty keeps " + termtext.OneLine(e.model) + ")"
	steady(&f.model)
	f.model.Focus()
	return f
}

func (f *replayForm) SetSize(w, h int) {
	f.w, f.h = w, h
	f.model.SetWidth(max(w-16, 10)) // frame, indent, label and the "> " prompt take the rest
}

func (f *replayForm) bindings() []binding {
	k := f.e.keys
	return []binding{
		bind(k.Send, "replay", true, f.submit),
		bind(k.ReplayStrategy, "strategy", true, do(func() { f.strategy = (f.strategy + 1) % (len(f.e.strats) + 1) })),
		bind(k.ReplayAgent, "agent", true, do(func() {
			if n := len(f.e.agents); n > 0 {
				if f.agent++; f.agent >= n {
					f.agent = -1
					if f.e.recorded() {
						f.agent = 0
					}
				}
			}
		})),
		closeBinding(f.e),
	}
}

func (f *replayForm) Update(msg tea.Msg) tea.Cmd {
	if k, ok := msg.(tea.KeyPressMsg); ok {
		if cmd, ok := dispatch(k, f.bindings()); ok {
			return cmd
		}
	}
	var cmd tea.Cmd
	f.model, cmd = f.model.Update(msg)
	return cmd
}

func (f *replayForm) submit() tea.Cmd {
	if f.e.recorded() && f.agent < 0 {
		return f.e.say("a recorded conversation has no agent to replay it with: choose one (" + f.e.keys.ReplayAgent.Help().Key + ")")
	}
	req := sessions.ReplayRequest{Conv: f.e.convID(), Branch: f.branch, From: f.from, Model: f.model.Value(), Strategy: f.strategy}
	if f.agent >= 0 && f.agent < len(f.e.agents) {
		req.Agent = f.e.agents[f.agent].Name
	}
	f.e.emit(closeModalMsg{})
	f.e.emit(replayMsg{req})
	return nil
}

func (f *replayForm) View() []string {
	s := f.e.st.s
	from := "the first turn"
	if f.from != "" {
		from = turnLabel(f.fromIdx)
	}
	// "unchanged" rather than "keep": keep is also the name of strategy 1
	agent := "unchanged (" + termtext.OneLine(f.e.agent.Name) + ")"
	if f.agent >= 0 && f.agent < len(f.e.agents) {
		agent = termtext.OneLine(f.e.agents[f.agent].Name)
	}
	strat := "unchanged"
	if f.strategy > 0 {
		strat = strategyLabel(f.e.strats, f.strategy)
	}
	k := f.e.keys
	body := []string{
		"Replay " + s.Accent.Render(termtext.OneLine(f.branch)) + " from " + from + " into a new sibling branch,",
		"then compare both side by side, turn by turn.",
		"",
		s.Muted.Render(fit("strategy ("+k.ReplayStrategy.Help().Key+"):", 21)) + strat,
		s.Muted.Render(fit("agent ("+k.ReplayAgent.Help().Key+"):", 21)) + agent,
		s.Muted.Render("model: ") + f.model.View(),
	}
	return frame(s.PaneFocused, s.PaneTitle, " compare runs ", hints(hintsOf(f.bindings())...), indent(body, " "), f.w, f.h)
}
