package template

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/sessionbench/sessionbench/core/py"
)

// Escaped braces are held as bytes that never occur in UTF-8 text, so that pass 2 cannot
// see them; they become literal braces at the very end (also inside substituted values,
// exactly as the reference's sentinel replacement does).
const (
	escOpen  = "\xfe"
	escClose = "\xff"
)

var (
	// funcRe is the reference's \{(\w+)\(([^)]*)\)\} with Python's Unicode \w.
	funcRe = regexp.MustCompile(`\{([\p{L}\p{N}_]+)\(([^)]*)\)\}`)
	// kwargRe is (\w+)\s*=\s*(?:'([^']*)'|"([^"]*)"): only quoted values count.
	kwargRe = regexp.MustCompile(`([\p{L}\p{N}_]+)[\s\v\x{1c}-\x{1f}\x{85}\p{Z}]*=[\s\v\x{1c}-\x{1f}\x{85}\p{Z}]*(?:'([^']*)'|"([^"]*)")`)
	// restore turns the escape bytes back into braces.
	restore = strings.NewReplacer(escOpen, "{", escClose, "}")
	escape  = strings.NewReplacer("{", escOpen, "}", escClose)
)

// escapeBraces replaces "{{" and "}}" by the escape bytes (left to right, non-overlapping,
// as Python's str.replace) and returns, for every byte of the result, its offset in s.
func escapeBraces(s string) (string, []int32) {
	var b strings.Builder
	b.Grow(len(s))
	pos := make([]int32, 0, len(s)+1)
	for i := 0; i < len(s); {
		if i+1 < len(s) && s[i] == s[i+1] && (s[i] == '{' || s[i] == '}') {
			if s[i] == '{' {
				b.WriteString(escOpen)
			} else {
				b.WriteString(escClose)
			}
			pos = append(pos, int32(i))
			i += 2
			continue
		}
		b.WriteByte(s[i])
		pos = append(pos, int32(i))
		i++
	}
	pos = append(pos, int32(len(s))) // end of text
	return b.String(), pos
}

// call is one template-function occurrence found by pass 1.
type call struct {
	Name   string
	RawArg string
	Kwargs map[string]string
	Text   string // the whole match, kept verbatim when the function is unknown
}

// parseKwargs is the reference's _parse_func_kwargs: key='v' or key="v" pairs only.
func parseKwargs(raw string) map[string]string {
	kw := map[string]string{}
	for _, m := range kwargRe.FindAllStringSubmatchIndex(raw, -1) {
		key := raw[m[2]:m[3]]
		if m[4] >= 0 {
			kw[key] = raw[m[4]:m[5]]
		} else {
			kw[key] = raw[m[6]:m[7]]
		}
	}
	return kw
}

// segment maps a stretch of the pass-1 output back to the escaped template: verbatim
// stretches map byte for byte, function results map to the call's first byte.
type segment struct {
	out, src int
	verbatim bool
}

// evalFunc resolves one call: ok=false leaves it verbatim (unknown function).
type evalFunc func(c call) (result string, ok bool, err error)

// renderText runs the reference's _render on one content string: escape, pass 1
// (template functions), pass 2 (format_map), restore. Errors name the message index and
// the line and column in the original text.
func renderText(index int, key, text string, eval evalFunc, lookup py.FormatLookup) (string, error) {
	if strings.IndexByte(text, '{') < 0 && strings.IndexByte(text, '}') < 0 {
		return text, nil
	}
	t1, pos := escapeBraces(text)
	t2, segs, err := evalFunctions(t1, eval)
	if err != nil {
		var fe *funcError
		if asFuncError(err, &fe) {
			return "", &TemplateError{Message: index, Key: key, Line: lineOf(text, int(pos[fe.at])), Column: colOf(text, int(pos[fe.at])), Msg: fe.Error()}
		}
		return "", err
	}
	out, ferr := py.FormatMap(t2, lookup)
	if ferr != nil {
		return "", newTemplateError(index, key, text, int(pos[min(mapOffset(segs, ferr.Offset), len(pos)-1)]), ferr.Msg)
	}
	// Byte searches: the escape bytes are not valid UTF-8, which sends ContainsAny down
	// its slow path.
	if strings.IndexByte(out, escOpen[0]) >= 0 || strings.IndexByte(out, escClose[0]) >= 0 {
		out = restore.Replace(out)
	}
	return out, nil
}

type funcError struct {
	at  int
	err error
}

func (e *funcError) Error() string { return e.err.Error() }
func (e *funcError) Unwrap() error { return e.err }

func asFuncError(err error, target **funcError) bool {
	fe, ok := err.(*funcError)
	if ok {
		*target = fe
	}
	return ok
}

func lineOf(text string, off int) int { l, _ := lineCol(text, off); return l }
func colOf(text string, off int) int  { _, c := lineCol(text, off); return c }

// evalFunctions is pass 1: every {name(args)} is replaced by its result with braces
// escaped; unknown functions stay as they are.
func evalFunctions(t1 string, eval evalFunc) (string, []segment, error) {
	matches := funcRe.FindAllStringSubmatchIndex(t1, -1)
	if len(matches) == 0 {
		return t1, []segment{{0, 0, true}}, nil
	}
	var b strings.Builder
	segs := make([]segment, 0, 2*len(matches)+1)
	last := 0
	for _, m := range matches {
		segs = append(segs, segment{b.Len(), last, true})
		b.WriteString(t1[last:m[0]])
		raw := py.Strip(t1[m[4]:m[5]])
		c := call{Name: t1[m[2]:m[3]], RawArg: raw, Text: t1[m[0]:m[1]]}
		if raw != "" {
			c.Kwargs = parseKwargs(raw)
		} else {
			c.Kwargs = map[string]string{}
		}
		res, ok, err := eval(c)
		if err != nil {
			return "", nil, &funcError{m[0], err}
		}
		if ok {
			segs = append(segs, segment{b.Len(), m[0], false})
			b.WriteString(escape.Replace(res))
		} else {
			segs = append(segs, segment{b.Len(), m[0], true})
			b.WriteString(c.Text)
		}
		last = m[1]
	}
	segs = append(segs, segment{b.Len(), last, true})
	b.WriteString(t1[last:])
	return b.String(), segs, nil
}

// mapOffset maps an offset of the pass-1 output back into the escaped template.
func mapOffset(segs []segment, off int) int {
	i := sort.Search(len(segs), func(i int) bool { return segs[i].out > off }) - 1
	if i < 0 {
		return off
	}
	s := segs[i]
	if s.verbatim {
		return s.src + off - s.out
	}
	return s.src
}

// dupArg reports the reference's TypeError when a quoted kwarg collides with an argument
// the function already receives (e.g. {inputs(ctx='x')}).
func dupArg(fn string, kw map[string]string, fixed ...string) error {
	for _, f := range fixed {
		if _, ok := kw[f]; ok {
			return fmt.Errorf("%s() got multiple values for argument '%s'", fn, f)
		}
	}
	return nil
}
