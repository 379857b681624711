package py

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sessionbench/sessionbench/core/limits"
)

// ErrNotLiteral is returned when text is not a Python literal (ast.literal_eval would raise
// ValueError or SyntaxError; DSPy treats both the same way).
var ErrNotLiteral = errors.New("not a Python literal")

// SetDict is a Dict LiteralEval can fill (package sig's Map).
type SetDict interface {
	Dict
	Set(k string, v any)
}

// LiteralEval evaluates the subset of Python's ast.literal_eval that a model's answer can
// plausibly contain: strings (with r/u prefixes and implicit concatenation), ints, floats,
// True/False/None, lists, tuples, sets and dicts, and unary +/- on numbers. Tuples and sets
// come back as []any (they are JSON arrays once validated); dicts as newDict makes them,
// their keys as json.dumps would write them.
func LiteralEval(text string, newDict func() SetDict) (any, error) {
	// literal_eval strips leading spaces and tabs only; anything else must parse.
	p := &litParser{src: strings.TrimLeft(text, " \t"), newDict: newDict}
	p.skip(false)
	v, err := p.expr(false)
	if err != nil {
		return nil, err
	}
	p.skip(false)
	if p.pos < len(p.src) {
		return nil, ErrNotLiteral
	}
	return v, nil
}

type litParser struct {
	src     string
	pos     int
	depth   int
	newDict func() SetDict
}

// skip passes whitespace and comments; newlines only count as whitespace inside brackets
// or as trailing text (Python's eval mode allows a trailing newline).
func (p *litParser) skip(inBrackets bool) {
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\f':
			p.pos++
		case c == '\\' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '\n':
			p.pos += 2
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		case c == '\n' || c == '\r':
			if inBrackets || strings.TrimSpace(p.src[p.pos:]) == "" || strings.TrimLeft(p.src[p.pos:], " \t\r\n")[0] == '#' {
				p.pos++
				continue
			}
			return
		default:
			return
		}
	}
}

func (p *litParser) expr(in bool) (any, error) {
	v, err := p.unary(in)
	if err != nil {
		return nil, err
	}
	// A bare top-level tuple: "1, 2".
	p.skip(in)
	if !in && p.pos < len(p.src) && p.src[p.pos] == ',' {
		items := []any{v}
		for p.pos < len(p.src) && p.src[p.pos] == ',' {
			p.pos++
			p.skip(false)
			if p.pos >= len(p.src) {
				break
			}
			e, err := p.unary(false)
			if err != nil {
				return nil, err
			}
			items = append(items, e)
			p.skip(false)
		}
		return items, nil
	}
	return v, nil
}

func (p *litParser) unary(in bool) (any, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > limits.PythonDepth { // Python: "too many nested parentheses"
		return nil, ErrNotLiteral
	}
	p.skip(in)
	if p.pos >= len(p.src) {
		return nil, ErrNotLiteral
	}
	c := p.src[p.pos]
	if c == '-' || c == '+' {
		p.pos++
		v, err := p.unary(in)
		if err != nil {
			return nil, err
		}
		switch n := v.(type) {
		case int64:
			if c == '-' {
				if n == math.MinInt64 {
					return json.Number(strings.TrimPrefix(strconv.FormatInt(n, 10), "-")), nil
				}
				return -n, nil
			}
			return n, nil
		case float64:
			if c == '-' {
				return -n, nil
			}
			return n, nil
		case json.Number:
			if c == '-' {
				if strings.HasPrefix(string(n), "-") {
					return json.Number(string(n)[1:]), nil
				}
				return json.Number("-" + string(n)), nil
			}
			return n, nil
		}
		return nil, ErrNotLiteral // -"a", -True is allowed by Python but never matters here
	}
	return p.atom(in)
}

func (p *litParser) atom(in bool) (any, error) {
	c := p.src[p.pos]
	switch {
	case c == '[':
		p.pos++
		items, _, err := p.seq(']')
		return items, err
	case c == '(':
		p.pos++
		items, trailingComma, err := p.seq(')')
		if err != nil {
			return nil, err
		}
		if len(items) == 1 && !trailingComma {
			return items[0], nil // parenthesised expression, not a tuple
		}
		return items, nil
	case c == '{':
		p.pos++
		return p.dictOrSet()
	case c == '\'' || c == '"':
		return p.strings(in)
	case c >= '0' && c <= '9' || c == '.':
		return p.number()
	}
	r, _ := utf8.DecodeRuneInString(p.src[p.pos:])
	if r == '_' || unicode.IsLetter(r) {
		start := p.pos
		for p.pos < len(p.src) {
			r, size := utf8.DecodeRuneInString(p.src[p.pos:])
			if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				break
			}
			p.pos += size
		}
		word := p.src[start:p.pos]
		if p.pos < len(p.src) && (p.src[p.pos] == '\'' || p.src[p.pos] == '"') {
			switch strings.ToLower(word) {
			case "r", "u", "ur":
				p.pos = start
				return p.strings(in)
			}
			return nil, ErrNotLiteral
		}
		if v, ok := Keyword(word); ok {
			return v, nil
		}
	}
	return nil, ErrNotLiteral
}

