package ui

import (
	"fmt"
	"sort"
	"strings"

	"charm.land/bubbles/v2/key"
)

// KeyMap holds every binding. The field names' snake_case forms (see bindingNames) are
// the keys of the [keys] table in the config file.
type KeyMap struct {
	Focus, FocusBack         key.Binding
	Fork, Undo, UndoCascade  key.Binding
	Redo, Edit, NewPane      key.Binding
	ClosePane                key.Binding
	Strategy, Compare        key.Binding
	ToggleTree, ToggleWire   key.Binding
	Branches, Conversations  key.Binding
	Replay                   key.Binding
	Send, Newline            key.Binding
	Cancel, Quit, Help       key.Binding
	Up, Down, PageUp, PgDown key.Binding
	Top, Bottom              key.Binding
	Expand, Collapse         key.Binding
	ExpandAll, CollapseAll   key.Binding
	Actual, ErrorDetail      key.Binding
	HistoryPrev, HistoryNext key.Binding
	New, Rename, Delete      key.Binding
	Filter, Confirm          key.Binding
}

// DefaultKeys is the default layout.
func DefaultKeys() KeyMap {
	b := func(help string, keys ...string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(keys[0], help))
	}
	return KeyMap{
		Focus:         b("next pane", "tab"),
		FocusBack:     b("previous pane", "shift+tab"),
		Fork:          b("fork", "f"),
		Undo:          b("undo", "u"),
		UndoCascade:   b("undo cascading", "U"),
		Redo:          b("redo", "r"),
		Edit:          b("edit & resubmit", "e"),
		NewPane:       b("new branch pane", "n"),
		ClosePane:     b("close pane", "x"),
		Strategy:      b("cycle strategy", "s"),
		Compare:       b("compare strategies", "c"),
		ToggleTree:    b("toggle call tree", "t"),
		ToggleWire:    b("toggle wire pane", "w"),
		Branches:      b("branch navigator", "b"),
		Conversations: b("conversations", "L"),
		Replay:        b("compare runs (replay)", "R"),
		Send:          b("send / expand / open", "enter"),
		Newline:       b("new line", "ctrl+j", "alt+enter"),
		Cancel:        b("cancel / back", "esc"),
		Quit:          b("quit", "ctrl+c"),
		Help:          b("help", "?"),
		Up:            b("up", "up", "k"),
		Down:          b("down", "down", "j"),
		PageUp:        b("page up", "pgup"),
		PgDown:        b("page down", "pgdown"),
		Top:           b("top", "home", "g"),
		Bottom:        b("bottom", "end", "G"),
		Expand:        b("expand", "right", "l"),
		Collapse:      b("collapse", "left", "h"),
		ExpandAll:     b("expand all", "+"),
		CollapseAll:   b("collapse all", "-"),
		Actual:        b("actual request", "a"),
		ErrorDetail:   b("error detail", "E"),
		HistoryPrev:   b("previous input", "ctrl+p"),
		HistoryNext:   b("next input", "ctrl+n"),
		New:           b("new conversation", "n"),
		Rename:        b("rename", "r"),
		Delete:        b("delete", "d"),
		Filter:        b("filter", "/"),
		Confirm:       b("confirm", "y"),
	}
}

// bindingNames maps config names to bindings.
func (k *KeyMap) bindingNames() map[string]*key.Binding {
	return map[string]*key.Binding{
		"focus": &k.Focus, "focus_back": &k.FocusBack, "fork": &k.Fork, "undo": &k.Undo,
		"undo_cascade": &k.UndoCascade, "redo": &k.Redo, "edit": &k.Edit,
		"new_pane": &k.NewPane, "close_pane": &k.ClosePane, "strategy": &k.Strategy,
		"compare": &k.Compare, "toggle_tree": &k.ToggleTree, "toggle_wire": &k.ToggleWire,
		"branches": &k.Branches, "conversations": &k.Conversations, "replay": &k.Replay,
		"send": &k.Send, "newline": &k.Newline, "cancel": &k.Cancel, "quit": &k.Quit,
		"help": &k.Help, "up": &k.Up, "down": &k.Down, "page_up": &k.PageUp,
		"page_down": &k.PgDown, "top": &k.Top, "bottom": &k.Bottom, "expand": &k.Expand,
		"collapse": &k.Collapse, "expand_all": &k.ExpandAll, "collapse_all": &k.CollapseAll,
		"actual": &k.Actual, "error_detail": &k.ErrorDetail, "history_prev": &k.HistoryPrev,
		"history_next": &k.HistoryNext, "new": &k.New, "rename": &k.Rename,
		"delete": &k.Delete, "filter": &k.Filter, "confirm": &k.Confirm,
	}
}

