package ui

// vlist scrolls a sequence of variable-height items by (item, line) offsets, so drawing
// and scrolling touch only the items on screen, never the whole sequence: a branch of
// 10,000 turns costs what its visible turns cost. Item lines come from a callback that is
// expected to be memoised by the owner.
type vlist struct {
	idx, line int  // first visible row: line `line` of item `idx`
	follow    bool // pinned to the bottom (new items scroll into view)
}

type linesFunc func(i int) []string

// view returns at most h rows.
func (v *vlist) view(n, h int, lines linesFunc) []string {
	if n == 0 || h <= 0 {
		return nil
	}
	if v.follow {
		v.anchorBottom(n, h, lines)
	}
	v.clamp(n, lines)
	out := make([]string, 0, h)
	for i, skip := v.idx, v.line; i < n && len(out) < h; i, skip = i+1, 0 {
		ls := lines(i)
		if skip < len(ls) {
			ls = ls[skip:]
		} else {
			ls = nil
		}
		if room := h - len(out); len(ls) > room {
			ls = ls[:room]
		}
		out = append(out, ls...)
	}
	return out
}

// anchorBottom sets idx/line so that the last item's last line is the last row.
func (v *vlist) anchorBottom(n, h int, lines linesFunc) {
	need := h
	for i := n - 1; i >= 0; i-- {
		l := len(lines(i))
		if l >= need {
			v.idx, v.line = i, l-need
			return
		}
		need -= l
	}
	v.idx, v.line = 0, 0
}

func (v *vlist) clamp(n int, lines linesFunc) {
	if v.idx >= n {
		v.idx, v.line = n-1, 0
	}
	if v.idx < 0 {
		v.idx, v.line = 0, 0
	}
	if l := len(lines(v.idx)); v.line >= l {
		v.line = max(l-1, 0)
	}
}

// scroll moves by delta rows (negative = up). Scrolling to the very end re-pins to the
// bottom; any upward scroll unpins.
func (v *vlist) scroll(delta, n, h int, lines linesFunc) {
	if n == 0 {
		return
	}
	if v.follow {
		if delta >= 0 {
			return
		}
		v.anchorBottom(n, h, lines)
		v.follow = false
	}
	for delta < 0 {
		if v.line > 0 {
			step := min(v.line, -delta)
			v.line -= step
			delta += step
			continue
		}
		if v.idx == 0 {
			return
		}
		v.idx--
		v.line = len(lines(v.idx))
	}
	for delta > 0 {
		l := len(lines(v.idx))
		if v.line+delta < l {
			v.line += delta
			break
		}
		delta -= l - v.line
		if v.idx == n-1 {
			v.line = l - 1
			break
		}
		v.idx++
		v.line = 0
	}
	if v.atEnd(n, h, lines) {
		v.follow = true
	}
}

// atEnd reports whether the rows from the offset to the end fit in h.
func (v *vlist) atEnd(n, h int, lines linesFunc) bool {
	rows := -v.line
	for i := v.idx; i < n; i++ {
		rows += len(lines(i))
		if rows > h {
			return false
		}
	}
	return true
}

// show scrolls the least amount that puts item i fully (or at least its top) on screen.
func (v *vlist) show(i, n, h int, lines linesFunc) {
	if n == 0 || i < 0 || i >= n {
		return
	}
	if v.follow {
		v.anchorBottom(n, h, lines)
	}
	if i < v.idx || i == v.idx && v.line > 0 {
		v.idx, v.line, v.follow = i, 0, false
		return
	}
	// rows from the top of the screen to the end of item i
	rows := -v.line
	for j := v.idx; j <= i; j++ {
		rows += len(lines(j))
		if j < i && rows > h {
			break
		}
	}
	if rows <= h {
		return
	}
	v.follow = false
	// put the end of item i at the bottom, but never hide its top
	v.idx, v.line = i, 0
	l := len(lines(i))
	if l < h {
		need := h - l
		for j := i - 1; j >= 0 && need > 0; j-- {
			lj := len(lines(j))
			if lj >= need {
				v.idx, v.line = j, lj-need
				break
			}
			need -= lj
			v.idx, v.line = j, 0
		}
	}
	if i == n-1 && v.atEnd(n, h, lines) {
		v.follow = true
	}
}
