package sig

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/sessionbench/sessionbench/core/py"
)

// Constraint keys DSPy translates into a "Constraints:" line, in the order it writes them.
var constraintOrder = []struct{ key, text string }{
	{"min_length", "minimum length"},
	{"max_length", "maximum length"},
	{"gt", "greater than"},
	{"ge", "greater than or equal to"},
	{"lt", "less than"},
	{"le", "less than or equal to"},
}

// Field is one input or output of a signature.
type Field struct {
	Name        string
	Desc        string
	Type        *Type
	Constraints *Map // pydantic constraints by key (max_length, ge, ...); nil when none
}

// ConstraintText is DSPy's human-readable constraint line ("" when there are none).
func (f Field) ConstraintText() string {
	var parts []string
	for _, c := range constraintOrder {
		if v, ok := f.Constraints.Get(c.key); ok {
			parts = append(parts, c.text+": "+py.Text(v))
		}
	}
	return strings.Join(parts, ", ")
}

// ParseConstraintText reads a ConstraintText line back into constraints ("maximum length:
// 3, greater than or equal to: 1" -> max_length 3, ge 1); ok is false when the text is not
// one ConstraintText writes (unknown wording, order or value).
func ParseConstraintText(text string) (m *Map, ok bool) {
	m = NewMap()
	next := 0
	for _, part := range strings.Split(text, ", ") {
		label, val, found := strings.Cut(part, ": ")
		if !found {
			return nil, false
		}
		for next < len(constraintOrder) && constraintOrder[next].text != label {
			next++
		}
		if next == len(constraintOrder) {
			return nil, false
		}
		v := numberValue(val)
		if _, isNum := v.(json.Number); isNum || py.Text(v) != val {
			return nil, false
		}
		m.Set(constraintOrder[next].key, v)
		next++
	}
	return m, true
}

// CheckConstraints reports an unknown constraint key.
func (f Field) CheckConstraints() error {
	for _, k := range f.Constraints.Keys() {
		known := false
		for _, c := range constraintOrder {
			known = known || c.key == k
		}
		if !known {
			return fmt.Errorf("field %q: unknown constraint %q (known: min_length, max_length, gt, ge, lt, le)", f.Name, k)
		}
	}
	return nil
}

// Signature is DSPy's Signature: instructions plus ordered input and output fields.
type Signature struct {
	Name         string // class name, e.g. ClassifyIntent; "StringSignature" for parsed strings
	Instructions string
	Inputs       []Field
	Outputs      []Field
}

// DefaultInstructions is DSPy's "Given the fields `a`, `b`, produce the fields `c`."
func DefaultInstructions(inputs, outputs []Field) string {
	q := func(fs []Field) string {
		parts := make([]string, len(fs))
		for i, f := range fs {
			parts[i] = "`" + f.Name + "`"
		}
		return strings.Join(parts, ", ")
	}
	return "Given the fields " + q(inputs) + ", produce the fields " + q(outputs) + "."
}

// New builds a signature; empty instructions become DSPy's default, computed now, before
// any history field is appended (so an appended field is not mentioned, as in DSPy).
func New(name, instructions string, inputs, outputs []Field) *Signature {
	for i := range inputs {
		if inputs[i].Type == nil {
			inputs[i].Type = TStr
		}
	}
	for i := range outputs {
		if outputs[i].Type == nil {
			outputs[i].Type = TStr
		}
	}
	if instructions == "" {
		instructions = DefaultInstructions(inputs, outputs)
	}
	if name == "" {
		name = "StringSignature"
	}
	return &Signature{Name: name, Instructions: instructions, Inputs: inputs, Outputs: outputs}
}