// Rebind applies the config file's [keys] table: name -> list of keys.
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
			return fmt.Errorf("keys: unknown action %q (known: %s)", a, strings.Join(known, ", "))
		}
		if len(keys) == 0 {
			return fmt.Errorf("keys: action %q has no keys", a)
		}
		bnd.SetKeys(keys...)
		bnd.SetHelp(keys[0], bnd.Help().Desc)
	}
	return nil
}

// ShortHelp is the bottom line.
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Send, k.Focus, k.Strategy, k.ToggleTree, k.ToggleWire, k.Branches, k.Help, k.Quit}
}

// FullHelp groups every binding for the ? screen.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Focus, k.FocusBack, k.Send, k.Newline, k.Cancel, k.HistoryPrev, k.HistoryNext, k.Help, k.Quit},
		{k.Fork, k.Undo, k.UndoCascade, k.Redo, k.Edit, k.NewPane, k.ClosePane, k.Branches, k.Replay},
		{k.Strategy, k.Compare, k.Actual, k.ToggleTree, k.ToggleWire, k.ErrorDetail, k.Conversations},
		{k.Up, k.Down, k.PageUp, k.PgDown, k.Top, k.Bottom, k.Expand, k.Collapse, k.ExpandAll, k.CollapseAll},
		{k.New, k.Rename, k.Delete, k.Filter, k.Confirm},
	}
}

// as is b under another description (same keys), for help that names what a key does
// where the user is.
func as(b key.Binding, desc string) key.Binding {
	return key.NewBinding(key.WithKeys(b.Keys()...), key.WithHelp(b.Help().Key, desc))
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

// contextHelp is the bottom line: the keys of the pane or overlay in use.
func (m *Model) contextHelp() []key.Binding {
	k := m.keys
	back := as(k.Cancel, "back")
	switch m.overlay {
	case overlayText:
		return []key.Binding{as(k.Down, "scroll"), k.PgDown, k.Top, k.Bottom, back, k.Quit}
	case overlayConvs:
		return []key.Binding{as(k.Send, "open"), k.New, k.Rename, k.Delete, k.Filter, back, k.Quit}
	case overlayBranches:
		return []key.Binding{as(k.Send, "switch"), k.Fork, k.Edit, as(k.Collapse, "fold"), as(k.Expand, "unfold"), back, k.Quit}
	case overlayReplay:
		return []key.Binding{as(k.Send, "replay"), back, k.Quit}
	case overlayCompare:
		return []key.Binding{as(k.Down, "scroll"), k.PgDown, back, k.Quit}
	}
	switch m.focus {
	case focusChat:
		return []key.Binding{as(k.Up, "select turn"), as(k.Send, "calls"), k.Fork, k.Edit, k.Undo, k.UndoCascade, k.Redo, k.Branches, k.Replay, k.Focus, k.Help, k.Quit}
	case focusTree:
		return []key.Binding{as(k.Send, "call detail"), k.Expand, k.Collapse, k.ExpandAll, k.CollapseAll, k.Focus, k.Help, k.Quit}
	case focusWire:
		return []key.Binding{k.Strategy, k.Compare, k.Actual, as(k.Down, "scroll"), k.ToggleWire, k.Focus, k.Help, k.Quit}
	}
	return []key.Binding{as(k.Send, "send"), k.Newline, k.HistoryPrev, k.Focus, as(k.Cancel, "leave editor, then "+k.Help.Help().Key+" help"), k.Quit}
}
