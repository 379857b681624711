package py

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// FormatError is a failure of Python's str.format_map at a byte offset of the text.
type FormatError struct {
	Offset int
	Msg    string
}

func (e *FormatError) Error() string { return e.Msg }

// FormatLookup resolves a format_map key. ok=false means "missing": the mapping then
// answers "{key}" (the template adapter's _SafeDict), which still goes through indexing,
// conversion and spec.
type FormatLookup func(key string) (val FormatValue, ok bool)

// FormatValue is what a mapping key holds: a string, or an object (a dspy.History) whose
// str() and repr() differ from a string's.
type FormatValue struct {
	Str      string
	Repr     string // set for objects; empty for strings (computed on demand)
	IsObject bool
	TypeName string // Python type name for error messages ("History")
}

// StrValue is a string held by a mapping.
func StrValue(s string) FormatValue { return FormatValue{Str: s} }

// ObjectValue is an object held by a mapping, with its str() and repr().
func ObjectValue(v any) FormatValue {
	return FormatValue{Str: Str(v), Repr: Repr(v), IsObject: true, TypeName: TypeName(v)}
}

// FormatMap is Python's str.format_map(mapping) whose mapping answers a missing key
// "{key}" (see FormatLookup).
func FormatMap(s string, lookup FormatLookup) (string, *FormatError) {
	return vformat(s, lookup, 2, 0)
}