// Input returns the input field called name.
func (s *Signature) Input(name string) (Field, bool) {
	for _, f := range s.Inputs {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// Output returns the output field called name.
func (s *Signature) Output(name string) (Field, bool) {
	for _, f := range s.Outputs {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// HistoryField is the name of the first History-typed input ("" when there is none),
// the field DSPy's adapters expand into conversation turns.
func (s *Signature) HistoryField() string {
	for _, f := range s.Inputs {
		if f.Type.IsHistory() {
			return f.Name
		}
	}
	return ""
}

// WithoutInput returns a copy without the named input field.
func (s *Signature) WithoutInput(name string) *Signature {
	c := s.Clone()
	c.Inputs = c.Inputs[:0:0]
	for _, f := range s.Inputs {
		if f.Name != name {
			c.Inputs = append(c.Inputs, f)
		}
	}
	return c
}

// AppendInput returns a copy with f appended LAST, instructions unchanged (DSPy's
// Signature.append, which is how dspy-session adds its history field).
func (s *Signature) AppendInput(f Field) *Signature {
	c := s.Clone()
	if f.Type == nil {
		f.Type = TStr
	}
	c.Inputs = append(c.Inputs, f)
	return c
}

// PrependOutput returns a copy with f as the first output (ChainOfThought's reasoning).
func (s *Signature) PrependOutput(f Field) *Signature {
	c := s.Clone()
	if f.Type == nil {
		f.Type = TStr
	}
	c.Outputs = append([]Field{f}, c.Outputs...)
	return c
}

// Clone copies the field slices (fields themselves are treated as immutable).
func (s *Signature) Clone() *Signature {
	c := *s
	c.Inputs = append([]Field(nil), s.Inputs...)
	c.Outputs = append([]Field(nil), s.Outputs...)
	return &c
}

// String is the signature in DSPy's string form ("question, history: History -> reply").
func (s *Signature) String() string {
	side := func(fs []Field) string {
		parts := make([]string, len(fs))
		for i, f := range fs {
			parts[i] = f.Name
			if !f.Type.IsStr() {
				parts[i] += ": " + f.Type.String()
			}
		}
		return strings.Join(parts, ", ")
	}
	return side(s.Inputs) + " -> " + side(s.Outputs)
}

// SignatureError is a malformed signature string, with the 1-based column.
type SignatureError struct {
	Text   string
	Column int
	Msg    string
}

func (e *SignatureError) Error() string {
	return fmt.Sprintf("signature %q, column %d: %s", e.Text, e.Column, e.Msg)
}

// Parse reads DSPy's string form: "question, intent -> reply",
// "plan -> is_valid: bool, feedback", "text: str, k: int -> ids: list[int]".
// The instructions are DSPy's default for the parsed fields.
func Parse(text string) (*Signature, error) {
	return ParseWith(text, "")
}

// ParseWith is Parse with explicit instructions ("" for the default).
func ParseWith(text, instructions string) (*Signature, error) {
	arrow := strings.Index(text, "->")
	if arrow < 0 {
		return nil, &SignatureError{text, len(text) + 1, "missing '->' between inputs and outputs"}
	}
	if strings.Contains(text[arrow+2:], "->") {
		return nil, &SignatureError{text, arrow + 3 + strings.Index(text[arrow+2:], "->"), "more than one '->'"}
	}
	ins, inCols, err := parseSide(text, 0, arrow)
	if err != nil {
		return nil, err
	}
	outs, outCols, err := parseSide(text, arrow+2, len(text))
	if err != nil {
		return nil, err
	}
	if len(outs) == 0 {
		return nil, &SignatureError{text, arrow + 3, "no output fields after '->'"}
	}
	seen := map[string]bool{}
	cols := append(inCols, outCols...)
	for i, f := range append(append([]Field(nil), ins...), outs...) {
		if seen[f.Name] {
			return nil, &SignatureError{text, cols[i], fmt.Sprintf("field %q appears twice", f.Name)}
		}
		seen[f.Name] = true
	}
	return New("StringSignature", instructions, ins, outs), nil
}

// parseSide splits text[from:to] on top-level commas into "name" or "name: type" fields,
// returning each field's 1-based column too.
func parseSide(text string, from, to int) ([]Field, []int, error) {
	var fields []Field
	var cols []int
	depth, start := 0, from
	var quote byte
	flush := func(end int) error {
		part := text[start:end]
		if strings.TrimSpace(part) == "" {
			if strings.TrimSpace(text[from:to]) == "" {
				return nil
			}
			return &SignatureError{text, start + 1, "empty field name"}
		}
		f, err := parseField(text, start, part)
		if err != nil {
			return err
		}
		fields = append(fields, f)
		cols = append(cols, start+len(part)-len(strings.TrimLeft(part, " \t"))+1)
		return nil
	}
	for i := from; i < to; i++ {
		c := text[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '[':
			depth++
		case c == ']':
			depth--
			if depth < 0 {
				return nil, nil, &SignatureError{text, i + 1, "unbalanced ']'"}
			}
		case c == ',' && depth == 0:
			if err := flush(i); err != nil {
				return nil, nil, err
			}
			start = i + 1
		}
	}
	if depth != 0 {
		return nil, nil, &SignatureError{text, to + 1, "missing ']'"}
	}
	if err := flush(to); err != nil {
		return nil, nil, err
	}
	return fields, cols, nil
}

func parseField(text string, offset int, part string) (Field, error) {
	name, typ, hasType := strings.Cut(part, ":")
	lead := len(name) - len(strings.TrimLeft(name, " \t"))
	name = strings.TrimSpace(name)
	col := offset + lead + 1
	if name == "" {
		return Field{}, &SignatureError{text, col, "empty field name"}
	}
	for i, r := range name {
		if !(r == '_' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r))) {
			return Field{}, &SignatureError{text, col + i, fmt.Sprintf("%q is not a valid field name", name)}
		}
	}
	f := Field{Name: name, Type: TStr}
	if hasType {
		tcol := offset + len(part) - len(typ) + 1
		ts := strings.TrimSpace(typ)
		tcol += len(typ) - len(strings.TrimLeft(typ, " \t"))
		if ts == "" {
			return Field{}, &SignatureError{text, tcol, fmt.Sprintf("field %q has ':' but no type", name)}
		}
		t, err := ParseType(ts)
		if err != nil {
			te := err.(*TypeError)
			return Field{}, &SignatureError{text, tcol + te.Column - 1, te.Msg}
		}
		f.Type = t
	}
	return f, nil
}
