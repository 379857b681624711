package sig

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/sessionbench/sessionbench/core/limits"
	"github.com/sessionbench/sessionbench/core/py"
)

// Kind is the head of a type annotation.
type Kind uint8

// The supported annotation heads, in Python spelling.
const (
	KindStr Kind = iota
	KindInt
	KindFloat
	KindBool
	KindHistory
	KindAny
	KindNone
	KindList
	KindDict
	KindTuple
	KindSet
	KindUnion     // typing.Union / Optional: renders Union[...]
	KindPipeUnion // PEP 604 a | b: renders UnionType[...]
	KindLiteral
)

// Type is a parsed Python type annotation such as list[str] or Optional[int].
type Type struct {
	Kind Kind
	Args []*Type // element types (list, dict, tuple, set, unions); empty for a bare list/dict
	Lits []any   // Literal values: string, int64, bool or nil
}

// Common types.
var (
	TStr     = &Type{Kind: KindStr}
	TInt     = &Type{Kind: KindInt}
	TFloat   = &Type{Kind: KindFloat}
	TBool    = &Type{Kind: KindBool}
	THistory = &Type{Kind: KindHistory}
	TAny     = &Type{Kind: KindAny}
	TNone    = &Type{Kind: KindNone}
)

// IsStr reports whether the annotation is exactly str.
func (t *Type) IsStr() bool { return t == nil || t.Kind == KindStr }

// IsHistory reports whether the annotation is exactly History.
func (t *Type) IsHistory() bool { return t != nil && t.Kind == KindHistory }

// AllowsNone is DSPy's annotation_allows_none: None (NoneType), or a Union, Optional or
// A | B with None among its members. Any and Literal[..., None] do not count.
func (t *Type) AllowsNone() bool {
	switch t.Kind {
	case KindNone:
		return true
	case KindUnion, KindPipeUnion:
		for _, a := range t.Args {
			if a.Kind == KindNone || (a.Kind == KindUnion || a.Kind == KindPipeUnion) && a.AllowsNone() {
				return true
			}
		}
	}
	return false
}

// String is the annotation in Python source spelling (list[str], str | None).
func (t *Type) String() string {
	switch t.Kind {
	case KindUnion:
		return "Union[" + joinTypes(t.Args, (*Type).String) + "]"
	case KindPipeUnion:
		parts := make([]string, len(t.Args))
		for i, a := range t.Args {
			parts[i] = a.String()
			if a.Kind == KindNone {
				parts[i] = "None"
			}
		}
		return strings.Join(parts, " | ")
	}
	return t.Name()
}

// Name is DSPy's get_annotation_name: the text shown in "(<type>)" in system messages.
func (t *Type) Name() string {
	switch t.Kind {
	case KindStr:
		return "str"
	case KindInt:
		return "int"
	case KindFloat:
		return "float"
	case KindBool:
		return "bool"
	case KindHistory:
		return "History"
	case KindAny:
		return "Any"
	case KindNone:
		return "NoneType"
	case KindList, KindDict, KindTuple, KindSet:
		head := map[Kind]string{KindList: "list", KindDict: "dict", KindTuple: "tuple", KindSet: "set"}[t.Kind]
		if len(t.Args) == 0 {
			return head
		}
		return head + "[" + joinTypes(t.Args, (*Type).Name) + "]"
	case KindUnion:
		return "Union[" + joinTypes(t.Args, (*Type).Name) + "]"
	case KindPipeUnion:
		return "UnionType[" + joinTypes(t.Args, (*Type).Name) + "]"
	case KindLiteral:
		parts := make([]string, len(t.Lits))
		for i, l := range t.Lits {
			if s, ok := l.(string); ok {
				parts[i] = quoteLiteral(s)
			} else {
				parts[i] = py.Text(l)
			}
		}
		return "Literal[" + strings.Join(parts, ", ") + "]"
	}
	return "?"
}

func joinTypes(ts []*Type, f func(*Type) string) string {
	parts := make([]string, len(ts))
	for i, a := range ts {
		parts[i] = f(a)
	}
	return strings.Join(parts, ", ")
}

