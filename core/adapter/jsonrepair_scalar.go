package adapter

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// json_repair's reading of strings, numbers and bare words (repairParser's scalars).

// str parses a quoted or unquoted string; an unquoted true/false/null (any case) is that
// literal unless it is a key.
func (p *repairParser) str() any {
	c := p.at(0)
	if !isQuote(c) && p.cur() == ctxKey {
		return p.bareKey()
	}
	if !isQuote(c) {
		if p.cur() != ctxKey {
			if v, ok := p.literal(); ok {
				return v
			}
		}
		return p.bare()
	}
	closer := c
	if c == '“' {
		closer = '”'
	}
	p.pos++
	// Candidate closing quotes: prefer one followed by what may come after a string here,
	// so an unescaped quote inside the text does not end it early.
	startPos := p.pos
	var b strings.Builder
	first := -1
	firstLen := 0
	for i := p.pos; i < len(p.src); i++ {
		r := p.src[i]
		if r == '\\' && i+1 < len(p.src) {
			i++
			continue
		}
		// Look for a better closer only on the rest of the line of the first one (and not
		// too far), which keeps repairs linear on hostile input.
		if first >= 0 && (r == '\n' || i-first > 4096) {
			break
		}
		if r == closer || (closer == '"' && r == '”') {
			if first < 0 {
				first = i
			}
			if p.closesHere(i + 1) {
				firstLen = i
				goto found
			}
		}
	}
	if first >= 0 {
		firstLen = first
	} else {
		firstLen = len(p.src) // an unterminated string runs to the end
	}
found:
	p.unescape(&b, p.src[startPos:firstLen])
	p.pos = min(firstLen+1, len(p.src))
	s := b.String()
	if firstLen == len(p.src) {
		s = strings.TrimRightFunc(s, unicode.IsSpace)
	}
	return s
}

// closesHere reports whether a string closing at i-1 is followed by a plausible token.
func (p *repairParser) closesHere(i int) bool {
	for i < len(p.src) && unicode.IsSpace(p.src[i]) {
		i++
	}
	if i >= len(p.src) {
		return true
	}
	switch p.src[i] {
	case ',':
		return p.cur() != ctxKey
	case '}':
		return p.cur() != ctxArray
	case ']':
		return p.cur() == ctxArray
	case ':':
		return p.cur() == ctxKey
	}
	// A value followed by whitespace and the next member's quote: the comma is missing.
	return p.cur() == ctxValue && isQuote(p.src[i]) && unicode.IsSpace(p.src[i-1])
}

func (p *repairParser) unescape(b *strings.Builder, rs []rune) {
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		if r != '\\' || i+1 >= len(rs) {
			b.WriteRune(r)
			continue
		}
		i++
		switch e := rs[i]; e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case '/', '\\', '"', '\'':
			b.WriteRune(e)
		case 'u':
			if i+4 < len(rs) {
				if n, err := strconv.ParseUint(string(rs[i+1:i+5]), 16, 32); err == nil {
					r := rune(n)
					i += 4
					// a surrogate pair written as two escapes
					if utf16Surrogate(r) && i+6 < len(rs) && rs[i+1] == '\\' && rs[i+2] == 'u' {
						if lo, err := strconv.ParseUint(string(rs[i+3:i+7]), 16, 32); err == nil {
							r = combineSurrogates(r, rune(lo))
							i += 6
						}
					}
					b.WriteRune(r)
					continue
				}
			}
			b.WriteString(`\u`)
		default:
			b.WriteByte('\\')
			b.WriteRune(e)
		}
	}
}

func utf16Surrogate(r rune) bool { return r >= 0xd800 && r < 0xdc00 }

func combineSurrogates(hi, lo rune) rune {
	if lo < 0xdc00 || lo > 0xdfff {
		return utf8.RuneError
	}
	return 0x10000 + (hi-0xd800)<<10 + (lo - 0xdc00)
}

