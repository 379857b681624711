package adapter

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"strings"

	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

// The ChatAdapter parse of a well-formed completion, without splitting it into lines:
// sections are found by scanning the text once and each field's text is a substring of
// it, so nothing is allocated but the result, in one piece (sig.NewScalarMap). It gives
// exactly what chatSections and ParseChat give; whatever it is not sure of (line breaks
// other than \n, an indented or non-ASCII header, a header line with trailing blanks
// before its text, a missing field, a value it does not convert itself) it leaves to
// them.

// headerOpen starts every section header, headerClose ends it.
const headerOpen, headerClose = "[[ ## ", " ## ]]"

// maxScanFields bounds the signatures the scan handles (the values live on the stack).
const maxScanFields = 8

// scanChat parses completion for s, or reports ok=false to have the general path do it.
func scanChat(s *sig.Signature, completion string) (*sig.Map, bool) {
	n := len(s.Outputs)
	if n == 0 || n > maxScanFields || hasOtherLineBreaks(completion) {
		return nil, false
	}
	// The values are kept unboxed until every field is found: the result is then one
	// allocation, and a completion the general path takes over costs none.
	var vals [maxScanFields]sig.Scalar
	var found [maxScanFields]bool
	missing := n
	// cur is the field whose section is open (-1: none or not ours); textStart its text.
	cur, textStart := -1, 0
	// Headers are found by searching for their opening; only the lines holding one are
	// looked at (the text between them is a substring as it stands).
	for at, misses := 0, 0; at < len(completion); {
		i := at // a header follows the previous one's text, the first comes first
		if !strings.HasPrefix(completion[at:], headerOpen) {
			if i = indexHeader(completion[at:], &misses); i < 0 {
				break
			}
			i += at
		}
		at = i + len(headerOpen)
		if i > 0 && completion[i-1] != '\n' {
			if pos := strings.LastIndexByte(completion[:i], '\n') + 1; blankOrNonASCII(completion[pos:i]) {
				return nil, false // an indented header: Python strips the line first
			}
			continue
		}
		// The line starts with the opening: a header when a name and the closing follow.
		end := at + wordLen(completion[at:])
		if end < len(completion) && completion[end] >= 0x80 {
			return nil, false // a non-ASCII letter may continue the name
		}
		if end == at || !strings.HasPrefix(completion[end:], headerClose) {
			continue
		}
		name := completion[at:end]
		end += len(headerClose)
		// The open section ends before this line's \n (its lines are joined by \n).
		if cur >= 0 {
			if !scanField(s, cur, completion[textStart:max(i-1, textStart)], &vals) {
				return nil, false
			}
			found[cur] = true
			missing--
		}
		cur = -1
		for j := range s.Outputs[:n] {
			if s.Outputs[j].Name == name {
				if !found[j] {
					cur = j
				}
				break
			}
		}
		eol := end
		if eol < len(completion) && completion[eol] != '\n' {
			if k := strings.IndexByte(completion[eol:], '\n'); k >= 0 {
				eol += k
			} else {
				eol = len(completion)
			}
		}
		at = min(eol+1, len(completion))
		textStart = at
		if end == eol {
			continue
		}
		if r := strip(completion[end:eol]); r != "" {
			// "header text": the text starts on the header line; it runs on into the
			// next lines only when nothing but the \n separates them.
			if cur >= 0 && at < len(completion) && r != completion[eol-len(r):eol] && !blankRest(completion[at:]) {
				return nil, false
			}
			textStart = eol - len(py.LStrip(completion[end:eol]))
		}
	}
	if cur >= 0 {
		if !scanField(s, cur, completion[textStart:], &vals) {
			return nil, false
		}
		missing--
	}
	if missing != 0 {
		return nil, false
	}
	var names [maxScanFields]string
	for i, f := range s.Outputs {
		names[i] = f.Name
	}
	return sig.NewScalarMap(names[:n], vals[:n]), true
}

// scanField reads output i's section text into vals[i].
func scanField(s *sig.Signature, i int, text string, vals *[maxScanFields]sig.Scalar) bool {
	t := s.Outputs[i].Type
	if text = strip(text); t.IsStr() {
		vals[i] = sig.StrScalar(text)
		return true
	}
	v, ok := scanValue(t, text)
	vals[i] = v
	return ok
}