// Keyword is the value of Python's keyword constants True, False and None (ok false for
// any other word).
func Keyword(word string) (v any, ok bool) {
	switch word {
	case "True":
		return true, true
	case "False":
		return false, true
	case "None":
		return nil, true
	}
	return nil, false
}

// seq reads comma-separated expressions up to the closing bracket.
func (p *litParser) seq(closer byte) ([]any, bool, error) {
	items := []any{}
	trailing := false
	for {
		p.skip(true)
		if p.pos >= len(p.src) {
			return nil, false, ErrNotLiteral
		}
		if p.src[p.pos] == closer {
			p.pos++
			return items, trailing, nil
		}
		v, err := p.unary(true)
		if err != nil {
			return nil, false, err
		}
		items = append(items, v)
		trailing = false
		p.skip(true)
		if p.pos < len(p.src) && p.src[p.pos] == ',' {
			p.pos++
			trailing = true
			continue
		}
		if p.pos < len(p.src) && p.src[p.pos] == closer {
			continue
		}
		return nil, false, ErrNotLiteral
	}
}

func (p *litParser) dictOrSet() (any, error) {
	p.skip(true)
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		return p.newDict(), nil // {} is a dict
	}
	m := p.newDict()
	var set []any
	isDict := false
	for first := true; ; first = false {
		p.skip(true)
		if p.pos >= len(p.src) {
			return nil, ErrNotLiteral
		}
		if p.src[p.pos] == '}' && !first {
			p.pos++
			break
		}
		k, err := p.unary(true)
		if err != nil {
			return nil, err
		}
		p.skip(true)
		if first {
			isDict = p.pos < len(p.src) && p.src[p.pos] == ':'
		}
		if isDict {
			if p.pos >= len(p.src) || p.src[p.pos] != ':' {
				return nil, ErrNotLiteral
			}
			p.pos++
			v, err := p.unary(true)
			if err != nil {
				return nil, err
			}
			key, ok := dictKey(k)
			if !ok {
				return nil, ErrNotLiteral
			}
			m.Set(key, v)
		} else {
			if !hashable(k) {
				return nil, ErrNotLiteral
			}
			set = SetAdd(set, k)
		}
		p.skip(true)
		if p.pos < len(p.src) && p.src[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.src) && p.src[p.pos] == '}' {
			continue
		}
		return nil, ErrNotLiteral
	}
	if isDict {
		return m, nil
	}
	return set, nil
}

func hashable(v any) bool {
	switch v.(type) {
	case Dict:
		return false
	case []any:
		return true // a tuple here; a list would be unhashable but we cannot tell them apart
	}
	return true
}

// SetAdd is set.add for a set held as a list in insertion order.
func SetAdd(set []any, v any) []any {
	for _, e := range set {
		if Equal(e, v) {
			return set
		}
	}
	return append(set, v)
}

// dictKey turns a Python dict key into the string key json.dumps would write.
func dictKey(k any) (string, bool) {
	switch t := k.(type) {
	case string:
		return t, true
	case nil:
		return "null", true
	case bool:
		if t {
			return "true", true
		}
		return "false", true
	case int64, json.Number:
		return scalar(t), true
	case float64:
		return Float(t), true
	}
	return "", false
}

func (p *litParser) strings(in bool) (any, error) {
	var b strings.Builder
	n := 0
	for {
		p.skip(in)
		if p.pos >= len(p.src) {
			break
		}
		start := p.pos
		raw := false
		for p.pos < len(p.src) && strings.IndexByte("rRuU", p.src[p.pos]) >= 0 {
			if p.src[p.pos] == 'r' || p.src[p.pos] == 'R' {
				raw = true
			}
			p.pos++
		}
		if p.pos >= len(p.src) || (p.src[p.pos] != '\'' && p.src[p.pos] != '"') || p.pos-start > 2 {
			p.pos = start
			break
		}
		s, err := p.oneString(raw)
		if err != nil {
			return nil, err
		}
		b.WriteString(s)
		n++
	}
	if n == 0 {
		return nil, ErrNotLiteral
	}
	return b.String(), nil
}