// literal matches true/false/null case-insensitively (so Python's True and False work;
// Python's None is not null and stays the text "None", as in json_repair).
func (p *repairParser) literal() (any, bool) {
	for _, l := range []struct {
		word string
		v    any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		n := len(l.word)
		if p.pos+n <= len(p.src) && strings.EqualFold(string(p.src[p.pos:p.pos+n]), l.word) {
			next := p.at(n)
			if next == 0 || !(unicode.IsLetter(next) || unicode.IsDigit(next) || next == '_') {
				p.pos += n
				return l.v, true
			}
		}
	}
	return nil, false
}

// bare reads an unquoted key or value up to the next separator for its context.
func (p *repairParser) bare() any {
	start := p.pos
	for !p.end() {
		c := p.src[p.pos]
		stop := false
		switch p.cur() {
		case ctxKey:
			stop = c == ':' || c == '}' || c == ','
		case ctxArray:
			stop = c == ',' || c == ']' || c == '}'
		default:
			stop = c == ',' || c == '}' || c == '\n' && p.nextLineLooksLikeKey()
		}
		if stop {
			break
		}
		p.pos++
	}
	return strings.TrimFunc(string(p.src[start:p.pos]), unicode.IsSpace)
}

// bareKey reads an unquoted key as json_repair does: up to ':' or whitespace. A word that
// whitespace ends and that is followed by neither ':' nor ',' is not a key: it is dropped
// and scanning starts again at the next quote or letter or digit (skipping braces and
// punctuation), so prose such as "{note} {\"k\": 1}" or "{my key: 1}" yields the key
// after it.
func (p *repairParser) bareKey() any {
	for {
		start := p.pos
		for !p.end() && p.src[p.pos] != ':' && !unicode.IsSpace(p.src[p.pos]) {
			p.pos++
		}
		word := string(p.src[start:p.pos])
		if p.end() || p.src[p.pos] == ':' {
			return word
		}
		i := p.pos
		for i < len(p.src) && unicode.IsSpace(p.src[i]) {
			i++
		}
		if i >= len(p.src) || p.src[i] == ':' || p.src[i] == ',' {
			return word
		}
		p.pos = i
		for !p.end() && !isQuote(p.src[p.pos]) && !unicode.IsLetter(p.src[p.pos]) && !unicode.IsDigit(p.src[p.pos]) {
			p.pos++
		}
		if p.end() {
			return ""
		}
		if isQuote(p.src[p.pos]) {
			return p.str()
		}
	}
}

// nextLineLooksLikeKey lets an unquoted multi-line value end at a line holding "key":.
func (p *repairParser) nextLineLooksLikeKey() bool {
	i := p.pos
	for i < len(p.src) && unicode.IsSpace(p.src[i]) {
		i++
	}
	if i >= len(p.src) || p.src[i] != '"' {
		return false
	}
	for i++; i < len(p.src) && p.src[i] != '\n'; i++ {
		if p.src[i] == '"' && i+1 < len(p.src) && p.src[i+1] == ':' {
			return true
		}
	}
	return false
}

func (p *repairParser) number() any {
	start := p.pos
	for !p.end() {
		c := p.src[p.pos]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' && p.pos > start || c == '.' || c == 'e' || c == 'E' || c == '_' {
			p.pos++
			continue
		}
		break
	}
	if !p.end() && unicode.IsLetter(p.src[p.pos]) {
		p.pos = start // 42abc: it was a string after all
		return p.bare()
	}
	text := strings.TrimRight(string(p.src[start:p.pos]), "-eE+.")
	p.pos = start + len([]rune(text))
	if text == "" {
		p.pos = start + 1
		return ""
	}
	if strings.ContainsAny(text, ".eE") {
		if f, err := strconv.ParseFloat(strings.ReplaceAll(text, "_", ""), 64); err == nil {
			return f
		}
		return text
	}
	if n, err := strconv.ParseInt(strings.ReplaceAll(text, "_", ""), 10, 64); err == nil {
		return n
	}
	if _, err := strconv.ParseFloat(text, 64); err == nil {
		return json.Number(text)
	}
	return text
}
