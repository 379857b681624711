package adapter

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

// ParseValue is DSPy's parse_value for a completion's text: the text of a str field is
// kept as is; a Literal is matched leniently; a union of str and None keeps the text;
// anything else goes through json_repair.loads, then ast.literal_eval, then the raw text,
// and the result is validated the way pydantic's lax mode would.
func ParseValue(t *sig.Type, text string) (any, error) {
	return ConvertValue(t, text)
}

// ConvertValue is parse_value for any decoded value (JSONAdapter hands it JSON values).
func ConvertValue(t *sig.Type, v any) (any, error) {
	if t.IsStr() {
		return py.Str(v), nil
	}
	if t.Kind == sig.KindLiteral {
		return matchLiteral(t, v)
	}
	s, isStr := v.(string)
	if !isStr {
		return Validate(t, v)
	}
	if (t.Kind == sig.KindUnion || t.Kind == sig.KindPipeUnion) && hasArg(t, sig.KindStr) && hasArg(t, sig.KindNone) {
		return Validate(t, s)
	}
	cand := RepairLoads(s)
	if c, ok := cand.(string); ok && c == "" && s != "" {
		if lv, err := py.LiteralEval(s, newDict); err == nil {
			cand = lv
		} else {
			cand = s
		}
	}
	return Validate(t, cand)
}

func hasArg(t *sig.Type, k sig.Kind) bool {
	for _, a := range t.Args {
		if a.Kind == k {
			return true
		}
	}
	return false
}

// newDict makes the dicts py.LiteralEval returns.
func newDict() py.SetDict { return sig.NewMap() }

// matchLiteral follows DSPy: an exact match, then the text with whitespace, a
// Literal[...] / str[...] wrapper and one pair of matching quotes removed.
func matchLiteral(t *sig.Type, v any) (any, error) {
	for _, l := range t.Lits {
		if py.Equal(l, v) {
			return v, nil
		}
	}
	if s, ok := v.(string); ok {
		c := py.Strip(s)
		if (strings.HasPrefix(c, "Literal[") || strings.HasPrefix(c, "str[")) && strings.HasSuffix(c, "]") {
			c = c[strings.Index(c, "[")+1 : len(c)-1]
		}
		if r := []rune(c); len(r) > 1 && r[0] == r[len(r)-1] && (r[0] == '"' || r[0] == '\'') {
			c = string(r[1 : len(r)-1])
		}
		for _, l := range t.Lits {
			if py.Equal(l, c) {
				return c, nil
			}
		}
	}
	return nil, fmt.Errorf("%s is not one of %s", py.Repr(v), py.TupleRepr(t.Lits))
}

// ValidationError is pydantic's ValidationError: every error it found, under the
// annotation's pydantic title.
type ValidationError struct {
	Title  string // pydantic's name of the annotation, e.g. "list[str]", "dict[str,int]"
	Errors []LineError
}

// LineError is one of pydantic's line errors.
type LineError struct {
	Loc   []string // where inside the value, e.g. ["0"] for the first list item
	Msg   string   // e.g. "Input should be a valid integer"
	Kind  string   // pydantic's error type, e.g. "int_parsing"
	Input any
}

// pydanticVersion names the pydantic release whose error pages the messages link to.
const pydanticVersion = "2.13"

