package adapter

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sessionbench/sessionbench/core/limits"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

// ParseError is DSPy's AdapterParseError; Error() is DSPy's text, byte for byte, except
// that a response longer than quotedResponse bytes is quoted as its beginning and a byte
// count (limits.Excerpt): the message is shown, logged and stored, the response itself
// is kept whole with the call.
type ParseError struct {
	Adapter  string   // "ChatAdapter" or "JSONAdapter"
	Response string   // the LM response as DSPy quotes it
	Expected []string // the signature's output field names
	// Parsed lists the fields that were parsed, in the order found; nil when DSPy does
	// not print the "Actual output fields" line (conversion failures).
	Parsed []string
	// Message, when set, is printed first (e.g. "Failed to parse field ...").
	Message string
	// Field and Err describe a conversion failure (Err is the ParseValue error).
	Field string
	Err   error
	// Bare marks JSONAdapter conversion failures, which DSPy raises unwrapped: Error()
	// is then Err's text alone.
	Bare bool
}

func (e *ParseError) Error() string {
	if e.Bare && e.Err != nil {
		return e.Err.Error()
	}
	var b strings.Builder
	if e.Message != "" {
		b.WriteString(e.Message + "\n\n")
	}
	b.WriteString("Adapter " + e.Adapter + " failed to parse the LM response. \n\n")
	b.WriteString("LM Response: " + limits.Excerpt(e.Response, quotedResponse) + " \n\n")
	b.WriteString("Expected to find output fields in the LM response: [" + strings.Join(e.Expected, ", ") + "] \n\n")
	if e.Parsed != nil {
		b.WriteString("Actual output fields parsed from the LM response: [" + strings.Join(e.Parsed, ", ") + "] \n\n")
	}
	return b.String()
}

func (e *ParseError) Unwrap() error { return e.Err }

// quotedResponse is how much of a response a parse error quotes.
const quotedResponse = 4 << 10

func outputNames(s *sig.Signature) []string {
	names := make([]string, len(s.Outputs))
	for i, f := range s.Outputs {
		names[i] = f.Name
	}
	return names
}

type section struct {
	name  string // "" for the text before the first header
	lines []string
}

// chatSections splits a completion at "[[ ## name ## ]]" header lines (§8 steps 1-3).
func chatSections(completion string) []section {
	sections := []section{{}}
	for _, line := range py.SplitLines(completion) {
		name, end, ok := matchHeader(py.Strip(line))
		if !ok {
			sections[len(sections)-1].lines = append(sections[len(sections)-1].lines, line)
			continue
		}
		// DSPy slices the remainder out of the UNSTRIPPED line at the offset measured in
		// the stripped one, so an indented header leaks its last characters.
		sec := section{name: name}
		if rest := py.Strip(py.SliceFrom(line, end)); rest != "" {
			sec.lines = []string{rest}
		}
		sections = append(sections, sec)
	}
	return sections
}

// matchHeader matches "[[ ## <word chars> ## ]]" at the start of s, returning the name
// and the match length in runes (Python string offsets count code points).
func matchHeader(s string) (string, int, bool) {
	const open, closeTag = "[[ ## ", " ## ]]"
	if !strings.HasPrefix(s, open) {
		return "", 0, false
	}
	rest := s[len(open):]
	n := 0
	for n < len(rest) {
		r, size := utf8.DecodeRuneInString(rest[n:])
		if !isWordRune(r) {
			break
		}
		n += size
	}
	if n == 0 || !strings.HasPrefix(rest[n:], closeTag) {
		return "", 0, false
	}
	name := rest[:n]
	return name, len(open) + utf8.RuneCountInString(name) + len(closeTag), true
}

// isWordRune is Python's \w for str patterns: alphanumerics and the underscore.
func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)
}

// ParseChat is ChatAdapter.parse (§8): first occurrence of each output section wins, values
// are converted with ParseValue, missing Optional outputs become None, and anything else
// missing is an AdapterParseError. The result is in signature order.
func ParseChat(s *sig.Signature, completion string) (*sig.Map, error) {
	if out, ok := scanChat(s, completion); ok {
		return out, nil
	}
	return parseChatLines(s, completion)
}

// parseChatLines is ParseChat line by line, as DSPy does it: every completion, and the
// errors.
func parseChatLines(s *sig.Signature, completion string) (*sig.Map, error) {
	fields := sig.NewMap()
	for _, sec := range chatSections(completion) {
		if sec.name == "" || fields.Has(sec.name) {
			continue
		}
		f, ok := s.Output(sec.name)
		if !ok {
			continue
		}
		text := py.Strip(strings.Join(sec.lines, "\n"))
		v, err := ParseValue(typ(f), text)
		if err != nil {
			return nil, &ParseError{
				Adapter: "ChatAdapter", Response: completion, Expected: outputNames(s),
				Message: "Failed to parse field " + f.Name + " with value " + limits.Excerpt(text, quotedResponse) +
					" from the LM response. Error message: " + err.Error(),
				Field: f.Name, Err: err,
			}
		}
		fields.Set(f.Name, v)
	}
	return finishParse(s, fields, "ChatAdapter", completion, true)
}

// finishParse fills None for missing Optional outputs (when fill is set), checks that
// every output is present, and orders the result like the signature.
func finishParse(s *sig.Signature, fields *sig.Map, adapter, response string, fill bool) (*sig.Map, error) {
	if fill {
		for _, f := range s.Outputs {
			if !fields.Has(f.Name) && typ(f).AllowsNone() {
				fields.Set(f.Name, nil)
			}
		}
	}
	out := sig.NewMap()
	for _, f := range s.Outputs {
		v, ok := fields.Get(f.Name)
		if !ok {
			parsed := fields.Keys()
			if parsed == nil {
				parsed = []string{}
			}
			return nil, &ParseError{Adapter: adapter, Response: response, Expected: outputNames(s), Parsed: parsed}
		}
		out.Set(f.Name, v)
	}
	return out, nil
}