// strip is py.Strip, at once for a text between printable ASCII characters, or that
// and a line break (a section's text ends with one, before the blank line).
func strip(s string) string {
	t := s
	if n := len(t); n > 0 && t[n-1] == '\n' {
		t = t[:n-1]
	}
	if n := len(t); n > 0 && t[0]-'!' < 0x7f-'!' && t[n-1]-'!' < 0x7f-'!' {
		return t
	}
	return stripBlanks(s)
}

// stripBlanks is strip for any text: ASCII blanks here, the others by py.Strip.
func stripBlanks(s string) string {
	for len(s) > 0 && asciiBlank(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	for len(s) > 0 && asciiBlank(s[0]) {
		s = s[1:]
	}
	if len(s) == 0 || s[0] > ' ' && s[0] < 0x80 && s[len(s)-1] > ' ' && s[len(s)-1] < 0x80 {
		return s
	}
	return py.Strip(s)
}

// asciiBlank is Python's str.isspace for an ASCII byte: \t-\r, \x1c-\x1f and the space.
func asciiBlank(c byte) bool { return c == ' ' || c-'\t' <= '\r'-'\t' || c-0x1c <= 0x1f-0x1c }

// indexHeader is strings.Index(s, headerOpen). It looks for the opening's first byte
// while it is rare (one call finds the next header), and leaves a text of many
// brackets to strings.Index; misses counts the brackets that started no header.
func indexHeader(s string, misses *int) int {
	const maxMisses = 8
	for at := 0; *misses < maxMisses; {
		i := strings.IndexByte(s[at:], headerOpen[0])
		if i < 0 {
			return -1
		}
		at += i
		if strings.HasPrefix(s[at:], headerOpen) {
			return at
		}
		at++
		if *misses++; *misses == maxMisses {
			if i := strings.Index(s[at:], headerOpen); i >= 0 {
				return at + i
			}
			return -1
		}
	}
	return strings.Index(s, headerOpen)
}

// blankRest reports whether the rest of a completion up to the next header is blank, so
// that a header line's trailing blanks do not matter (the section's text is stripped).
func blankRest(s string) bool {
	for pos := 0; pos < len(s); {
		eol := strings.IndexByte(s[pos:], '\n')
		if eol < 0 {
			eol = len(s)
		} else {
			eol += pos
		}
		if _, _, hdr, _ := scanHeader(s[pos:eol]); hdr {
			return true
		}
		if py.Strip(s[pos:eol]) != "" {
			return false
		}
		pos = eol + 1
	}
	return true
}

// hasOtherLineBreaks reports a line boundary of Python's splitlines other than \n: \r,
// \v, \f, \x1c-\x1e, U+0085, U+2028, U+2029.
func hasOtherLineBreaks(s string) bool {
	word := func(i int) uint64 { return binary.LittleEndian.Uint64([]byte(s[i : i+8])) }
	// Sixteen bytes at a time: only words that may hold a boundary are looked at closely
	// (ASCII text without \v, \f, \r, \x0e or \x1b-\x1e passes at one test).
	i := 0
	for ; i+16 <= len(s); i += 16 {
		a, b := word(i), word(i+8)
		if (mayBreakASCII(a)|a|mayBreakASCII(b)|b)&0x8080808080808080 == 0 {
			continue
		}
		if mayBreakLine(a) != 0 && otherLineBreak(s, i, i+8) || mayBreakLine(b) != 0 && otherLineBreak(s, i+8, i+16) {
			return true
		}
	}
	if i+8 <= len(s) {
		if mayBreakLine(word(i)) != 0 && otherLineBreak(s, i, i+8) {
			return true
		}
		i += 8
	}
	if i < len(s) && len(s) >= 8 && mayBreakLine(word(len(s)-8)) == 0 {
		return false // the last word, which holds the rest, has nothing to look at
	}
	return otherLineBreak(s, i, len(s))
}

// mayBreakLine flags (0x80) the bytes of the word x that may start one of
// hasOtherLineBreaks' boundaries: \v, \f, \r, \x1c-\x1e and, unwanted, \x0e and \x1b;
// and the lead bytes of U+0085 and U+2028-9, 0xC2 and 0xE2. Each byte is computed on its
// own (no carry or borrow crosses into the next), so none is missed.
func mayBreakLine(x uint64) uint64 {
	const lo7, hi = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	// 0xC2 and 0xE2 differ in bit 5 alone: with it set, both are 0xE2.
	y := (x | 0x2020202020202020) ^ 0xe2e2e2e2e2e2e2e2
	lead := ^(((y & lo7) + lo7) | y) & hi // bytes where y is 0
	return mayBreakASCII(x)&^x&hi | lead
}

// mayBreakASCII is mayBreakLine's test of the ASCII bytes: bit 7 is set in the bytes
// whose low seven bits are one of the controls (and in some non-ASCII ones).
func mayBreakASCII(x uint64) uint64 {
	// Without bits 7 and 4, the controls wanted are those in 0x0b-0x0e.
	t := x & 0x6f6f6f6f6f6f6f6f
	return (0x8e8e8e8e8e8e8e8e - t) & (t + 0x7575757575757575) // t <= 0x0e and t >= 0x0b
}

// otherLineBreak looks for one of hasOtherLineBreaks' boundaries starting in s[from:to].
func otherLineBreak(s string, from, to int) bool {
	for i := from; i < to; i++ {
		switch s[i] {
		case '\r', '\v', '\f', 0x1c, 0x1d, 0x1e:
			return true
		case 0xC2:
			if i+1 < len(s) && s[i+1] == 0x85 {
				return true
			}
		case 0xE2:
			if i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xA8 || s[i+2] == 0xA9) {
				return true
			}
		}
	}
	return false
}