// Error is pydantic's text: the count, then per error its location, message and the
// "For further information visit" link; input values longer than 50 bytes are cut as
// pydantic-core cuts them. Past shownErrors errors the rest are counted, not listed
// (pydantic lists them all: a reply of a million bad items would make a message of
// hundreds of megabytes).
func (e *ValidationError) Error() string {
	var b strings.Builder
	plural := "s"
	if len(e.Errors) == 1 {
		plural = ""
	}
	fmt.Fprintf(&b, "%d validation error%s for %s", len(e.Errors), plural, e.Title)
	for i, le := range e.Errors {
		if i == shownErrors {
			fmt.Fprintf(&b, "\n(%d more errors not shown)", len(e.Errors)-shownErrors)
			break
		}
		if len(le.Loc) > 0 {
			b.WriteString("\n" + strings.Join(le.Loc, "."))
		}
		fmt.Fprintf(&b, "\n  %s [type=%s, input_value=%s, input_type=%s]", le.Msg, le.Kind, truncateInput(py.Repr(le.Input)), py.TypeName(le.Input))
		fmt.Fprintf(&b, "\n    For further information visit https://errors.pydantic.dev/%s/v/%s", pydanticVersion, le.Kind)
	}
	return b.String()
}

// shownErrors is how many line errors a ValidationError lists.
const shownErrors = 20

// truncateInput is pydantic-core's truncate_input_value: a repr longer than 50 bytes
// becomes its first 25 bytes, "...", and its last 24, each cut moved off the middle of a
// UTF-8 sequence (the head's end down, the tail's start up).
func truncateInput(r string) string {
	if len(r) <= 50 {
		return r
	}
	head := 25
	for head > 0 && !utf8.RuneStart(r[head]) {
		head--
	}
	tail := len(r) - 24
	for tail < len(r) && !utf8.RuneStart(r[tail]) {
		tail++
	}
	return r[:head] + "..." + r[tail:]
}

// Validate checks and coerces v against t like pydantic's TypeAdapter(t).validate_python
// in lax mode: "yes"/1 -> True, 42.0 -> 42, "3.5" -> 3.5, unions in smart mode. Its error
// reports every failure, as pydantic does.
func Validate(t *sig.Type, v any) (any, error) {
	out, verr := validate(t, v, nil)
	if verr != nil {
		verr.Title = pydanticTitle(t)
		return nil, verr
	}
	return out, nil
}

// pydanticTitle is the name pydantic gives an annotation's validator: list[int],
// dict[str,int], tuple[int, str], nullable[str], union[int,str], literal['a','b'].
func pydanticTitle(t *sig.Type) string {
	join := func(ts []*sig.Type, sep string) string {
		parts := make([]string, len(ts))
		for i, a := range ts {
			parts[i] = pydanticTitle(a)
		}
		return strings.Join(parts, sep)
	}
	switch t.Kind {
	case sig.KindAny:
		return "any"
	case sig.KindNone:
		return "none"
	case sig.KindList, sig.KindSet:
		head := map[sig.Kind]string{sig.KindList: "list", sig.KindSet: "set"}[t.Kind]
		if len(t.Args) == 0 {
			return head + "[any]"
		}
		return head + "[" + join(t.Args, ",") + "]"
	case sig.KindTuple:
		if len(t.Args) == 0 {
			return "tuple[any, ...]"
		}
		return "tuple[" + join(t.Args, ", ") + "]"
	case sig.KindDict:
		if len(t.Args) < 2 {
			return "dict[any,any]"
		}
		return "dict[" + join(t.Args, ",") + "]"
	case sig.KindUnion, sig.KindPipeUnion:
		rest, nullable := unionMembers(t)
		inner := "union[" + join(rest, ",") + "]"
		if len(rest) == 1 {
			inner = pydanticTitle(rest[0])
		}
		if nullable {
			return "nullable[" + inner + "]"
		}
		return inner
	case sig.KindLiteral:
		parts := make([]string, len(t.Lits))
		for i, l := range t.Lits {
			parts[i] = py.Repr(l)
		}
		return "literal[" + strings.Join(parts, ",") + "]"
	}
	return t.Name()
}

// unionMembers splits a union into its members other than None and whether None is one.
func unionMembers(t *sig.Type) (rest []*sig.Type, nullable bool) {
	for _, a := range t.Args {
		if a.Kind == sig.KindNone {
			nullable = true
			continue
		}
		rest = append(rest, a)
	}
	return rest, nullable
}

