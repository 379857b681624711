package py

import (
	"strings"
	"unicode/utf8"
)

// Cleandoc is Python's inspect.cleandoc: tabs expanded, the first line left-trimmed, the
// common indentation of the other lines removed, leading and trailing blank lines dropped.
func Cleandoc(doc string) string {
	lines := strings.Split(ExpandTabs(doc, 8), "\n")
	margin := -1
	for _, l := range lines[1:] {
		content := utf8.RuneCountInString(LStrip(l))
		if content > 0 {
			indent := utf8.RuneCountInString(l) - content
			if margin < 0 || indent < margin {
				margin = indent
			}
		}
	}
	lines[0] = LStrip(lines[0])
	if margin >= 0 {
		for i := 1; i < len(lines); i++ {
			lines[i] = SliceFrom(lines[i], margin)
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

// SliceFrom is s[n:] with n counted in characters (code points), as Python slices.
func SliceFrom(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[i:]
		}
		n--
	}
	return ""
}

// ExpandTabs is str.expandtabs(size): columns restart after \n and \r.
func ExpandTabs(s string, size int) string {
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

// Dedent is Python's textwrap.dedent: lines of only spaces/tabs become empty, and
// the longest common leading run of spaces/tabs of the other lines is removed.
func Dedent(text string) string {
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

// Strip removes leading and trailing whitespace as Python's str.strip() does, which
// also treats U+001C..U+001F as whitespace (Go's strings.TrimSpace does not).
func Strip(s string) string { return RStrip(LStrip(s)) }

// RStrip is Python's str.rstrip().
func RStrip(s string) string {
	// ASCII edges are trimmed here; a non-ASCII last byte may end a wider space.
	for len(s) > 0 && s[len(s)-1] < utf8.RuneSelf {
		if !asciiSpace[s[len(s)-1]] {
			return s
		}
		s = s[:len(s)-1]
	}
	if s == "" {
		return s
	}
	return strings.TrimRightFunc(s, IsSpace)
}

// LStrip is Python's str.lstrip().
func LStrip(s string) string {
	for len(s) > 0 && s[0] < utf8.RuneSelf {
		if !asciiSpace[s[0]] {
			return s
		}
		s = s[1:]
	}
	if s == "" {
		return s
	}
	return strings.TrimLeftFunc(s, IsSpace)
}

// asciiSpace marks the ASCII characters Python's str.isspace() is true for.
var asciiSpace = [utf8.RuneSelf]bool{' ': true, '\t': true, '\n': true, '\v': true, '\f': true, '\r': true,
	0x1c: true, 0x1d: true, 0x1e: true, 0x1f: true}

// IsSpace reports whether Python's str.isspace() is true for r.
func IsSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\v', '\f', '\r', 0x1c, 0x1d, 0x1e, 0x1f, 0x85, 0xa0, 0x1680,
		0x2028, 0x2029, 0x202f, 0x205f, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

// SplitLines splits like Python's str.splitlines(): on \n, \r\n, \r, \v, \f, \x1c-\x1e,
// \x85, U+2028 and U+2029, without keeping the separators and without a trailing empty line.
func SplitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '\r':
			out = append(out, s[start:i])
			if i+1 < len(s) && s[i+1] == '\n' {
				size = 2
			}
			start = i + size
		case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			out = append(out, s[start:i])
			start = i + size
		}
		i += size
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