// scanHeader matches "[[ ## name ## ]]" at the start of line, returning the name and the
// byte offset after the match. sure is false when the line might be a header the scan
// does not read the way Python would: one with leading blanks, or a non-ASCII name.
func scanHeader(line string) (name string, rest int, hdr, sure bool) {
	const open, closeTag = headerOpen, " ## ]]"
	if !strings.HasPrefix(line, open) {
		if i := strings.Index(line, open); i > 0 && blankOrNonASCII(line[:i]) {
			return "", 0, false, false
		}
		return "", 0, false, true
	}
	n := len(open)
	for n < len(line) && isASCIIWord(line[n]) {
		n++
	}
	if n < len(line) && line[n] >= 0x80 {
		return "", 0, false, false // a non-ASCII letter may continue the name
	}
	if n == len(open) || !strings.HasPrefix(line[n:], closeTag) {
		return "", 0, false, true
	}
	return line[len(open):n], n + len(closeTag), true, true
}

func isASCIIWord(c byte) bool { return wordByte[c] }

// wordLen is the length of the ASCII word characters s starts with, found eight bytes
// at a time (a header's name).
func wordLen(s string) int {
	n := 0
	for ; n+8 <= len(s); n += 8 {
		if other := notWordBytes(binary.LittleEndian.Uint64([]byte(s[n : n+8]))); other != 0 {
			return n + bits.TrailingZeros64(other)/8
		}
	}
	for n < len(s) && wordByte[s[n]] {
		n++
	}
	return n
}

// notWordBytes flags (0x80) the bytes of the word x that are not ASCII word characters.
// Each byte is computed on its own below bit 7 (no carry crosses into the next): for a
// range lo-up, t+(0x80-lo) reaches bit 7 from lo on and t+(0x7f-up) past up.
func notWordBytes(x uint64) uint64 {
	const lo7, hi = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	t := x & lo7
	l := (x | 0x2020202020202020) & lo7                            // with bit 5 set, A-Z are a-z
	digit := (t + 0x5050505050505050) &^ (t + 0x4646464646464646)  // 0-9
	letter := (l + 0x1f1f1f1f1f1f1f1f) &^ (l + 0x0505050505050505) // a-z
	under := (t + 0x2121212121212121) &^ (t + 0x2020202020202020)  // _
	return (digit|letter|under)&^x&hi ^ hi
}

// wordByte holds the ASCII bytes of Python's \w: letters, digits and the underscore.
var wordByte = func() (t [256]bool) {
	for c := range t {
		t[c] = c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	return t
}()

// blankOrNonASCII reports whether s has no printable ASCII character: Python's strip
// might remove all of it.
func blankOrNonASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x80 && c > ' ' {
			return false
		}
	}
	return true
}