func fail(loc []string, input any, kind, msg string) *ValidationError {
	return &ValidationError{Errors: []LineError{{Loc: loc, Input: input, Kind: kind, Msg: msg}}}
}

// prefixedAt returns err's line errors with a union member's name put after loc (the
// union's own location) in each location.
func prefixedAt(err *ValidationError, loc []string, member string) []LineError {
	out := make([]LineError, len(err.Errors))
	for i, le := range err.Errors {
		l := append(append(append([]string(nil), loc...), member), le.Loc[len(loc):]...)
		le.Loc = l
		out[i] = le
	}
	return out
}

func validate(t *sig.Type, v any, loc []string) (any, *ValidationError) {
	switch t.Kind {
	case sig.KindAny:
		return v, nil
	case sig.KindNone:
		if v == nil {
			return nil, nil
		}
		return nil, fail(loc, v, "none_required", "Input should be None")
	case sig.KindStr:
		if s, ok := v.(string); ok {
			return s, nil
		}
		return nil, fail(loc, v, "string_type", "Input should be a valid string")
	case sig.KindBool:
		return validateBool(v, loc)
	case sig.KindInt:
		return validateInt(v, loc)
	case sig.KindFloat:
		return validateFloat(v, loc)
	case sig.KindList, sig.KindSet, sig.KindTuple:
		return validateSeq(t, v, loc)
	case sig.KindDict:
		return validateDict(t, v, loc)
	case sig.KindHistory:
		h, err := sig.HistoryFromValue(v)
		if err != nil || v == nil {
			return nil, fail(loc, v, "model_type", "Input should be a valid dictionary or instance of History")
		}
		return h, nil
	case sig.KindLiteral:
		for _, l := range t.Lits {
			if py.Same(l, v) {
				return v, nil
			}
		}
		parts := make([]string, len(t.Lits))
		for i, l := range t.Lits {
			parts[i] = py.Repr(l)
		}
		return nil, fail(loc, v, "literal_error", "Input should be "+joinOr(parts))
	case sig.KindUnion, sig.KindPipeUnion:
		// Smart mode: an exact kind match wins, otherwise the first lax success in order.
		for _, a := range t.Args {
			if exactKind(a, v) {
				if out, err := validate(a, v, loc); err == nil {
					return out, nil
				}
			}
		}
		// Every member failed: pydantic reports each member's errors under its name; an
		// Optional (nullable) reports its one member's errors as they are.
		rest, _ := unionMembers(t)
		all := &ValidationError{}
		for _, a := range t.Args {
			out, err := validate(a, v, loc)
			if err == nil {
				return out, nil
			}
			switch {
			case a.Kind == sig.KindNone:
			case len(rest) == 1:
				all.Errors = append(all.Errors, err.Errors...)
			default:
				all.Errors = append(all.Errors, prefixedAt(err, loc, pydanticTitle(a))...)
			}
		}
		return nil, all
	}
	return nil, fail(loc, v, "unknown_type", "unsupported annotation "+t.Name())
}

func joinOr(parts []string) string {
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}

func exactKind(t *sig.Type, v any) bool {
	switch v.(type) {
	case nil:
		return t.Kind == sig.KindNone
	case string:
		return t.Kind == sig.KindStr
	case bool:
		return t.Kind == sig.KindBool
	case int64, json.Number:
		return t.Kind == sig.KindInt
	case float64:
		return t.Kind == sig.KindFloat
	case []any:
		return t.Kind == sig.KindList || t.Kind == sig.KindTuple || t.Kind == sig.KindSet
	case *sig.Map:
		return t.Kind == sig.KindDict
	}
	return false
}

var boolWords = map[string]bool{
	"0": false, "off": false, "f": false, "false": false, "n": false, "no": false,
	"1": true, "on": true, "t": true, "true": true, "y": true, "yes": true,
}

