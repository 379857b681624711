package adapter

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

// ErrNoJSON means RepairJSON found no object or array in the text.
var ErrNoJSON = errors.New("no JSON object or array found")

// RepairJSON reads the JSON object or array in text the way Python's json_repair.loads
// (which DSPy uses) does, repairing what models commonly get wrong: single quotes,
// trailing commas, unquoted keys and values, missing closing brackets and quotes,
// Python/any-case True/False/null, comments, code fences and prose around the JSON.
// Values come back as sig values (*sig.Map, []any, string, int64, float64, bool, nil).
// It returns ErrNoJSON when nothing structured is found (json_repair would return "").
func RepairJSON(text string) (any, error) {
	v, err := repairLoads(text)
	if err != nil {
		return nil, err
	}
	if s, ok := v.(string); ok && s == "" {
		return nil, ErrNoJSON
	}
	return v, nil
}

// RepairLoads is json_repair.loads with its exact contract: the empty string when no
// JSON structure is found. Like json_repair, a bare top-level scalar ("42", "true",
// "\"x\"") is not JSON structure and gives "": DSPy relies on that to fall back to
// ast.literal_eval. Several top-level values give a list, built as json_repair builds it:
// only truthy later values are added, a falsy value before one is dropped ({}, [], "", 0,
// false, null), and a value that repeats the previous one's shape replaces it unless a
// comma separates them.
func RepairLoads(text string) any {
	v, _ := repairLoads(text)
	return v
}

// repairDepth is about where json_repair, recursing once per nesting level in Python,
// hits Python's recursion limit (RecursionError).
const repairDepth = 400

// ErrTooDeep is a reply nested deeper than json_repair can follow: in Python it raises
// RecursionError, which fails the call (DSPy does not catch it as a parse error).
var ErrTooDeep = fmt.Errorf("LM response is nested deeper than %d levels (json_repair fails there with RecursionError)", repairDepth)

// repairLoads is RepairLoads reporting ErrTooDeep when the text nests deeper than
// repairDepth (what it read before is returned as RepairLoads would).
func repairLoads(text string) (any, error) {
	p := &repairParser{src: []rune(text)}
	v := p.value()
	if p.tooDeep {
		return v, ErrTooDeep
	}
	if p.pos >= len(p.src) {
		return v, nil
	}
	all := []any{v}
	for p.pos < len(p.src) {
		comma := p.commaSeparated()
		j := p.value()
		if !truthy(j) {
			p.pos++
			continue
		}
		last := all[len(all)-1]
		if (!comma && sameObject(last, j)) || !truthy(last) {
			all = all[:len(all)-1] // a later copy of the same object is an update
		}
		all = append(all, j)
	}
	if p.tooDeep {
		return all[0], ErrTooDeep
	}
	if len(all) == 1 {
		return all[0], nil
	}
	return all, nil
}

// commaSeparated reports a comma between the value just read and the next one.
func (p *repairParser) commaSeparated() bool {
	i := p.pos
	for i < len(p.src) && unicode.IsSpace(p.src[i]) {
		i++
	}
	if i < len(p.src) && p.src[i] == ',' {
		return true
	}
	i = p.pos - 1
	for i >= 0 && unicode.IsSpace(p.src[i]) {
		i--
	}
	return i >= 0 && p.src[i] == ','
}

// truthy is Python's bool() of a value.
func truthy(v any) bool {
	switch t := v.(type) {
	case nil:
		return false
	case bool:
		return t
	case string:
		return t != ""
	case int64:
		return t != 0
	case float64:
		return t != 0
	case json.Number:
		return strings.Trim(string(t), "-0") != ""
	case []any:
		return len(t) > 0
	case *sig.Map:
		return t.Len() > 0
	}
	return true
}

