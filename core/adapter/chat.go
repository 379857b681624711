package adapter

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

// Chat is DSPy 3.3.1's ChatAdapter: "[[ ## field ## ]]" sections, byte for byte.
type Chat struct{}

var _ Adapter = Chat{}

// Name implements Adapter.
func (Chat) Name() string { return "chat" }

// Format implements Adapter (see docs/wire/chat-adapter-format.md §1-7).
func (Chat) Format(req Request) ([]lm.Message, error) { return formatMessages(chatStyle{}, req) }

// Parse implements Adapter (§8).
func (Chat) Parse(s *sig.Signature, completion string) (*sig.Map, error) {
	return ParseChat(s, completion)
}

// SystemMessage is the ChatAdapter system message for s.
func (Chat) SystemMessage(s *sig.Signature) string { return SystemMessage(s) }

// UserContent is ChatAdapter.format_user_message_content.
func (Chat) UserContent(s *sig.Signature, values *sig.Map, prefix string, mainRequest bool) string {
	return UserContent(s, values, prefix, mainRequest)
}

// AssistantContent is ChatAdapter.format_assistant_message_content.
func (Chat) AssistantContent(s *sig.Signature, values *sig.Map, missing any) string {
	return AssistantContent(s, values, missing)
}

// Texts DSPy writes verbatim.
const (
	IncompleteDemoPrefix = "This is an example of the task, though some input or output fields are not supplied."
	NotSupplied          = "Not supplied for this particular example. "
	completedHeader      = "[[ ## completed ## ]]"
	structureIntro       = "All interactions will be structured in the following way, with the appropriate values filled in."
)

// style is what differs between ChatAdapter and JSONAdapter; the rest of the message
// list is built the same way (JSONAdapter subclasses ChatAdapter in DSPy).
type style interface {
	name() string // the adapter's name: part of a history rendering's key
	fieldStructure(s *sig.Signature) string
	requirements(s *sig.Signature) string
	assistant(s *sig.Signature, values *sig.Map, missing any) string
}

type chatStyle struct{}

func (chatStyle) name() string                           { return "chat" }
func (chatStyle) fieldStructure(s *sig.Signature) string { return FieldStructure(s) }
func (chatStyle) requirements(s *sig.Signature) string   { return OutputRequirements(s) }
func (chatStyle) assistant(s *sig.Signature, v *sig.Map, missing any) string {
	return AssistantContent(s, v, missing)
}

func systemMessage(st style, s *sig.Signature) string {
	return FieldDescriptions(s) + "\n" + st.fieldStructure(s) + "\n" + TaskDescription(s)
}

// formatMessages is Adapter.format: system, demos, history turns, the current request.
// Through a cache it is formatList's messages; without one they are written once, into
// a list sized for them.
func formatMessages(st style, req Request) ([]lm.Message, error) {
	if req.Cache != nil {
		l, err := formatList(st, req)
		return l.Slice(), err
	}
	s, turnSig, h, err := requestHistory(req)
	if err != nil {
		return nil, err
	}
	msgs := make([]lm.Message, 0, 2+2*len(req.Demos)+2*len(h.Messages))
	msgs = append(msgs, lm.Message{Role: "system", Content: systemMessage(st, s)})
	msgs = append(msgs, formatDemos(st, s, req.Demos)...)
	msgs = historyMessages(msgs, st, turnSig, h)
	return append(msgs, lm.Message{Role: "user", Content: userContent(st, turnSig, req.Inputs, "", true)}), nil
}

// formatList is formatMessages as a list sharing what req.Cache keeps: the system
// message and demos, and the history's messages, which the predictor's next request
// shares too (RequestCache.historyList).
func formatList(st style, req Request) (lm.MessageList, error) {
	s, turnSig, h, err := requestHistory(req)
	if err != nil {
		return lm.MessageList{}, err
	}
	return around(st, req, s, turnSig, req.Cache.historyList(st, turnSig, h)), nil
}

// around is req's request with its history's messages hist: the system message and
// demos (shared through req.Cache), hist, and the user message of req's inputs under
// turnSig.
func around(st style, req Request, s, turnSig *sig.Signature, hist lm.MessageList) lm.MessageList {
	head := req.Cache.headOf(st, s, req.Demos)
	user := []lm.Message{{Role: "user", Content: userContent(st, turnSig, req.Inputs, "", true)}}
	return lm.ListOf(head).Concat(hist).Concat(lm.ListOf(user))
}

