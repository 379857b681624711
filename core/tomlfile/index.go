package tomlfile

import (
	"strconv"
	"strings"
)

// Index maps the keys of a TOML text to the lines they are written on, so that
// validation errors found after decoding can still say where. The TOML library keeps
// positions private (and only one per key name, which is useless for arrays of tables),
// hence this small scanner. Keys are dotted paths with 0-based indices for array
// tables: "steps.1.steps.0.predictor".
type Index struct {
	lines  map[string]int
	counts map[string]int    // array-table instances per path
	isArr  map[string]bool   // paths (without index) that are arrays of tables
	last   map[string]string // array path -> its latest instance path
	text   []string          // the file's lines
}

// NewIndex scans a TOML text.
func NewIndex(data []byte) *Index {
	text := string(data)
	ix := &Index{lines: map[string]int{}, counts: map[string]int{}, isArr: map[string]bool{}, last: map[string]string{}}
	cur := ""
	var sc valueScanner
	ix.text = strings.Split(text, "\n")
	for n, line := range ix.text {
		lineNo := n + 1
		if sc.busy() {
			sc.scan(line)
			continue
		}
		t := strings.TrimSpace(line)
		switch {
		case t == "" || t[0] == '#':
		case strings.HasPrefix(t, "[["):
			cur = ix.table(headerName(t, 2), true)
			ix.note(cur, lineNo)
		case t[0] == '[':
			cur = ix.table(headerName(t, 1), false)
			ix.note(cur, lineNo)
		default:
			eq := keyEnd(t)
			if eq < 0 {
				continue
			}
			key := strings.Join(splitKey(t[:eq]), ".")
			ix.note(join(cur, key), lineNo)
			sc.scan(t[eq+1:])
		}
	}
	return ix
}

// Text is line n of the file (1-based), "" past its end.
func (ix *Index) Text(n int) string {
	if n < 1 || n > len(ix.text) {
		return ""
	}
	return ix.text[n-1]
}

func (ix *Index) note(path string, line int) {
	if _, ok := ix.lines[path]; !ok {
		ix.lines[path] = line
	}
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

// table resolves a header's dotted name to an instance path: parent segments that
// are arrays of tables refer to their latest instance.
func (ix *Index) table(name string, array bool) string {
	segs := splitKey(name)
	cur := ""
	for i, s := range segs {
		p := join(cur, s)
		if i == len(segs)-1 {
			if array {
				n := ix.counts[p]
				ix.counts[p]++
				ix.isArr[p] = true
				ix.last[p] = p + "." + strconv.Itoa(n)
				return ix.last[p]
			}
			return p
		}
		if ix.isArr[p] {
			cur = ix.last[p]
		} else {
			cur = p
		}
	}
	return cur
}

// Line returns the line of key, or of its closest written ancestor; 0 when unknown.
func (ix *Index) Line(key string) int {
	for key != "" {
		if l, ok := ix.lines[key]; ok {
			return l
		}
		i := strings.LastIndexByte(key, '.')
		if i < 0 {
			break
		}
		key = key[:i]
	}
	return 0
}

// LineOfPattern finds the first key whose path, indices dropped, equals pattern (for
// the library's undecoded keys, which carry no indices).
func (ix *Index) LineOfPattern(pattern string) int {
	best := 0
	for k, l := range ix.lines {
		if stripIndices(k) == pattern && (best == 0 || l < best) {
			best = l
		}
	}
	return best
}

func stripIndices(path string) string {
	segs := strings.Split(path, ".")
	out := segs[:0]
	for _, s := range segs {
		if _, err := strconv.Atoi(s); err != nil {
			out = append(out, s)
		}
	}
	return strings.Join(out, ".")
}

func headerName(t string, brackets int) string {
	t = t[brackets:]
	if i := strings.Index(t, strings.Repeat("]", brackets)); i >= 0 {
		t = t[:i]
	}
	return t
}

// splitKey splits a dotted key, removing quotes around segments.
func splitKey(k string) []string {
	var out []string
	for _, s := range strings.Split(k, ".") {
		s = strings.TrimSpace(s)
		if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') {
			s = s[1 : len(s)-1]
		}
		out = append(out, s)
	}
	return out
}

// keyEnd is the index of the '=' ending a key, outside quotes; -1 when none.
func keyEnd(t string) int {
	var q byte
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case q != 0:
			if c == q {
				q = 0
			}
		case c == '"' || c == '\'':
			q = c
		case c == '=':
			return i
		}
	}
	return -1
}

// valueScanner follows a value across lines: open brackets and multi-line strings.
type valueScanner struct {
	depth   int
	deepest int    // the most brackets open at once since it was last reset
	multi   string // `"""` or `'''` while inside a multi-line string
}

func (v *valueScanner) busy() bool { return v.depth > 0 || v.multi != "" }

func (v *valueScanner) scan(s string) {
	for i := 0; i < len(s); i++ {
		if v.multi != "" {
			if strings.HasPrefix(s[i:], v.multi) {
				i += 2
				v.multi = ""
			}
			continue
		}
		c := s[i]
		switch {
		case c == '#':
			return
		case strings.HasPrefix(s[i:], `"""`) || strings.HasPrefix(s[i:], `'''`):
			v.multi = s[i : i+3]
			i += 2
		case c == '"' || c == '\'':
			for j := i + 1; j < len(s); j++ {
				if c == '"' && s[j] == '\\' {
					j++
					continue
				}
				if s[j] == c {
					i = j
					break
				}
			}
		case c == '[' || c == '{':
			v.depth++
			v.deepest = max(v.deepest, v.depth)
		case c == ']' || c == '}':
			v.depth--
		}
	}
}
