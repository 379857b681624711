package adapter

import (
	"strings"
	"unicode/utf8"

	"github.com/sessionbench/sessionbench/core/sig"
)

// Cleandoc is Python's inspect.cleandoc: tabs expanded, the first line left-trimmed, the
// common indentation of the other lines removed, leading and trailing blank lines dropped.
func Cleandoc(doc string) string {
	lines := strings.Split(expandTabs(doc, 8), "\n")
	margin := -1
	for _, l := range lines[1:] {
		content := utf8.RuneCountInString(sig.PyLStrip(l))
		if content > 0 {
			indent := utf8.RuneCountInString(l) - content
			if margin < 0 || indent < margin {
				margin = indent
			}
		}
	}
	lines[0] = sig.PyLStrip(lines[0])
	if margin >= 0 {
		for i := 1; i < len(lines); i++ {
			lines[i] = dropRunes(lines[i], margin)
		}
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for len(lines) > 0 && lines[0] == "" {
		lines = lines[1:]
	}
	return strings.Join(lines, "\n")
}

func dropRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[i:]
		}
		n--
	}
	return ""
}

// expandTabs is str.expandtabs(size): columns restart after \n and \r.
func expandTabs(s string, size int) string {
	if !strings.Contains(s, "\t") {
		return s
	}
	var b strings.Builder
	col := 0
	for _, r := range s {
		switch r {
		case '\t':
			n := size - col%size
			b.WriteString(strings.Repeat(" ", n))
			col += n
		case '\n', '\r':
			b.WriteRune(r)
			col = 0
		default:
			b.WriteRune(r)
			col++
		}
	}
	return b.String()
}

// textwrapDedent is Python's textwrap.dedent: lines of only spaces/tabs become empty, and
// the longest common leading run of spaces/tabs of the other lines is removed.
func textwrapDedent(text string) string {
	lines := strings.Split(text, "\n")
	var margin string
	found := false
	for i, l := range lines {
		if strings.Trim(l, " \t") == "" {
			lines[i] = ""
			continue
		}
		indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		switch {
		case !found:
			margin, found = indent, true
		case strings.HasPrefix(indent, margin):
		case strings.HasPrefix(margin, indent):
			margin = indent
		default:
			j := 0
			for j < len(margin) && j < len(indent) && margin[j] == indent[j] {
				j++
			}
			margin = margin[:j]
		}
	}
	if margin != "" {
		for i, l := range lines {
			lines[i] = strings.TrimPrefix(l, margin)
		}
	}
	return strings.Join(lines, "\n")
}