// scanValue is ParseValue for what needs no general machinery: text for str, and a
// plain JSON number (what ast.literal_eval reads it as, then pydantic's lax conversion)
// for int, float and bool. ok=false leaves the value to ParseValue.
func scanValue(t *sig.Type, text string) (sig.Scalar, bool) {
	if t.IsStr() {
		return sig.StrScalar(text), true
	}
	switch t.Kind {
	case sig.KindInt, sig.KindFloat, sig.KindBool:
	default:
		return sig.Scalar{}, false
	}
	f, n, isFloat, ok := plainNumber(text)
	switch {
	case !ok:
		return sig.Scalar{}, false
	case t.Kind == sig.KindFloat && isFloat:
		return sig.FloatScalar(f), true
	case t.Kind == sig.KindFloat:
		return sig.FloatScalar(float64(n)), true
	case t.Kind == sig.KindInt && !isFloat:
		return sig.IntScalar(n), true
	case t.Kind == sig.KindBool && !isFloat && (n == 0 || n == 1):
		return sig.BoolScalar(n == 1), true
	}
	return sig.Scalar{}, false // a float for an int, another number for a bool: ParseValue says
}

// plainNumber reads text when it is exactly a JSON number, as Python's literal_eval
// does: an int (n) without fraction or exponent, else a float (f). Anything else, and a
// value out of range, is not plain.
func plainNumber(text string) (f float64, n int64, isFloat, ok bool) {
	i := 0
	neg := i < len(text) && text[i] == '-'
	if neg {
		i++
	}
	// mant collects up to 19 significant digits; nd counts them all, point those after
	// the decimal point: exact small values skip strconv (see below).
	start := i
	i, mant, nd := decimalDigits(text, i, 0, 0)
	if d := i - start; d == 0 || d > 1 && text[start] == '0' {
		return 0, 0, false, false
	}
	point := 0
	if i < len(text) && text[i] == '.' {
		j := i + 1
		if i, mant, nd = decimalDigits(text, j, mant, nd); i == j {
			return 0, 0, false, false
		}
		point = i - j
		isFloat = true
	}
	exp := 0 // the exponent when it is short enough to matter to the fast path
	if i < len(text) && (text[i] == 'e' || text[i] == 'E') {
		i++
		minus := i < len(text) && text[i] == '-'
		if i < len(text) && (text[i] == '+' || minus) {
			i++
		}
		j := i
		for i < len(text) && text[i] >= '0' && text[i] <= '9' {
			if i-j < 4 {
				exp = exp*10 + int(text[i]-'0')
			} else {
				exp = 1 << 20 // too long for the fast path: strconv decides
			}
			i++
		}
		if i == j {
			return 0, 0, false, false
		}
		if minus {
			exp = -exp
		}
		isFloat = true
	}
	if i != len(text) {
		return 0, 0, false, false
	}
	// Clinger's fast path: a mantissa of at most 15 digits and a power of ten up to 22 are
	// both exact doubles, so one multiplication or division rounds correctly (as
	// strconv.ParseFloat does for them too).
	if e := exp - point; isFloat && nd <= 15 && e >= -22 && e <= 22 {
		f = float64(mant)
		if e < 0 {
			f /= pow10[-e]
		} else {
			f *= pow10[e]
		}
		if neg {
			f = -f
		}
		return f, 0, true, true
	}
	if !isFloat && nd <= 18 {
		n = int64(mant)
		if neg {
			n = -n
		}
		return 0, n, false, true
	}
	var err error
	if isFloat {
		f, err = strconv.ParseFloat(text, 64)
	} else {
		n, err = strconv.ParseInt(text, 10, 64)
	}
	return f, n, isFloat, err == nil
}

// decimalDigits reads the digits of text from i on into mant (the first 19 of them)
// and nd (all of them), and returns where they end.
func decimalDigits(text string, i int, mant uint64, nd int) (int, uint64, int) {
	for ; i < len(text); i++ {
		c := text[i] - '0'
		if c > 9 {
			break
		}
		if nd < 19 {
			mant = mant*10 + uint64(c)
		}
		nd++
	}
	return i, mant, nd
}

var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
	1e17, 1e18, 1e19, 1e20, 1e21, 1e22}