// sameObject is json_repair's ObjectComparer.is_same_object: the same kind, dicts with
// the same keys (in any order) and lists of the same length, recursively.
func sameObject(a, b any) bool {
	switch x := a.(type) {
	case *sig.Map:
		y, ok := b.(*sig.Map)
		if !ok || x.Len() != y.Len() {
			return false
		}
		same := true
		x.Range(func(k string, xv any) bool {
			yv, found := y.Get(k)
			same = found && sameObject(xv, yv)
			return same
		})
		return same
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameObject(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return py.TypeName(a) == py.TypeName(b)
}

type repairCtx uint8

const (
	ctxKey repairCtx = iota + 1
	ctxValue
	ctxArray
)

type repairParser struct {
	src     []rune
	pos     int
	ctx     []repairCtx
	depth   int
	tooDeep bool
}

func (p *repairParser) at(off int) rune {
	if i := p.pos + off; i >= 0 && i < len(p.src) {
		return p.src[i]
	}
	return 0
}

func (p *repairParser) end() bool { return p.pos >= len(p.src) }

func (p *repairParser) cur() repairCtx {
	if len(p.ctx) == 0 {
		return 0
	}
	return p.ctx[len(p.ctx)-1]
}

func (p *repairParser) push(c repairCtx) { p.ctx = append(p.ctx, c) }
func (p *repairParser) pop() {
	if len(p.ctx) > 0 {
		p.ctx = p.ctx[:len(p.ctx)-1]
	}
}

func (p *repairParser) skipSpace() {
	for !p.end() && unicode.IsSpace(p.src[p.pos]) {
		p.pos++
	}
}

// skipFiller passes whitespace and comments inside a structure.
func (p *repairParser) skipFiller() {
	for {
		p.skipSpace()
		if !p.skipComment() {
			return
		}
	}
}

func (p *repairParser) skipComment() bool {
	switch {
	case p.at(0) == '#' || (p.at(0) == '/' && p.at(1) == '/'):
		for !p.end() && p.src[p.pos] != '\n' {
			p.pos++
		}
		return true
	case p.at(0) == '/' && p.at(1) == '*':
		p.pos += 2
		for !p.end() && !(p.at(0) == '*' && p.at(1) == '/') {
			p.pos++
		}
		p.pos = min(p.pos+2, len(p.src))
		return true
	}
	return false
}

// value parses one JSON value; at top level it skips everything that does not start an
// object or array, as json_repair does.
func (p *repairParser) value() any {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > repairDepth {
		p.tooDeep = true
		p.pos = len(p.src)
		return ""
	}
	for {
		if p.end() {
			return ""
		}
		c := p.src[p.pos]
		switch {
		case c == '{':
			p.pos++
			return p.object()
		case c == '[':
			p.pos++
			return p.array()
		case p.cur() == ctxValue && c == '}':
			return "" // "key": } — a missing value
		case len(p.ctx) > 0 && (isQuote(c) || unicode.IsLetter(c)):
			return p.str()
		case len(p.ctx) > 0 && (unicode.IsDigit(c) || c == '-' || c == '.'):
			return p.number()
		case c == '#' || c == '/':
			if !p.skipComment() {
				p.pos++
			}
			if len(p.ctx) > 0 {
				p.skipFiller()
			}
		case len(p.ctx) > 0 && unicode.IsSpace(c):
			p.pos++
		default:
			if len(p.ctx) > 0 && (c == ',' || c == ']' || c == ':') {
				return ""
			}
			p.pos++
		}
	}
}

func isQuote(c rune) bool { return c == '"' || c == '\'' || c == '“' || c == '”' }

func (p *repairParser) object() any {
	obj := sig.NewMap()
	for !p.end() && p.at(0) != '}' {
		p.skipFiller()
		if p.at(0) == ':' || p.at(0) == ',' {
			p.pos++ // stray separator before a key
			continue
		}
		if p.end() || p.at(0) == '}' {
			break
		}
		if p.at(0) == ']' { // a wrong closer: treat as the end of this object
			p.pos++
			return obj
		}
		p.push(ctxKey)
		start := p.pos
		key := py.Str(p.str())
		p.pop()
		p.skipFiller()
		if p.end() || p.at(0) == '}' {
			if key != "" {
				obj.Set(key, "") // a key with no value at the very end
			}
			break
		}
		if p.at(0) == ':' {
			p.pos++
		} else if p.pos == start {
			p.pos++ // no progress: drop one character
			continue
		}
		p.push(ctxValue)
		p.skipFiller()
		v := p.value()
		p.pop()
		obj.Set(key, v)
		p.skipFiller()
		if p.at(0) == ',' {
			p.pos++
		}
	}
	if !p.end() {
		p.pos++ // the closing brace
	}
	return obj
}

func (p *repairParser) array() any {
	arr := []any{}
	p.push(ctxArray)
	defer p.pop()
	for {
		p.skipFiller()
		if p.end() {
			return arr
		}
		c := p.at(0)
		if c == ']' {
			p.pos++
			return arr
		}
		if c == '}' { // a wrong closer ends the array
			p.pos++
			return arr
		}
		if c == ',' {
			p.pos++
			continue
		}
		start := p.pos
		v := p.value()
		if p.pos == start {
			p.pos++
			continue
		}
		if s, ok := v.(string); ok && (s == "..." || s == "") {
			continue // a placeholder ellipsis, or nothing usable (json_repair drops "" too)
		}
		arr = append(arr, v)
	}
}