// quoteLiteral quotes a string Literal argument as DSPy does: single quotes, double quotes
// when the value has ' but not ", otherwise single quotes with \' escaping.
func quoteLiteral(s string) string {
	hasS, hasD := strings.Contains(s, "'"), strings.Contains(s, `"`)
	switch {
	case !hasS:
		return "'" + s + "'"
	case !hasD:
		return `"` + s + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", `\'`) + "'"
}

// TypeError is a malformed annotation, with the 1-based column where it went wrong.
type TypeError struct {
	Text   string
	Column int
	Msg    string
}

func (e *TypeError) Error() string {
	return fmt.Sprintf("type %q, column %d: %s", limits.Excerpt(e.Text, 200), e.Column, e.Msg)
}

// ParseType parses an annotation in Python spelling: str, int, float, bool, History,
// Any, None, list[T], dict[K, V], tuple[...], set[T], Optional[T], Union[...], A | B,
// Literal['a', 'b'] (typing. and dspy. prefixes and List/Dict/... aliases accepted).
func ParseType(text string) (*Type, error) {
	p := &typeParser{src: text}
	p.skip()
	t, err := p.union()
	if err != nil {
		return nil, err
	}
	p.skip()
	if p.pos < len(p.src) {
		return nil, p.errf("unexpected %q", string(p.src[p.pos]))
	}
	return t, nil
}

// MustType parses an annotation known to be valid (for literals in code).
func MustType(text string) *Type {
	t, err := ParseType(text)
	if err != nil {
		panic(err)
	}
	return t
}

type typeParser struct {
	src   string
	pos   int
	depth int
}

func (p *typeParser) errf(format string, a ...any) error {
	return &TypeError{Text: p.src, Column: p.pos + 1, Msg: fmt.Sprintf(format, a...)}
}

func (p *typeParser) skip() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

func (p *typeParser) peek() byte {
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *typeParser) union() (*Type, error) {
	first, err := p.primary()
	if err != nil {
		return nil, err
	}
	args := []*Type{first}
	for {
		p.skip()
		if p.peek() != '|' {
			break
		}
		p.pos++
		p.skip()
		next, err := p.primary()
		if err != nil {
			return nil, err
		}
		args = append(args, next)
	}
	if len(args) == 1 {
		return first, nil
	}
	// "|" with a typing form (Optional/Union/Literal) on either side gives typing.Union,
	// as Python's typing aliases implement __or__ / __ror__; otherwise types.UnionType.
	kind := KindPipeUnion
	for _, a := range args {
		if a.Kind == KindUnion || a.Kind == KindLiteral {
			kind = KindUnion
		}
	}
	return makeUnion(kind, args), nil
}

// makeUnion flattens nested unions of the same kind and drops duplicates, as Python does.
func makeUnion(k Kind, args []*Type) *Type {
	var flat []*Type
	seen := map[string]bool{}
	var add func(a *Type)
	add = func(a *Type) {
		if a.Kind == KindUnion || a.Kind == KindPipeUnion {
			for _, x := range a.Args {
				add(x)
			}
			return
		}
		if n := a.Name(); !seen[n] {
			seen[n] = true
			flat = append(flat, a)
		}
	}
	for _, a := range args {
		add(a)
	}
	if len(flat) == 1 {
		return flat[0]
	}
	return &Type{Kind: k, Args: flat}
}

func (p *typeParser) ident() string {
	start := p.pos
	for p.pos < len(p.src) {
		c := rune(p.src[p.pos])
		if c == '_' || c == '.' || unicode.IsLetter(c) || unicode.IsDigit(c) {
			p.pos++
			continue
		}
		break
	}
	return p.src[start:p.pos]
}

var simpleKinds = map[string]Kind{
	"str": KindStr, "int": KindInt, "float": KindFloat, "bool": KindBool,
	"History": KindHistory, "Any": KindAny, "None": KindNone, "NoneType": KindNone,
	"list": KindList, "List": KindList, "dict": KindDict, "Dict": KindDict,
	"tuple": KindTuple, "Tuple": KindTuple, "set": KindSet, "Set": KindSet,
}

func (p *typeParser) primary() (*Type, error) {
	// Python's parser refuses annotations nested deeper (limits.PythonDepth).
	if p.depth++; p.depth > limits.PythonDepth {
		return nil, p.errf("nested deeper than %d levels", limits.PythonDepth)
	}
	defer func() { p.depth-- }()
	start := p.pos
	name := p.ident()
	if name == "" {
		if p.pos >= len(p.src) {
			return nil, p.errf("expected a type name, found the end")
		}
		return nil, p.errf("expected a type name, found %q", string(p.src[p.pos]))
	}
	for _, pre := range []string{"typing.", "dspy.", "builtins."} {
		name = strings.TrimPrefix(name, pre)
	}
	p.skip()
	hasArgs := p.peek() == '['
	switch name {
	case "Literal":
		if !hasArgs {
			return nil, p.errf("Literal needs values, e.g. Literal['a', 'b']")
		}
		p.pos++
		return p.literalArgs()
	case "Optional", "Union":
		if !hasArgs {
			return nil, p.errf("%s needs type arguments", name)
		}
		p.pos++
		args, err := p.typeArgs()
		if err != nil {
			return nil, err
		}
		if name == "Optional" {
			if len(args) != 1 {
				p.pos = start
				return nil, p.errf("Optional takes exactly one type, got %d", len(args))
			}
			args = append(args, TNone)
		}
		return makeUnion(KindUnion, args), nil
	}
	k, ok := simpleKinds[name]
	if !ok {
		p.pos = start
		return nil, p.errf("unknown type %q (known: str, int, float, bool, list, dict, tuple, set, Optional, Union, Literal, Any, History)", name)
	}
	t := &Type{Kind: k}
	if hasArgs {
		switch k {
		case KindList, KindDict, KindTuple, KindSet:
		default:
			return nil, p.errf("%s takes no type arguments", name)
		}
		p.pos++
		args, err := p.typeArgs()
		if err != nil {
			return nil, err
		}
		switch {
		case (k == KindList || k == KindSet) && len(args) != 1:
			p.pos = start
			return nil, p.errf("%s takes one type argument, got %d", name, len(args))
		case k == KindDict && len(args) != 2:
			p.pos = start
			return nil, p.errf("dict takes two type arguments, got %d", len(args))
		}
		t.Args = args
	}
	return t, nil
}

func (p *typeParser) typeArgs() ([]*Type, error) {
	var args []*Type
	for {
		p.skip()
		a, err := p.union()
		if err != nil {
			return nil, err
		}
		args = append(args, a)
		p.skip()
		switch p.peek() {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return args, nil
		case 0:
			return nil, p.errf("missing ']'")
		default:
			return nil, p.errf("expected ',' or ']', found %q", string(p.peek()))
		}
	}
}

func (p *typeParser) literalArgs() (*Type, error) {
	t := &Type{Kind: KindLiteral}
	for {
		p.skip()
		v, err := p.literalValue()
		if err != nil {
			return nil, err
		}
		t.Lits = append(t.Lits, v)
		p.skip()
		switch p.peek() {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return t, nil
		case 0:
			return nil, p.errf("missing ']'")
		default:
			return nil, p.errf("expected ',' or ']', found %q", string(p.peek()))
		}
	}
}

func (p *typeParser) literalValue() (any, error) {
	c := p.peek()
	if c == '\'' || c == '"' {
		q := c
		open := p.pos
		p.pos++
		var b strings.Builder
		for p.pos < len(p.src) {
			ch := p.src[p.pos]
			if ch == '\\' && p.pos+1 < len(p.src) {
				b.WriteByte(p.src[p.pos+1])
				p.pos += 2
				continue
			}
			if ch == q {
				p.pos++
				return b.String(), nil
			}
			b.WriteByte(ch)
			p.pos++
		}
		p.pos = open
		return nil, p.errf("unterminated string in Literal")
	}
	start := p.pos
	for p.pos < len(p.src) && strings.IndexByte(",] ", p.src[p.pos]) < 0 {
		p.pos++
	}
	word := p.src[start:p.pos]
	if v, ok := py.Keyword(word); ok {
		return v, nil
	}
	if i, err := strconv.ParseInt(word, 10, 64); err == nil {
		return i, nil
	}
	p.pos = start
	return nil, p.errf("Literal values must be quoted strings, ints, True, False or None, found %q", word)
}