func (p *litParser) oneString(raw bool) (string, error) {
	q := p.src[p.pos]
	triple := strings.HasPrefix(p.src[p.pos:], strings.Repeat(string(q), 3))
	if triple {
		p.pos += 3
	} else {
		p.pos++
	}
	var b strings.Builder
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case triple && strings.HasPrefix(p.src[p.pos:], strings.Repeat(string(q), 3)):
			p.pos += 3
			return b.String(), nil
		case !triple && c == q:
			p.pos++
			return b.String(), nil
		case !triple && c == '\n':
			return "", ErrNotLiteral
		case c == '\\' && p.pos+1 < len(p.src):
			if raw {
				b.WriteString(p.src[p.pos : p.pos+2])
				p.pos += 2
				continue
			}
			if err := p.escape(&b); err != nil {
				return "", err
			}
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
	return "", ErrNotLiteral
}

func (p *litParser) escape(b *strings.Builder) error {
	e := p.src[p.pos+1]
	p.pos += 2
	simple := map[byte]string{'\n': "", '\\': `\`, '\'': "'", '"': `"`, 'a': "\a", 'b': "\b",
		'f': "\f", 'n': "\n", 'r': "\r", 't': "\t", 'v': "\v"}
	if s, ok := simple[e]; ok {
		b.WriteString(s)
		return nil
	}
	hex := func(n int) error {
		if p.pos+n > len(p.src) {
			return ErrNotLiteral
		}
		v, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
		if err != nil || v > unicode.MaxRune {
			return ErrNotLiteral
		}
		p.pos += n
		b.WriteRune(rune(v))
		return nil
	}
	switch e {
	case 'x':
		return hex(2)
	case 'u':
		return hex(4)
	case 'U':
		return hex(8)
	}
	if e >= '0' && e <= '7' {
		v := int(e - '0')
		for i := 0; i < 2 && p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '7'; i++ {
			v = v*8 + int(p.src[p.pos]-'0')
			p.pos++
		}
		b.WriteRune(rune(v))
		return nil
	}
	b.WriteByte('\\') // unknown escapes are kept verbatim in Python
	b.WriteByte(e)
	return nil
}

func (p *litParser) number() (any, error) {
	start := p.pos
	s := p.src
	if strings.HasPrefix(s[p.pos:], "0x") || strings.HasPrefix(s[p.pos:], "0X") ||
		strings.HasPrefix(s[p.pos:], "0o") || strings.HasPrefix(s[p.pos:], "0O") ||
		strings.HasPrefix(s[p.pos:], "0b") || strings.HasPrefix(s[p.pos:], "0B") {
		p.pos += 2
		for p.pos < len(s) && (isHexDigit(s[p.pos]) || s[p.pos] == '_') {
			p.pos++
		}
		n, ok := new(big.Int).SetString(s[start:p.pos], 0)
		if !ok {
			return nil, ErrNotLiteral
		}
		return bigToValue(n), nil
	}
	isFloat := false
	for p.pos < len(s) {
		c := s[p.pos]
		switch {
		case c >= '0' && c <= '9' || c == '_':
		case c == '.':
			isFloat = true
		case c == 'e' || c == 'E':
			isFloat = true
			if p.pos+1 < len(s) && (s[p.pos+1] == '+' || s[p.pos+1] == '-') {
				p.pos++
			}
		default:
			goto done
		}
		p.pos++
	}
done:
	text := s[start:p.pos]
	if p.pos < len(s) {
		if r, _ := utf8.DecodeRuneInString(s[p.pos:]); r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) {
			return nil, ErrNotLiteral // 42apples, 1j (complex is out of scope)
		}
	}
	if strings.Contains(text, "__") || strings.HasSuffix(text, "_") || strings.Contains(text, "_.") || strings.Contains(text, "._") {
		return nil, ErrNotLiteral
	}
	clean := strings.ReplaceAll(text, "_", "")
	if isFloat {
		f, err := strconv.ParseFloat(clean, 64)
		if err != nil {
			var ne *strconv.NumError
			if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
				return f, nil // Python gives inf / 0.0 as well
			}
			return nil, ErrNotLiteral
		}
		return f, nil
	}
	if len(clean) > 1 && clean[0] == '0' && strings.Trim(clean, "0") != "" {
		return nil, ErrNotLiteral // leading zeros are a SyntaxError in Python 3
	}
	n, ok := new(big.Int).SetString(clean, 10)
	if !ok {
		return nil, ErrNotLiteral
	}
	return bigToValue(n), nil
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func bigToValue(n *big.Int) any {
	if n.IsInt64() {
		return n.Int64()
	}
	return json.Number(n.String())
}
