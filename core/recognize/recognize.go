// Package recognize reads a recorded chat request back into what DSPy formatted it from.
// A request written by DSPy 3.3.1's ChatAdapter or JSONAdapter (as core/adapter writes them)
// is parsed into its signature (instructions; input and output fields with types,
// descriptions and constraints), demos, inputs and conversation history, and a completion
// into typed outputs. Every recognised request is formatted again and compared with the
// recorded messages, so a caller knows whether what was recovered is exactly what was sent
// (Exact) or only close to it (Mismatch says where). Requests in no known format come back
// with Adapter "" and the reason.
//
// The package is pure: no I/O, deterministic, safe for concurrent use.
package recognize

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

// The adapters a request can be recognised as (the names trace.Call.Adapter uses).
const (
	AdapterChat = "chat"
	AdapterJSON = "json"
)

// Request is a recorded request understood as DSPy formatted it.
type Request struct {
	// Adapter is AdapterChat or AdapterJSON; "" when the request is in no known format.
	Adapter string
	// Reason says why the request was not recognised (Adapter "").
	Reason string
	// Signature is the full signature, with its history field when it declares one.
	Signature *sig.Signature
	// Demos are the few-shot examples, in the order DSPy writes them (incomplete ones first).
	Demos []*sig.Map
	// Inputs are the current input values, without the history field.
	Inputs *sig.Map
	// History is what the history field held (empty when the signature has none).
	History sig.History
	// Exact reports that formatting Signature, Demos, Inputs and History with the adapter
	// gives back the recorded messages byte for byte.
	Exact bool
	// Mismatch says where the re-formatted request differs from the recorded one.
	Mismatch string
}

// Parse recognises msgs. It never fails: an unknown format is a Request with Adapter ""
// and Reason set.
func Parse(msgs []lm.Message) *Request {
	r, err := parse(msgs)
	if err != nil {
		return &Request{Reason: err.Error()}
	}
	r.Mismatch = Compare(msgs, r.reformat())
	r.Exact = r.Mismatch == ""
	return r
}

// Formatter is the adapter that wrote the request (nil when it was not recognised).
func (r *Request) Formatter() adapter.Adapter {
	switch r.Adapter {
	case AdapterChat:
		return adapter.Chat{}
	case AdapterJSON:
		return adapter.JSON{}
	}
	return nil
}

// FormatInputs are the inputs as the adapter takes them: Inputs plus the history field.
func (r *Request) FormatInputs() *sig.Map {
	in := r.Inputs.Clone()
	if in == nil {
		in = sig.NewMap()
	}
	if hf := r.Signature.HistoryField(); hf != "" {
		in.Set(hf, r.History)
	}
	return in
}

// Outputs parses a completion of this request into typed output values, as the adapter
// that wrote the request would (DSPy's parse errors, byte for byte).
func (r *Request) Outputs(completion string) (*sig.Map, error) {
	f := r.Formatter()
	if f == nil {
		return nil, fmt.Errorf("the request is in no known format: %s", r.Reason)
	}
	return f.Parse(r.Signature, completion)
}

func (r *Request) reformat() []lm.Message {
	msgs, err := r.Formatter().Format(adapter.Request{Signature: r.Signature, Demos: r.Demos, Inputs: r.FormatInputs()})
	if err != nil {
		return nil
	}
	return msgs
}

// Compare describes the first difference between two message lists ("" when they are
// identical): which message, and where in it, with a little of both texts.
func Compare(want, got []lm.Message) string {
	for i := 0; i < len(want) && i < len(got); i++ {
		if want[i].Role != got[i].Role {
			return fmt.Sprintf("message %d is %q in the recording, %q re-formatted", i+1, want[i].Role, got[i].Role)
		}
		if w, g := want[i].Content, got[i].Content; w != g {
			at := commonPrefix(w, g)
			return fmt.Sprintf("message %d (%s) differs at byte %d: recorded %s, re-formatted %s",
				i+1, want[i].Role, at, excerpt(w, at), excerpt(g, at))
		}
	}
	if len(want) != len(got) {
		return fmt.Sprintf("the recording has %d messages, re-formatted %d", len(want), len(got))
	}
	return ""
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	for n > 0 && !utf8.RuneStart(a[n]) { // report a whole character
		n--
	}
	return n
}

// excerpt quotes up to 24 bytes of s from at ("end of text" past its end).
func excerpt(s string, at int) string {
	if at >= len(s) {
		return "end of text"
	}
	end := min(at+24, len(s))
	for end < len(s) && !utf8.RuneStart(s[end]) {
		end++
	}
	q := fmt.Sprintf("%q", s[at:end])
	if end < len(s) {
		q += "…"
	}
	return q
}

