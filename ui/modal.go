package ui

import (
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// modal is a view over the body (the help, a call's detail, the navigator, the
// conversation list, the forms, the compare views). While one is open it gets the keys;
// its binding table drives them, its footer and the bottom line.
type modal interface {
	SetSize(w, h int)
	Update(msg tea.Msg) tea.Cmd
	View() []string
	bindings() []binding
}

type (
	openModalMsg  struct{ m modal }
	closeModalMsg struct{}
	// helpMsg opens the help for the keys of what has the focus.
	helpMsg struct{}
)

// closeBinding and helpBinding end every modal's table.
func closeBinding(e *env) binding {
	return bind(e.keys.Cancel, "back", true, e.emitter(closeModalMsg{}))
}
func helpBinding(e *env) binding { return bind(e.keys.Help, "help", true, e.emitter(helpMsg{})) }

// textView is a scrollable page of text in a bubbles viewport: a call's detail, the
// error log, the help. Its lines are built for its width, again when the width changes.
type textView struct {
	e      *env
	title  string
	build  func(w int) []string
	vp     viewport.Model
	builtW int
	w, h   int
	// extra are bindings of the page's own (the call detail's compare key)
	extra []binding
	// isHelp: the help itself offers no help key
	isHelp bool
}

func newTextView(e *env, title string, build func(w int) []string) *textView {
	return &textView{e: e, title: title, build: build, vp: viewport.New()}
}

func (t *textView) SetSize(w, h int) {
	t.w, t.h = w, h
	t.vp.SetWidth(max(w-3, 1))
	t.vp.SetHeight(max(h-2, 1))
	if bw := max(w-4, 10); bw != t.builtW {
		t.builtW = bw
		t.vp.SetContentLines(t.build(bw))
	}
}

func (t *textView) bindings() []binding {
	table := append([]binding(nil), t.extra...)
	table = append(table, viewportKeys(t.e.keys, &t.vp, nil)...)
	if t.isHelp {
		return append(table, closeBinding(t.e))
	}
	return append(table, closeBinding(t.e), helpBinding(t.e))
}

func (t *textView) Update(msg tea.Msg) tea.Cmd {
	cmd, _ := keyOrWheel(msg, t.bindings(), func(d int) { scrollViewport(&t.vp, d) })
	return cmd
}

func (t *textView) View() []string {
	s := t.e.st.s
	end := min(t.vp.TotalLineCount(), t.vp.YOffset()+t.vp.Height())
	footer := " " + strconv.Itoa(end) + "/" + strconv.Itoa(t.vp.TotalLineCount()) + " ·" + hints(hintsOf(t.bindings())...)
	body := indent(strings.Split(t.vp.View(), "\n"), " ")
	return frame(s.PaneFocused, s.PaneTitle, " "+t.title+" ", footer, body, t.w, t.h)
}

// helpGroup is a titled list of keys in the help.
type helpGroup struct {
	title string
	keys  []key.Binding
}

// newHelpView shows groups of keys, as many side by side as fit.
func newHelpView(e *env, groups []helpGroup) *textView {
	build := func(w int) []string {
		s := e.st.s
		var blocks [][]string
		for _, g := range groups {
			if len(g.keys) == 0 {
				continue
			}
			b := []string{s.Title.Render(g.title)}
			// every key of a binding, "up/k", not just the one the footers show
			label := func(k key.Binding) string { return strings.Join(k.Keys(), "/") }
			kw := 0
			for _, k := range g.keys {
				kw = max(kw, ansi.StringWidth(label(k)))
			}
			for _, k := range g.keys {
				b = append(b, s.HelpKey.Render(fit(label(k), kw))+"  "+s.HelpDesc.Render(k.Help().Desc))
			}
			blocks = append(blocks, b)
		}
		lines := []string{s.Muted.Render("keys can be rebound in the config file's [keys] table · " + e.keys.Cancel.Help().Key + " closes"), ""}
		var row [][]string
		used := 0
		flush := func() {
			if len(row) > 0 {
				lines = append(append(lines, hjoin(row...)...), "")
			}
			row, used = nil, 0
		}
		for _, b := range blocks {
			bw := 0
			for _, l := range b {
				bw = max(bw, ansi.StringWidth(l))
			}
			bw += 3
			if used+bw > w && len(row) > 0 {
				flush()
			}
			row = append(row, fitBlock(b, bw, len(b)))
			used += bw
		}
		flush()
		return lines
	}
	tv := newTextView(e, "help", build)
	tv.isHelp = true
	return tv
}