// vformat is Python's str.format_map(mapping) (called with depth 2 and base 0): "{{" and
// "}}" are literal braces, "{name[idx]!conv:spec}" fields are looked up, and a lone brace is
// an error. Missing keys resolve to "{key}" (the reference's _SafeDict), so unknown
// variables pass through. base is the offset of s in the outer string, for error positions.
func vformat(s string, lookup FormatLookup, depth, base int) (string, *FormatError) {
	if depth <= 0 {
		return "", &FormatError{base, "Max string recursion exceeded"}
	}
	if strings.IndexByte(s, '{') < 0 && strings.IndexByte(s, '}') < 0 {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	n := len(s)
	for i := 0; i < n; {
		c := s[i]
		if c != '{' && c != '}' {
			j := i + 1
			for j < n && s[j] != '{' && s[j] != '}' {
				j++
			}
			b.WriteString(s[i:j])
			i = j
			continue
		}
		if i+1 < n && s[i+1] == c {
			b.WriteByte(c)
			i += 2
			continue
		}
		if c == '}' {
			return "", &FormatError{base + i, "Single '}' encountered in format string"}
		}
		if i+1 >= n {
			return "", &FormatError{base + i, "Single '{' encountered in format string"}
		}
		name, conv, spec, specAt, next, err := parseField(s, i+1)
		if err != nil {
			err.Offset += base
			if err.Offset < base+i {
				err.Offset = base + i
			}
			return "", err
		}
		out, ferr := renderField(name, conv, spec, lookup, depth, base+specAt)
		if ferr != nil {
			if ferr.Offset < 0 {
				ferr.Offset = base + i
			}
			return "", ferr
		}
		b.WriteString(out)
		i = next
	}
	return b.String(), nil
}

// parseField reads a replacement field starting just after its '{' (CPython's
// parse_field): the field name runs to '}', ':' or '!', skipping over "[...]".
func parseField(s string, i int) (name string, conv byte, spec string, specAt, next int, err *FormatError) {
	n := len(s)
	start := i
	var c byte
	end := -1
	for i < n {
		c = s[i]
		i++
		if c == '{' {
			return "", 0, "", 0, 0, &FormatError{i - 1, "unexpected '{' in field name"}
		}
		if c == '[' {
			for i < n && s[i] != ']' {
				i++
			}
			c = 0
			continue
		}
		if c == '}' || c == ':' || c == '!' {
			end = i - 1
			break
		}
		c = 0
	}
	if end < 0 {
		return "", 0, "", 0, 0, &FormatError{start - 1, "expected '}' before end of string"}
	}
	name = s[start:end]
	if c == '}' {
		return name, 0, "", i, i, nil
	}
	if c == '!' {
		if i >= n {
			return "", 0, "", 0, 0, &FormatError{i - 1, "end of string while looking for conversion specifier"}
		}
		conv = s[i]
		i++
		if i < n {
			c2 := s[i]
			i++
			if c2 == '}' {
				return name, conv, "", i, i, nil
			}
			if c2 != ':' {
				return "", 0, "", 0, 0, &FormatError{i - 1, "expected ':' after conversion specifier"}
			}
		}
	}
	fstart := i
	count := 1
	for i < n {
		c3 := s[i]
		i++
		switch c3 {
		case '{':
			count++
		case '}':
			count--
			if count == 0 {
				return name, conv, s[fstart : i-1], fstart, i, nil
			}
		}
	}
	return "", 0, "", 0, 0, &FormatError{start - 1, "unmatched '{' in format spec"}
}

func pyInt(s string) (int, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.Atoi(s)
	return v, err == nil
}

// renderField resolves one field. Errors carry Offset -1 when they belong to the field as
// a whole (the caller fills in the field's position).
func renderField(name string, conv byte, spec string, lookup FormatLookup, depth, specAt int) (string, *FormatError) {
	fail := func(format string, a ...any) (string, *FormatError) {
		return "", &FormatError{-1, fmt.Sprintf(format, a...)}
	}
	i := 0
	for i < len(name) && name[i] != '.' && name[i] != '[' {
		i++
	}
	first := name[:i]
	if _, isInt := pyInt(first); first == "" || isInt {
		return fail("Format string contains positional fields (use {name})")
	}
	val, ok := lookup(first)
	if !ok {
		val = StrValue("{" + first + "}")
	}
	for i < len(name) {
		c := name[i]
		i++
		switch c {
		case '.':
			st := i
			for i < len(name) && name[i] != '.' && name[i] != '[' {
				i++
			}
			if name[st:i] == "" {
				return fail("Empty attribute in format string")
			}
			return fail("attribute access {%s} is not supported in templates", name)
		case '[':
			st := i
			for i < len(name) && name[i] != ']' {
				i++
			}
			if i >= len(name) {
				return fail("Missing ']' in format string")
			}
			key := name[st:i]
			i++
			if key == "" {
				return fail("Empty attribute in format string")
			}
			if val.IsObject {
				return fail("'%s' object is not subscriptable", val.TypeName)
			}
			idx, isInt := pyInt(key)
			if !isInt {
				return fail("string indices must be integers, not 'str'")
			}
			r, found := runeAt(val.Str, idx)
			if !found {
				return fail("string index out of range")
			}
			val = StrValue(string(r))
		default:
			return fail("Only '.' or '[' may follow ']' in format field specifier")
		}
	}
	switch conv {
	case 0, 's':
		if val.IsObject && conv == 's' {
			val = StrValue(val.Str)
		}
	case 'r':
		if val.IsObject {
			val = StrValue(val.Repr)
		} else {
			val = StrValue(ReprString(val.Str, false))
		}
	case 'a':
		if val.IsObject {
			val = StrValue(asciiOnly(val.Repr))
		} else {
			val = StrValue(ReprString(val.Str, true))
		}
	default:
		return fail("Unknown conversion specifier %s", string(rune(conv)))
	}
	if spec == "" {
		return val.Str, nil
	}
	expanded := spec
	if strings.ContainsAny(spec, "{}") {
		var err *FormatError
		if expanded, err = vformat(spec, lookup, depth-1, specAt); err != nil {
			return "", err
		}
	}
	if expanded == "" {
		return val.Str, nil
	}
	if val.IsObject {
		return fail("unsupported format string passed to %s.__format__", val.TypeName)
	}
	out, msg := formatStrSpec(val.Str, expanded)
	if msg != "" {
		return fail("%s", msg)
	}
	return out, nil
}

func runeAt(s string, idx int) (rune, bool) {
	n := 0
	for _, r := range s {
		if n == idx {
			return r, true
		}
		n++
	}
	return 0, false
}

// formatStrSpec is str.__format__: [[fill]align][0][width][.precision][s]. Numeric-only
// options give Python's error texts.
func formatStrSpec(s, spec string) (string, string) {
	rs := []rune(spec)
	pos := 0
	fill, align := ' ', '<'
	fillSet, alignSet := false, false
	isAlign := func(r rune) bool { return r == '<' || r == '>' || r == '^' || r == '=' }
	if len(rs) >= 2 && isAlign(rs[1]) {
		fill, align, fillSet, alignSet = rs[0], rs[1], true, true
		pos = 2
	} else if len(rs) >= 1 && isAlign(rs[0]) {
		align, alignSet = rs[0], true
		pos = 1
	}
	if pos < len(rs) && (rs[pos] == '+' || rs[pos] == '-' || rs[pos] == ' ') {
		return "", "Sign not allowed in string format specifier"
	}
	if pos < len(rs) && rs[pos] == 'z' {
		return "", "Negative zero coercion (z) not allowed in format specifier"
	}
	if pos < len(rs) && rs[pos] == '#' {
		return "", "Alternate form (#) not allowed in string format specifier"
	}
	if !fillSet && pos < len(rs) && rs[pos] == '0' {
		fill = '0'
		pos++
	}
	width := 0
	for pos < len(rs) && rs[pos] >= '0' && rs[pos] <= '9' {
		width = width*10 + int(rs[pos]-'0')
		if width > 1<<20 {
			return "", "Too many decimal digits in format string"
		}
		pos++
	}
	if pos < len(rs) && (rs[pos] == ',' || rs[pos] == '_') {
		return "", fmt.Sprintf("Cannot specify '%c' with 's'.", rs[pos])
	}
	prec := -1
	if pos < len(rs) && rs[pos] == '.' {
		pos++
		st := pos
		prec = 0
		for pos < len(rs) && rs[pos] >= '0' && rs[pos] <= '9' {
			prec = prec*10 + int(rs[pos]-'0')
			if prec > 1<<20 {
				return "", "Too many decimal digits in format string"
			}
			pos++
		}
		if pos == st {
			return "", "Format specifier missing precision"
		}
	}
	if len(rs)-pos > 1 {
		return "", fmt.Sprintf("Invalid format specifier '%s' for object of type 'str'", spec)
	}
	if pos < len(rs) && rs[pos] != 's' {
		return "", fmt.Sprintf("Unknown format code '%c' for object of type 'str'", rs[pos])
	}
	if alignSet && align == '=' {
		return "", "'=' alignment not allowed in string format specifier"
	}
	if prec >= 0 && utf8.RuneCountInString(s) > prec {
		s = string([]rune(s)[:prec])
	}
	pad := width - utf8.RuneCountInString(s)
	if pad <= 0 {
		return s, ""
	}
	f := string(fill)
	switch align {
	case '>':
		return strings.Repeat(f, pad) + s, ""
	case '^':
		left := pad / 2
		return strings.Repeat(f, left) + s + strings.Repeat(f, pad-left), ""
	}
	return s + strings.Repeat(f, pad), ""
}

// asciiOnly escapes the non-ASCII characters of an object's repr, as ascii(obj) does.
func asciiOnly(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 {
			b.WriteRune(r)
		} else {
			writeEscape(&b, r)
		}
	}
	return b.String()
}

// FormatField is one replacement field of a format string.
type FormatField struct {
	Name string // the field name with any index ("a", "a[0]")
	Conv byte   // 0, 's', 'r' or 'a'
	Spec string // the format spec, unexpanded
}

// FormatFields lists the replacement fields of s in order, as string.Formatter().parse
// finds them ("{{" and "}}" are literal braces); it stops at the first malformed field.
func FormatFields(s string) []FormatField {
	var out []FormatField
	for i := 0; i < len(s); i++ {
		if s[i] != '{' {
			continue
		}
		if i+1 < len(s) && s[i+1] == '{' {
			i++
			continue
		}
		name, conv, spec, _, next, err := parseField(s, i+1)
		if err != nil {
			break
		}
		out = append(out, FormatField{Name: name, Conv: conv, Spec: spec})
		i = next - 1
	}
	return out
}