func parse(msgs []lm.Message) (*Request, error) {
	if len(msgs) < 2 {
		return nil, fmt.Errorf("a DSPy request has a system message and a user message; this one has %d message(s)", len(msgs))
	}
	if msgs[0].Role != "system" {
		return nil, fmt.Errorf("message 1 is %q, not the system message DSPy's adapters write", msgs[0].Role)
	}
	last := msgs[len(msgs)-1]
	if last.Role != "user" {
		return nil, fmt.Errorf("the last message is %q, not the user message DSPy's adapters end with", last.Role)
	}
	s, name, err := parseSystem(msgs[0].Content)
	if err != nil {
		return nil, fmt.Errorf("system message: %w", err)
	}
	r := &Request{Adapter: name, Signature: s}
	st := styleOf(name)
	turnSig := s
	hf := s.HistoryField()
	if hf != "" {
		turnSig = s.WithoutInput(hf)
	}
	if r.Inputs, err = parseMain(st, turnSig, last.Content); err != nil {
		return nil, fmt.Errorf("message %d (the current request): %w", len(msgs), err)
	}
	if err := r.parseMiddle(st, msgs[1:len(msgs)-1], turnSig); err != nil {
		return nil, err
	}
	return r, nil
}

// parseMiddle reads the demos and history turns between the system message and the final
// user message (§6, §7 of the wire rules): incomplete demos carry DSPy's prefix, complete
// ones carry every field (the history field too, when the signature has one), and what
// follows is history, where a turn whose inputs were all missing has no user message.
func (r *Request) parseMiddle(st style, mid []lm.Message, turnSig *sig.Signature) error {
	s := r.Signature
	hf := s.HistoryField()
	demos := true
	for i := 0; i < len(mid); {
		m := mid[i]
		pos := i + 2 // 1-based position in the whole request
		paired := m.Role == "user" && i+1 < len(mid) && mid[i+1].Role == "assistant"
		if demos && paired {
			prefix := ""
			if strings.HasPrefix(m.Content, adapter.IncompleteDemoPrefix) {
				prefix = adapter.IncompleteDemoPrefix
			}
			if prefix != "" || hf == "" || hasSection(m.Content, hf) {
				d, err := parseDemo(st, s, prefix, m.Content, mid[i+1].Content)
				if err != nil {
					return fmt.Errorf("messages %d-%d (a demo): %w", pos, pos+1, err)
				}
				r.Demos = append(r.Demos, d)
				i += 2
				continue
			}
		}
		demos = false
		if hf == "" {
			return fmt.Errorf("message %d (%s) is neither a demo nor history (the signature has no History field)", pos, m.Role)
		}
		entry := sig.NewMap()
		if m.Role == "user" {
			in, err := parseSections(turnSig.Inputs, m.Content)
			if err != nil {
				return fmt.Errorf("message %d (a history turn): %w", pos, err)
			}
			in.Range(func(k string, v any) bool { entry.Set(k, v); return true })
			i++
			if i == len(mid) || mid[i].Role != "assistant" {
				return fmt.Errorf("message %d (a history turn's user message) is not followed by an assistant message", pos)
			}
			m, pos = mid[i], pos+1
		}
		if m.Role != "assistant" {
			return fmt.Errorf("message %d is %q where DSPy writes user and assistant turns", pos, m.Role)
		}
		out, err := st.parseAssistant(turnSig, m.Content)
		if err != nil {
			return fmt.Errorf("message %d (a history turn's reply): %w", pos, err)
		}
		out.Range(func(k string, v any) bool { entry.Set(k, v); return true })
		r.History.Messages = append(r.History.Messages, entry)
		i++
	}
	return nil
}

// parseDemo reads one demo's user and assistant messages; an incomplete demo's missing
// outputs (written as DSPy's "Not supplied" text) are left out.
func parseDemo(st style, s *sig.Signature, prefix, user, asst string) (*sig.Map, error) {
	body := user
	if prefix != "" {
		body = strings.TrimPrefix(strings.TrimPrefix(user, prefix), "\n\n")
	}
	d, err := parseSections(s.Inputs, body)
	if err != nil {
		return nil, err
	}
	out, err := st.parseAssistant(s, asst)
	if err != nil {
		return nil, err
	}
	out.Range(func(k string, v any) bool {
		if t, ok := v.(string); !(prefix != "" && ok && py.RStrip(t) == py.RStrip(adapter.NotSupplied)) {
			d.Set(k, v)
		}
		return true
	})
	return d, nil
}

// parseMain reads the final user message: input sections, then the requirements line.
func parseMain(st style, turnSig *sig.Signature, content string) (*sig.Map, error) {
	req := st.requirements(turnSig)
	if content == req {
		return sig.NewMap(), nil
	}
	body, ok := strings.CutSuffix(content, "\n\n"+req)
	if !ok {
		return nil, fmt.Errorf("it does not end with the %s requirements line for outputs %s", st.label(), fieldNames(turnSig.Outputs))
	}
	return parseSections(turnSig.Inputs, body)
}

func fieldNames(fs []sig.Field) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}
