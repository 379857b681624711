package ui

import (
	"fmt"
	"sort"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// KeyMap holds every rebindable key. The field names' snake_case forms (bindingNames) are
// the keys of the [keys] table in the config file. Components never match keys against
// literal strings: each builds a binding table from these (see binding), and that table
// both dispatches its keys and lists its help.
type KeyMap struct {
	Focus, FocusBack         key.Binding
	Fork, Undo, Redo, Edit   key.Binding
	Retry                    key.Binding
	NewPane, ClosePane       key.Binding
	Strategy, Compare        key.Binding
	ToggleTree, ToggleWire   key.Binding
	Branches, Conversations  key.Binding
	Replay                   key.Binding
	Send, Newline            key.Binding
	NextField, PrevField     key.Binding
	Cancel, Quit, Help       key.Binding
	Up, Down, PageUp, PgDown key.Binding
	Top, Bottom              key.Binding
	Expand, Collapse         key.Binding
	ExpandAll, CollapseAll   key.Binding
	Actual, ErrorDetail      key.Binding
	HistoryPrev, HistoryNext key.Binding
	New, Rename, Delete      key.Binding
	Filter, Confirm          key.Binding
	Mouse, Models            key.Binding
	// the compare view
	NextDiff, PrevDiff key.Binding
	Fold, Side, Layout key.Binding
	OtherBranch        key.Binding
	CopyText, CopyJSON key.Binding
	SaveText, SaveJSON key.Binding
	// the resume prompt
	Resume, Discard, Later key.Binding
	// the replay form
	ReplayStrategy, ReplayAgent key.Binding
	NewAgent                    key.Binding
}

// DefaultKeys is the default layout.
func DefaultKeys() KeyMap {
	b := func(help string, keys ...string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(keys[0], help))
	}
	return KeyMap{
		Focus:          b("next pane", "tab"),
		FocusBack:      b("previous pane", "shift+tab"),
		Fork:           b("fork", "f"),
		Undo:           b("undo", "u"),
		Redo:           b("redo", "r"),
		Edit:           b("edit & resubmit", "e"),
		Retry:          b("retry a failed turn", "ctrl+r"),
		NewPane:        b("new branch pane", "n"),
		ClosePane:      b("close pane", "x"),
		Strategy:       b("cycle strategy", "s"),
		Compare:        b("compare strategies", "c"),
		ToggleTree:     b("toggle call tree", "t"),
		ToggleWire:     b("toggle wire pane", "w"),
		Branches:       b("branch navigator", "b"),
		Conversations:  b("conversations", "L"),
		Replay:         b("compare runs (replay)", "R"),
		Send:           b("send", "enter"),
		Newline:        b("new line", "ctrl+j", "alt+enter"),
		NextField:      b("next field", "tab"),
		PrevField:      b("previous field", "shift+tab"),
		Cancel:         b("back", "esc"),
		Quit:           b("quit", "ctrl+c"),
		Help:           b("help", "?", "f1"),
		Up:             b("up", "up", "k"),
		Down:           b("down", "down", "j"),
		PageUp:         b("page up", "pgup"),
		PgDown:         b("page down", "pgdown", "space"),
		Top:            b("top", "home", "g"),
		Bottom:         b("bottom", "end", "G"),
		Expand:         b("expand", "right", "l"),
		Collapse:       b("collapse", "left", "h"),
		ExpandAll:      b("expand all", "+"),
		CollapseAll:    b("collapse all", "-"),
		Actual:         b("actual request", "a"),
		ErrorDetail:    b("error detail", "E"),
		HistoryPrev:    b("previous input", "ctrl+p"),
		HistoryNext:    b("next input", "ctrl+n"),
		New:            b("new conversation", "n"),
		Rename:         b("rename", "r"),
		Delete:         b("delete", "d"),
		Filter:         b("filter", "/"),
		Confirm:        b("confirm", "y"),
		Mouse:          b("mouse capture on/off", "M"),
		Models:         b("choose another model", "m"),
		NextDiff:       b("next difference", "n"),
		PrevDiff:       b("previous difference", "N"),
		Fold:           b("unfold / fold identical lines", "z"),
		Side:           b("other side", "tab"),
		Layout:         b("side by side / stacked / one side", "v"),
		OtherBranch:    b("right side: next branch", "B"),
		CopyText:       b("copy as text", "y"),
		CopyJSON:       b("copy as JSON", "Y"),
		SaveText:       b("save as text file", "o"),
		SaveJSON:       b("save as JSON file", "O"),
		Resume:         b("resume", "r"),
		Discard:        b("discard", "d"),
		Later:          b("later", "l"),
		ReplayStrategy: b("strategy", "tab"),
		ReplayAgent:    b("agent", "shift+tab"),
		NewAgent:       b("other agent", "tab", "shift+tab"),
	}
}