// requestHistory is req's signature, the signature of its turn (without the history
// field) and its history.
func requestHistory(req Request) (s, turnSig *sig.Signature, h sig.History, err error) {
	s = req.Signature
	if s == nil {
		return nil, nil, h, fmt.Errorf("format: no signature")
	}
	turnSig = s
	if hf := s.HistoryField(); hf != "" {
		turnSig = s.WithoutInput(hf)
		if raw, ok := req.Inputs.Get(hf); ok {
			if h, err = sig.HistoryFromValue(raw); err != nil { // nil is an empty history (ARCHITECTURE.md)
				return nil, nil, h, fmt.Errorf("format: input %q: %w", hf, err)
			}
		}
	}
	return s, turnSig, h, nil
}

// formatDemos emits incomplete demos first, then complete ones (§6).
func formatDemos(st style, s *sig.Signature, demos []*sig.Map) []lm.Message {
	var complete, incomplete []*sig.Map
	for _, d := range demos {
		isComplete, hasIn, hasOut := true, false, false
		for _, f := range s.Inputs {
			v, ok := d.Get(f.Name)
			isComplete = isComplete && ok && v != nil
			hasIn = hasIn || ok
		}
		for _, f := range s.Outputs {
			v, ok := d.Get(f.Name)
			isComplete = isComplete && ok && v != nil
			hasOut = hasOut || ok
		}
		switch {
		case isComplete:
			complete = append(complete, d)
		case hasIn && hasOut:
			incomplete = append(incomplete, d)
		}
	}
	var out []lm.Message
	for _, d := range incomplete {
		out = append(out,
			lm.Message{Role: "user", Content: userContent(st, s, d, IncompleteDemoPrefix, false)},
			lm.Message{Role: "assistant", Content: st.assistant(s, d, NotSupplied)})
	}
	for _, d := range complete {
		out = append(out,
			lm.Message{Role: "user", Content: userContent(st, s, d, "", false)},
			lm.Message{Role: "assistant", Content: st.assistant(s, d, nil)})
	}
	return out
}

// SystemMessage is FIELD_DESCRIPTIONS ⏎ FIELD_STRUCTURE ⏎ OBJECTIVE (§2), no trailing newline.
func SystemMessage(s *sig.Signature) string { return systemMessage(chatStyle{}, s) }

// FieldDescriptions is "Your input fields are: ... Your output fields are: ..." (§2.1).
func FieldDescriptions(s *sig.Signature) string {
	return "Your input fields are:\n" + describeFields(s.Inputs) + "\nYour output fields are:\n" + describeFields(s.Outputs)
}

func describeFields(fs []sig.Field) string {
	var b strings.Builder
	for i, f := range fs {
		if i > 0 {
			b.WriteByte('\n')
		}
		desc := f.Desc
		if desc == "${"+f.Name+"}" {
			desc = "" // DSPy's placeholder for "no description"
		}
		b.WriteString(strconv.Itoa(i+1) + ". `" + f.Name + "` (" + f.Type.Name() + "): " + desc)
		if c := f.ConstraintText(); c != "" {
			b.WriteString("\nConstraints: " + c)
		}
	}
	return py.Strip(b.String())
}

// FieldStructure is ChatAdapter's "All interactions will be structured ..." block (§2.2).
func FieldStructure(s *sig.Signature) string {
	parts := []string{structureIntro, placeholderBlock(s.Inputs, false), placeholderBlock(s.Outputs, true), completedHeader + "\n"}
	return py.Strip(strings.Join(parts, "\n\n"))
}

func placeholderBlock(fs []sig.Field, outputs bool) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = "[[ ## " + f.Name + " ## ]]\n" + Placeholder(f, outputs)
	}
	return py.Strip(strings.Join(parts, "\n\n"))
}

// Placeholder is DSPy's translate_field_type: "{name}", plus the type note for non-str
// output fields ("{ok}        # note: the value you produce must be True or False").
func Placeholder(f sig.Field, output bool) string {
	p := "{" + f.Name + "}"
	if !output {
		return p
	}
	if n := TypeNote(typ(f)); n != "" {
		return p + "        # note: the value you produce " + n
	}
	return p
}