func validateBool(v any, loc []string) (any, *ValidationError) {
	switch t := v.(type) {
	case bool:
		return t, nil
	case int64:
		if t == 0 || t == 1 {
			return t == 1, nil
		}
		return nil, fail(loc, v, "bool_parsing", "Input should be a valid boolean, unable to interpret input")
	case float64:
		if t == 0 || t == 1 {
			return t == 1, nil
		}
		if t == math.Trunc(t) && math.Abs(t) < 1<<63 { // whole floats in int64 range count as ints here
			return nil, fail(loc, v, "bool_parsing", "Input should be a valid boolean, unable to interpret input")
		}
	case string:
		if b, ok := boolWords[strings.ToLower(t)]; ok {
			return b, nil
		}
		return nil, fail(loc, v, "bool_parsing", "Input should be a valid boolean, unable to interpret input")
	}
	return nil, fail(loc, v, "bool_type", "Input should be a valid boolean")
}

func validateInt(v any, loc []string) (any, *ValidationError) {
	switch t := v.(type) {
	case bool:
		if t {
			return int64(1), nil
		}
		return int64(0), nil
	case int64, json.Number:
		return t, nil
	case float64:
		if math.IsInf(t, 0) || math.IsNaN(t) {
			return nil, fail(loc, v, "finite_number", "Input should be a finite number")
		}
		if t != math.Trunc(t) {
			return nil, fail(loc, v, "int_from_float", "Input should be a valid integer, got a number with a fractional part")
		}
		// pydantic converts floats through a 64-bit integer, so 1e20 is too big even
		// though Python's int could hold it.
		if t >= -(1<<63) && t < 1<<63 {
			return int64(t), nil
		}
		return nil, fail(loc, v, "int_parsing_size", "Unable to parse input string as an integer, exceeded maximum size")
	case string:
		if s, ok := intText(py.Strip(t)); ok {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return n, nil
			}
			return json.Number(strings.TrimPrefix(s, "+")), nil
		}
		return nil, fail(loc, v, "int_parsing", "Input should be a valid integer, unable to parse string as an integer")
	}
	return nil, fail(loc, v, "int_type", "Input should be a valid integer")
}

func validateFloat(v any, loc []string) (any, *ValidationError) {
	switch t := v.(type) {
	case bool:
		if t {
			return 1.0, nil
		}
		return 0.0, nil
	case int64:
		return float64(t), nil
	case json.Number:
		f, _ := t.Float64()
		return f, nil
	case float64:
		return t, nil
	case string:
		s := strings.TrimSpace(t)
		switch strings.ToLower(strings.TrimLeft(s, "+-")) {
		case "inf", "infinity", "nan":
			f, _ := strconv.ParseFloat(s, 64)
			return f, nil
		}
		if digits, ok := dropUnderscores(s); ok && !strings.ContainsAny(s, "xXpP") {
			// A range error still yields ±Inf or 0, as Python's float("1e400") does.
			if f, err := strconv.ParseFloat(digits, 64); err == nil || errors.Is(err, strconv.ErrRange) {
				return f, nil
			}
		}
		return nil, fail(loc, v, "float_parsing", "Input should be a valid number, unable to parse string as a number")
	}
	return nil, fail(loc, v, "float_type", "Input should be a valid number")
}

