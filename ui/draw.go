package ui

import (
	"strconv"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/sessionbench/sessionbench/core/lm"
)

func stripANSI(s string) string { return ansi.Strip(s) }

// fit makes a (possibly styled) line exactly w cells wide: truncated with an ellipsis
// or padded with spaces.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	sw := ansi.StringWidth(s)
	if sw > w {
		s = ansi.Truncate(s, w, "…")
		sw = ansi.StringWidth(s)
	}
	if sw < w {
		s += strings.Repeat(" ", w-sw)
	}
	return s
}

// fitBlock makes lines exactly w x h.
func fitBlock(lines []string, w, h int) []string {
	out := make([]string, max(h, 0))
	for i := range out {
		if i < len(lines) {
			out[i] = fit(lines[i], w)
		} else {
			out[i] = strings.Repeat(" ", max(w, 0))
		}
	}
	return out
}

// frame draws a rounded box of exactly w x h around body (already at most w-2 wide),
// with a title in the top edge and an optional footer in the bottom edge.
func frame(st lipgloss.Style, titleSt lipgloss.Style, title, footer string, body []string, w, h int) []string {
	if w < 2 || h < 2 {
		return fitBlock(nil, max(w, 0), max(h, 0))
	}
	b := lipgloss.RoundedBorder()
	bc := st.GetBorderTopForeground()
	edge := lipgloss.NewStyle().Foreground(bc)
	inner := w - 2
	top := edgeLine(b.Top, titleSt.Render(ansi.Truncate(title, max(inner-2, 0), "…")), inner, edge)
	bot := edgeLine(b.Bottom, edge.Render(ansi.Truncate(footer, max(inner-2, 0), "…")), inner, edge)
	out := make([]string, 0, h)
	out = append(out, edge.Render(b.TopLeft)+top+edge.Render(b.TopRight))
	left, right := edge.Render(b.Left), edge.Render(b.Right)
	for _, l := range fitBlock(body, inner, h-2) {
		out = append(out, left+l+right)
	}
	out = append(out, edge.Render(b.BottomLeft)+bot+edge.Render(b.BottomRight))
	return out
}

func edgeLine(fill, label string, inner int, edge lipgloss.Style) string {
	if label == "" || ansi.StringWidth(label)+2 > inner {
		return edge.Render(strings.Repeat(fill, max(inner, 0)))
	}
	lw := ansi.StringWidth(label)
	return edge.Render(fill) + label + edge.Render(strings.Repeat(fill, inner-1-lw))
}

// hjoin puts equally tall blocks side by side.
func hjoin(blocks ...[]string) []string {
	if len(blocks) == 0 {
		return nil
	}
	h := 0
	widths := make([]int, len(blocks))
	for j, b := range blocks {
		h = max(h, len(b))
		for _, l := range b {
			widths[j] = max(widths[j], ansi.StringWidth(l))
		}
	}
	out := make([]string, h)
	for i := range out {
		var sb strings.Builder
		for j, b := range blocks {
			if i < len(b) {
				sb.WriteString(b[i])
			} else if j < len(blocks)-1 {
				// a shorter block keeps its column, so the blocks right of it stay aligned
				sb.WriteString(strings.Repeat(" ", widths[j]))
			}
		}
		out[i] = sb.String()
	}
	return out
}

// usageLabel is a usage's total as humanTokens writes it, marked ≈ when it is an
// estimate (the server reported none and tiktoken counted).
func usageLabel(u lm.Usage) string {
	if u.Estimated {
		return "≈" + humanTokens(u.TotalTokens)
	}
	return humanTokens(u.TotalTokens)
}

// humanTokens renders a token count compactly: 950, 12.3k, 1.2M.
func humanTokens(n int) string {
	switch {
	case n < 1000:
		return strconv.Itoa(n)
	case n < 1_000_000:
		return trimZero(float64(n)/1000) + "k"
	default:
		return trimZero(float64(n)/1_000_000) + "M"
	}
}

func trimZero(f float64) string {
	tenths := int(f*10 + 0.5)
	s := strconv.Itoa(tenths / 10)
	if tenths%10 != 0 {
		s += "." + strconv.Itoa(tenths%10)
	}
	return s
}