// TypeNote is the hint after "the value you produce" for an output of type t ("" for str).
func TypeNote(t *sig.Type) string {
	switch t.Kind {
	case sig.KindStr:
		return ""
	case sig.KindBool:
		return "must be True or False"
	case sig.KindInt:
		return "must be a single int value"
	case sig.KindFloat:
		return "must be a single float value"
	case sig.KindLiteral:
		vals := make([]string, len(t.Lits))
		for i, l := range t.Lits {
			vals[i] = py.Text(l)
		}
		return "must exactly match (no extra characters) one of: " + strings.Join(vals, "; ")
	}
	return "must adhere to the JSON schema: " + py.JSON(JSONSchema(t))
}

// TaskDescription is "In adhering to this structure, your objective is: " plus each
// instruction line on its own line indented by 8 spaces (§2.3).
func TaskDescription(s *sig.Signature) string {
	var b strings.Builder
	b.WriteString("In adhering to this structure, your objective is: ")
	for _, l := range py.SplitLines(py.Dedent(py.Cleandoc(s.Instructions))) {
		b.WriteString("\n        " + l)
	}
	return b.String()
}

// FormatFieldValue renders a value for a section (§3): a list in a str field becomes a
// «»-numbered list; dicts and lists are Python JSON; other values are Python str().
func FormatFieldValue(f sig.Field, v any) string {
	v = sig.Normalize(v)
	if list, ok := v.([]any); ok && f.Type.IsStr() {
		switch len(list) {
		case 0:
			return "N/A"
		case 1:
			return formatBlob(py.Str(list[0]))
		}
		var b strings.Builder
		for i, e := range list {
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString("[" + strconv.Itoa(i+1) + "] " + formatBlob(py.Str(e)))
		}
		return b.String()
	}
	// Containers go through pydantic's JSON mode first (NaN inside becomes null).
	return py.Text(Jsonable(v))
}

func formatBlob(x string) string {
	if !strings.ContainsAny(x, "\n«»") {
		return "«" + x + "»"
	}
	return "«««\n    " + strings.ReplaceAll(x, "\n", "\n    ") + "\n»»»"
}

// typ is the field's annotation; a field built without one is str, as in DSPy.
func typ(f sig.Field) *sig.Type {
	if f.Type == nil {
		return sig.TStr
	}
	return f.Type
}

// Section is "[[ ## name ## ]]⏎<value>".
func Section(f sig.Field, v any) string {
	return "[[ ## " + f.Name + " ## ]]\n" + FormatFieldValue(f, v)
}

// UserContent is format_user_message_content (§4): the input sections present in values,
// the ChatAdapter requirements line when mainRequest, stripped.
func UserContent(s *sig.Signature, values *sig.Map, prefix string, mainRequest bool) string {
	return userContent(chatStyle{}, s, values, prefix, mainRequest)
}

func userContent(st style, s *sig.Signature, values *sig.Map, prefix string, mainRequest bool) string {
	var b strings.Builder
	b.WriteString(prefix)
	for _, f := range s.Inputs {
		if v, ok := values.Get(f.Name); ok {
			b.WriteString("\n\n" + Section(f, v))
		}
	}
	if mainRequest {
		b.WriteString("\n\n" + st.requirements(s))
	}
	b.WriteString("\n\n")
	return py.Strip(b.String())
}

// OutputRequirements is ChatAdapter's "Respond with the corresponding output fields ..." line.
func OutputRequirements(s *sig.Signature) string {
	items := make([]string, len(s.Outputs))
	for i, f := range s.Outputs {
		items[i] = "`[[ ## " + f.Name + " ## ]]`" + typeInfo(f)
	}
	return "Respond with the corresponding output fields, starting with the field " +
		strings.Join(items, ", then ") + ", and then ending with the marker for `" + completedHeader + "`."
}

func typeInfo(f sig.Field) string {
	if f.Type.IsStr() {
		return ""
	}
	return " (must be formatted as a valid Python " + typ(f).Name() + ")"
}

// AssistantContent is ChatAdapter.format_assistant_message_content (§5): output sections
// (missing ones rendered from the fallback missing: nil renders None), stripped, then
// "⏎⏎[[ ## completed ## ]]⏎".
func AssistantContent(s *sig.Signature, values *sig.Map, missing any) string {
	parts := make([]string, len(s.Outputs))
	for i, f := range s.Outputs {
		v, ok := values.Get(f.Name)
		if !ok {
			v = missing
		}
		parts[i] = Section(f, v)
	}
	return py.Strip(strings.Join(parts, "\n\n")) + "\n\n" + completedHeader + "\n"
}