// bindingNames maps config names to bindings.
func (k *KeyMap) bindingNames() map[string]*key.Binding {
	return map[string]*key.Binding{
		"focus": &k.Focus, "focus_back": &k.FocusBack, "fork": &k.Fork, "undo": &k.Undo,
		"redo": &k.Redo, "edit": &k.Edit, "retry": &k.Retry, "new_pane": &k.NewPane, "close_pane": &k.ClosePane,
		"strategy": &k.Strategy, "compare": &k.Compare, "toggle_tree": &k.ToggleTree,
		"toggle_wire": &k.ToggleWire, "branches": &k.Branches, "conversations": &k.Conversations,
		"replay": &k.Replay, "send": &k.Send, "newline": &k.Newline, "next_field": &k.NextField,
		"previous_field": &k.PrevField, "cancel": &k.Cancel, "quit": &k.Quit, "help": &k.Help,
		"up": &k.Up, "down": &k.Down, "page_up": &k.PageUp, "page_down": &k.PgDown, "top": &k.Top,
		"bottom": &k.Bottom, "expand": &k.Expand, "collapse": &k.Collapse,
		"expand_all": &k.ExpandAll, "collapse_all": &k.CollapseAll, "actual": &k.Actual,
		"error_detail": &k.ErrorDetail, "history_prev": &k.HistoryPrev,
		"history_next": &k.HistoryNext, "new": &k.New, "rename": &k.Rename, "delete": &k.Delete,
		"filter": &k.Filter, "confirm": &k.Confirm, "mouse": &k.Mouse, "models": &k.Models,
		"next_difference": &k.NextDiff, "previous_difference": &k.PrevDiff, "fold": &k.Fold,
		"side": &k.Side, "layout": &k.Layout, "other_branch": &k.OtherBranch,
		"copy_text": &k.CopyText, "copy_json": &k.CopyJSON, "save_text": &k.SaveText,
		"save_json": &k.SaveJSON, "resume": &k.Resume, "discard": &k.Discard, "later": &k.Later,
		"replay_strategy": &k.ReplayStrategy, "replay_agent": &k.ReplayAgent,
		"new_agent": &k.NewAgent,
	}
}

// RebindError is a [keys] entry Rebind refuses: which action, and why. The caller that
// read the table from a file locates it there (file:line:key).
type RebindError struct {
	Action string
	Msg    string
}

func (e *RebindError) Error() string { return "keys: " + e.Msg }

// Rebind applies the config file's [keys] table: name -> list of keys. A bad entry is a
// *RebindError.
func (k *KeyMap) Rebind(over map[string][]string) error {
	names := k.bindingNames()
	actions := make([]string, 0, len(over))
	for a := range over {
		actions = append(actions, a)
	}
	sort.Strings(actions)
	for _, a := range actions {
		keys := over[a]
		bnd, ok := names[a]
		if !ok {
			known := make([]string, 0, len(names))
			for n := range names {
				known = append(known, n)
			}
			sort.Strings(known)
			return &RebindError{Action: a, Msg: fmt.Sprintf("unknown action %q (known: %s)", a, strings.Join(known, ", "))}
		}
		if len(keys) == 0 {
			return &RebindError{Action: a, Msg: fmt.Sprintf("action %q has no keys", a)}
		}
		bnd.SetKeys(keys...)
		bnd.SetHelp(keys[0], bnd.Help().Desc)
	}
	return nil
}

// binding is one row of a component's key table: a key with its help text and what it
// does. The same table dispatches key presses and lists the component's help, so the
// two cannot drift apart (lazygit keeps its bindings the same way).
type binding struct {
	key  key.Binding
	run  func() tea.Cmd
	hint bool // shown in the footer (the rest only in the ? help)
	// when, if set, says whether the binding applies now; one that does not is neither
	// dispatched nor shown
	when func() bool
}

// only makes the binding apply only while cond holds.
func (b binding) only(cond func() bool) binding { b.when = cond; return b }

// live says whether the binding applies now. A binding without run is listed but not
// dispatched: the key goes on to what the component wraps (a textarea's new line).
func (b binding) live() bool { return b.when == nil || b.when() }

// bind is a binding under the description desc (the keys of b, another label for what
// the key does in this component).
func bind(b key.Binding, desc string, hint bool, run func() tea.Cmd) binding {
	return binding{key: key.NewBinding(key.WithKeys(b.Keys()...), key.WithHelp(b.Help().Key, desc)), run: run, hint: hint}
}

// do wraps an action without a command.
func do(f func()) func() tea.Cmd { return func() tea.Cmd { f(); return nil } }

// dispatch runs the first binding of the table that k matches.
func dispatch(k tea.KeyPressMsg, table []binding) (tea.Cmd, bool) {
	for _, b := range table {
		if b.run != nil && b.live() && key.Matches(k, b.key) {
			return b.run(), true
		}
	}
	return nil, false
}

// hintsOf are the table's footer bindings, in order.
func hintsOf(table []binding) []key.Binding {
	var out []key.Binding
	for _, b := range table {
		if b.hint && b.live() {
			out = append(out, b.key)
		}
	}
	return out
}

// keysOf are every binding of the table, for the ? help.
func keysOf(table []binding) []key.Binding {
	out := make([]key.Binding, 0, len(table))
	for _, b := range table {
		if b.live() {
			out = append(out, b.key)
		}
	}
	return out
}

// hints is a frame footer listing bindings: " enter open · n new ".
func hints(bs ...key.Binding) string {
	parts := make([]string, 0, len(bs))
	for _, b := range bs {
		if h := b.Help(); h.Key != "" {
			parts = append(parts, h.Key+" "+h.Desc)
		}
	}
	return " " + strings.Join(parts, " · ") + " "
}
