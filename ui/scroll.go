package ui

import (
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
)

// keyOrWheel is what every component does first in Update: a key press goes to its
// binding table, the wheel scrolls it by three lines (scroll nil: no wheel). ok reports
// whether msg was one of the two.
func keyOrWheel(msg tea.Msg, table []binding, scroll func(delta int)) (cmd tea.Cmd, ok bool) {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		cmd, _ = dispatch(msg, table)
		return cmd, true
	case tea.MouseWheelMsg:
		if scroll != nil {
			if msg.Button == tea.MouseWheelUp {
				scroll(-3)
			} else {
				scroll(3)
			}
		}
		return nil, true
	}
	return nil, false
}

// scrollViewport moves a viewport by delta lines (negative: up).
func scrollViewport(vp *viewport.Model, delta int) {
	if delta < 0 {
		vp.ScrollUp(-delta)
	} else {
		vp.ScrollDown(delta)
	}
}

// viewportKeys are the scroll keys of a component showing a bubbles viewport; after,
// when set, runs after each move.
func viewportKeys(k KeyMap, vp *viewport.Model, after func()) []binding {
	move := func(f func()) func() tea.Cmd {
		return do(func() {
			f()
			if after != nil {
				after()
			}
		})
	}
	return []binding{
		bind(k.Down, "scroll", true, move(func() { vp.ScrollDown(1) })),
		bind(k.Up, "scroll up", false, move(func() { vp.ScrollUp(1) })),
		bind(k.PgDown, "page down", false, move(func() { vp.ScrollDown(vp.Height()) })),
		bind(k.PageUp, "page up", false, move(func() { vp.ScrollUp(vp.Height()) })),
		bind(k.Top, "top", false, move(func() { vp.GotoTop() })),
		bind(k.Bottom, "bottom", false, move(func() { vp.GotoBottom() })),
	}
}