func validateSeq(t *sig.Type, v any, loc []string) (any, *ValidationError) {
	items, ok := v.([]any)
	if !ok {
		switch t.Kind {
		case sig.KindTuple:
			return nil, fail(loc, v, "tuple_type", "Input should be a valid tuple")
		case sig.KindSet:
			return nil, fail(loc, v, "set_type", "Input should be a valid set")
		}
		return nil, fail(loc, v, "list_type", "Input should be a valid list")
	}
	out := make([]any, 0, len(items))
	if t.Kind == sig.KindTuple && len(t.Args) > 0 {
		if len(items) > len(t.Args) {
			return nil, fail(loc, v, "too_long", fmt.Sprintf("Tuple should have at most %d items after validation, not %d", len(t.Args), len(items)))
		}
		all := &ValidationError{}
		for i, e := range items {
			ev, err := validate(t.Args[i], e, append(loc[:len(loc):len(loc)], strconv.Itoa(i)))
			if err != nil {
				all.Errors = append(all.Errors, err.Errors...)
				continue
			}
			out = append(out, ev)
		}
		if len(items) < len(t.Args) {
			// pydantic reports each missing position as a required field.
			all.Errors = append(all.Errors, fail(append(loc[:len(loc):len(loc)], strconv.Itoa(len(items))), v, "missing", "Field required").Errors...)
		}
		if len(all.Errors) > 0 {
			return nil, all
		}
		return out, nil
	}
	all := &ValidationError{}
	for i, e := range items {
		ev := e
		if len(t.Args) > 0 {
			var err *ValidationError
			ev, err = validate(t.Args[0], e, append(loc[:len(loc):len(loc)], strconv.Itoa(i)))
			if err != nil {
				all.Errors = append(all.Errors, err.Errors...)
				continue
			}
		}
		if t.Kind == sig.KindSet {
			out = py.SetAdd(out, ev)
			continue
		}
		out = append(out, ev)
	}
	if len(all.Errors) > 0 {
		return nil, all
	}
	return out, nil
}

func validateDict(t *sig.Type, v any, loc []string) (any, *ValidationError) {
	var m *sig.Map
	switch x := v.(type) {
	case *sig.Map:
		m = x
	case sig.History:
		return x, nil
	default:
		return nil, fail(loc, v, "dict_type", "Input should be a valid dictionary")
	}
	if len(t.Args) < 2 {
		return m, nil
	}
	out := sig.NewMap()
	all := &ValidationError{}
	m.Range(func(k string, e any) bool {
		kl := append(loc[:len(loc):len(loc)], k)
		if t.Args[0].Kind != sig.KindStr && t.Args[0].Kind != sig.KindAny {
			if _, err := validate(t.Args[0], k, append(kl, "[key]")); err != nil {
				all.Errors = append(all.Errors, err.Errors...)
			}
		}
		ev, err := validate(t.Args[1], e, kl)
		if err != nil {
			all.Errors = append(all.Errors, err.Errors...)
			return true
		}
		out.Set(k, ev)
		return true
	})
	if len(all.Errors) > 0 {
		return nil, all
	}
	return out, nil
}

// intText is the text pydantic accepts as an int (already stripped): an optional sign,
// digits with single underscores between them, and optionally a "." followed only by
// zeros ("42.00" is 42, "42." and ".0" are not ints). It returns the plain digits.
func intText(s string) (string, bool) {
	if i := strings.IndexByte(s, '.'); i >= 0 {
		frac := s[i+1:]
		if frac == "" || strings.Trim(frac, "0") != "" {
			return "", false
		}
		s = s[:i]
	}
	sign := ""
	if s != "" && (s[0] == '+' || s[0] == '-') {
		sign, s = s[:1], s[1:]
	}
	if s == "" || s[0] == '_' || s[len(s)-1] == '_' || strings.Contains(s, "__") {
		return "", false
	}
	s = strings.ReplaceAll(s, "_", "")
	if strings.Trim(s, "0123456789") != "" {
		return "", false
	}
	return sign + s, true
}

// dropUnderscores removes the underscores Python's float() allows (each one between two
// ASCII digits) and reports false for any other underscore.
func dropUnderscores(s string) (string, bool) {
	if !strings.Contains(s, "_") {
		return s, true
	}
	isDigit := func(i int) bool { return i >= 0 && i < len(s) && s[i] >= '0' && s[i] <= '9' }
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '_' {
			if !isDigit(i-1) || !isDigit(i+1) {
				return "", false
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String(), true
}
