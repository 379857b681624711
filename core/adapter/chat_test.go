package adapter

import (
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
)

func field(name, typ, desc string) sig.Field {
	return sig.Field{Name: name, Type: sig.MustType(typ), Desc: desc}
}

func TestTypeNamesInDescriptions(t *testing.T) {
	cases := []struct{ typ, want string }{
		{"str", "str"},
		{"Optional[int]", "Union[int, NoneType]"},
		{"Union[int, str, None]", "Union[int, str, NoneType]"},
		{"str | None", "UnionType[str, NoneType]"},
		{"Literal['low', 'high']", "Literal['low', 'high']"},
		{`Literal["it's"]`, `Literal["it's"]`},
		{`Literal['a\'b"c']`, `Literal['a\'b"c']`},
		{"Literal[1, True, None]", "Literal[1, True, None]"},
		{"dict[str, list[int]]", "dict[str, list[int]]"},
		{"History", "History"},
	}
	for _, c := range cases {
		s := sig.New("S", "x", []sig.Field{field("a", c.typ, "")}, []sig.Field{field("b", "str", "")})
		want := "Your input fields are:\n1. `a` (" + c.want + "):\nYour output fields are:\n1. `b` (str):"
		if got := FieldDescriptions(s); got != want {
			t.Errorf("%s:\n got %q\nwant %q", c.typ, got, want)
		}
	}
}

func TestFieldDescriptionsTrailingSpacesAndConstraints(t *testing.T) {
	in := []sig.Field{field("q", "str", ""), field("n", "int", "${n}"), field("last", "str", "")}
	out := []sig.Field{
		{Name: "r", Type: sig.TInt, Desc: "rating", Constraints: sig.NewMap("ge", 1, "le", 5)},
		{Name: "s", Type: sig.TStr, Constraints: sig.NewMap("max_length", 500)},
	}
	got := FieldDescriptions(sig.New("S", "x", in, out))
	want := "Your input fields are:\n1. `q` (str): \n2. `n` (int): \n3. `last` (str):\n" +
		"Your output fields are:\n1. `r` (int): rating\nConstraints: greater than or equal to: 1, less than or equal to: 5\n" +
		"2. `s` (str): \nConstraints: maximum length: 500"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestTypeNotes(t *testing.T) {
	cases := []struct{ typ, want string }{
		{"str", "{o}"},
		{"bool", "{o}        # note: the value you produce must be True or False"},
		{"int", "{o}        # note: the value you produce must be a single int value"},
		{"float", "{o}        # note: the value you produce must be a single float value"},
		{"Literal['a', 'b c']", "{o}        # note: the value you produce must exactly match (no extra characters) one of: a; b c"},
		{"list[str]", `{o}        # note: the value you produce must adhere to the JSON schema: {"type": "array", "items": {"type": "string"}}`},
		{"dict[str, int]", `{o}        # note: the value you produce must adhere to the JSON schema: {"type": "object", "additionalProperties": {"type": "integer"}}`},
		{"Optional[int]", `{o}        # note: the value you produce must adhere to the JSON schema: {"anyOf": [{"type": "integer"}, {"type": "null"}]}`},
	}
	for _, c := range cases {
		if got := Placeholder(field("o", c.typ, ""), true); got != c.want {
			t.Errorf("%s: got %q, want %q", c.typ, got, c.want)
		}
		if got := Placeholder(field("o", c.typ, ""), false); got != "{o}" {
			t.Errorf("%s input: got %q, want no note", c.typ, got)
		}
	}
}

func TestTaskDescription(t *testing.T) {
	cases := []struct{ instr, want string }{
		{"Classify the customer's intent.", "In adhering to this structure, your objective is: \n        Classify the customer's intent."},
		{"First line.\n    Indented second.\n\n    Third.\n", "In adhering to this structure, your objective is: \n        First line.\n        Indented second.\n        \n        Third."},
		{"\n\n   Lead.\n     deeper\n   back\n\n", "In adhering to this structure, your objective is: \n        Lead.\n          deeper\n        back"},
		{"a\tb", "In adhering to this structure, your objective is: \n        a       b"},
		{"x\r\ny", "In adhering to this structure, your objective is: \n        x\n        y"},
	}
	for _, c := range cases {
		s := &sig.Signature{Instructions: c.instr}
		if got := TaskDescription(s); got != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.instr, got, c.want)
		}
	}
}

func TestDefaultInstructionsHistoryAppended(t *testing.T) {
	base := sig.New("", "", []sig.Field{field("text", "str", "")}, []sig.Field{field("corrected", "str", "")})
	appended := base.AppendInput(sig.Field{Name: "history", Type: sig.THistory, Desc: "Conversation history"})
	if got := TaskDescription(appended); !strings.HasSuffix(got, "Given the fields `text`, produce the fields `corrected`.") {
		t.Errorf("appended history must not be mentioned: %q", got)
	}
	declared := sig.New("", "", []sig.Field{field("text", "str", ""), field("history", "History", "")}, []sig.Field{field("corrected", "str", "")})
	if got := TaskDescription(declared); !strings.HasSuffix(got, "Given the fields `text`, `history`, produce the fields `corrected`.") {
		t.Errorf("declared history must be mentioned: %q", got)
	}
}

func TestFormatFieldValue(t *testing.T) {
	str, lst, intF := field("f", "str", ""), field("f", "list[str]", ""), field("f", "int", "")
	cases := []struct {
		name string
		f    sig.Field
		v    any
		want string
	}{
		{"string verbatim", str, "a [[ ## x ## ]] b\n", "a [[ ## x ## ]] b\n"},
		{"none", str, nil, "None"},
		{"true", intF, true, "True"},
		{"false", str, false, "False"},
		{"int", intF, int64(3), "3"},
		{"float 2.0", intF, 2.0, "2.0"},
		{"float 1e-05", str, 1e-05, "1e-05"},
		{"float 1e16", str, 1e16, "1e+16"},
		{"float 0.5", str, 0.5, "0.5"},
		{"string in int field", intF, "4", "4"},
		{"list in list field is JSON", lst, []any{"a", "b"}, `["a", "b"]`},
		{"dict", str, sig.NewMap("x", int64(1), "y", "ü"), `{"x": 1, "y": "ü"}`},
		{"empty list non-str", lst, []any{}, "[]"},
		{"empty dict", str, sig.NewMap(), "{}"},
		{"empty list in str field", str, []any{}, "N/A"},
		{"one element", str, []any{"x"}, "«x»"},
		{"numbered", str, []any{"a", "b c"}, "[1] «a»\n[2] «b c»"},
		{"block form", str, []any{"multi\nline", "has » mark"}, "[1] «««\n    multi\n    line\n»»»\n[2] «««\n    has » mark\n»»»"},
		{"non-string element", str, []any{int64(1), "x"}, "[1] «1»\n[2] «x»"},
		{"go slice", str, []string{"a", "b"}, "[1] «a»\n[2] «b»"},
		{"history", str, sig.History{Messages: []*sig.Map{sig.NewMap("q", "hi")}}, `{"messages": [{"q": "hi"}]}`},
	}
	for _, c := range cases {
		if got := FormatFieldValue(c.f, c.v); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestUserContent(t *testing.T) {
	s := sig.New("S", "x", []sig.Field{field("a", "str", ""), field("b", "str", "")}, []sig.Field{field("r", "str", ""), field("n", "int", "")})
	cases := []struct {
		name   string
		values *sig.Map
		main   bool
		want   string
	}{
		{"absent key skipped", sig.NewMap("b", "x"), false, "[[ ## b ## ]]\nx"},
		{"none rendered", sig.NewMap("a", nil), false, "[[ ## a ## ]]\nNone"},
		{"extra keys ignored", sig.NewMap("zz", 1, "a", "y"), false, "[[ ## a ## ]]\ny"},
		{"trailing whitespace lost when last", sig.NewMap("a", "  lead\n\n"), false, "[[ ## a ## ]]\n  lead"},
		{"nothing present", sig.NewMap(), false, ""},
		{"trailing newline kept before requirements", sig.NewMap("a", "ctx\n"), true,
			"[[ ## a ## ]]\nctx\n\n\nRespond with the corresponding output fields, starting with the field `[[ ## r ## ]]`, then `[[ ## n ## ]]` (must be formatted as a valid Python int), and then ending with the marker for `[[ ## completed ## ]]`."},
	}
	for _, c := range cases {
		if got := UserContent(s, c.values, "", c.main); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
	one := sig.New("S", "x", nil, []sig.Field{field("reply", "str", "")})
	if got, want := OutputRequirements(one), "Respond with the corresponding output fields, starting with the field `[[ ## reply ## ]]`, and then ending with the marker for `[[ ## completed ## ]]`."; got != want {
		t.Errorf("single output: got %q", got)
	}
}

func TestAssistantContent(t *testing.T) {
	s := sig.New("S", "x", []sig.Field{field("q", "str", "")}, []sig.Field{field("a", "str", ""), field("b", "list[str]", ""), field("c", "str", "")})
	cases := []struct {
		name    string
		values  *sig.Map
		missing any
		want    string
	}{
		{"all present", sig.NewMap("a", "x", "b", []any{"p"}, "c", []any{"one"}), nil, "[[ ## a ## ]]\nx\n\n[[ ## b ## ]]\n[\"p\"]\n\n[[ ## c ## ]]\n«one»\n\n[[ ## completed ## ]]\n"},
		{"missing is None", sig.NewMap("b", []any{}), nil, "[[ ## a ## ]]\nNone\n\n[[ ## b ## ]]\n[]\n\n[[ ## c ## ]]\nNone\n\n[[ ## completed ## ]]\n"},
		{"not supplied keeps space unless last", sig.NewMap("b", []any{}), NotSupplied,
			"[[ ## a ## ]]\nNot supplied for this particular example. \n\n[[ ## b ## ]]\n[]\n\n[[ ## c ## ]]\nNot supplied for this particular example.\n\n[[ ## completed ## ]]\n"},
		{"trailing newline of last value stripped", sig.NewMap("a", "x", "b", nil, "c", "end\n\n"), nil, "[[ ## a ## ]]\nx\n\n[[ ## b ## ]]\nNone\n\n[[ ## c ## ]]\nend\n\n[[ ## completed ## ]]\n"},
	}
	for _, c := range cases {
		if got := AssistantContent(s, c.values, c.missing); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

func roles(msgs []lm.Message) string {
	r := make([]string, len(msgs))
	for i, m := range msgs {
		r[i] = m.Role
	}
	return strings.Join(r, ",")
}

func TestDemos(t *testing.T) {
	s := sig.New("S", "Do it.", []sig.Field{field("q", "str", "")}, []sig.Field{field("a", "str", ""), field("b", "str", "")})
	demos := []*sig.Map{
		sig.NewMap("q", "cq", "a", "ca", "b", "cb"), // complete
		sig.NewMap("q", "iq", "a", "ia"),            // incomplete, kept
		sig.NewMap("q", "only input"),               // dropped: no output
		sig.NewMap("a", "only output", "b", "x"),    // dropped: no input
		sig.NewMap("q", "nq", "a", nil, "b", "nb"),  // None makes it incomplete
	}
	msgs, err := Chat{}.Format(Request{Signature: s, Demos: demos, Inputs: sig.NewMap("q", "now")})
	if err != nil {
		t.Fatal(err)
	}
	if got := roles(msgs); got != "system,user,assistant,user,assistant,user,assistant,user" {
		t.Fatalf("roles %s", got)
	}
	want := []lm.Message{
		{Role: "user", Content: IncompleteDemoPrefix + "\n\n[[ ## q ## ]]\niq"},
		{Role: "assistant", Content: "[[ ## a ## ]]\nia\n\n[[ ## b ## ]]\nNot supplied for this particular example.\n\n[[ ## completed ## ]]\n"},
		{Role: "user", Content: IncompleteDemoPrefix + "\n\n[[ ## q ## ]]\nnq"},
		{Role: "assistant", Content: "[[ ## a ## ]]\nNone\n\n[[ ## b ## ]]\nnb\n\n[[ ## completed ## ]]\n"},
		{Role: "user", Content: "[[ ## q ## ]]\ncq"},
		{Role: "assistant", Content: "[[ ## a ## ]]\nca\n\n[[ ## b ## ]]\ncb\n\n[[ ## completed ## ]]\n"},
	}
	compareMessages(t, msgs[1:7], want)

	// With a history field every ordinary demo is incomplete, and the demo's user message
	// uses the full signature.
	hs := s.AppendInput(sig.Field{Name: "history", Type: sig.THistory})
	msgs, err = Chat{}.Format(Request{Signature: hs, Demos: demos[:1], Inputs: sig.NewMap("q", "now")})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(msgs[1].Content, IncompleteDemoPrefix) {
		t.Errorf("demo with a history signature should be incomplete: %q", msgs[1].Content)
	}
}

func TestHistoryExpansion(t *testing.T) {
	s := sig.New("S", "Translate.", []sig.Field{field("text", "str", ""), field("lang", "str", "")}, []sig.Field{field("out", "str", "")}).
		AppendInput(sig.Field{Name: "history", Type: sig.THistory, Desc: "Conversation history"})
	format := func(in *sig.Map) []lm.Message {
		t.Helper()
		msgs, err := Chat{}.Format(Request{Signature: s, Inputs: in})
		if err != nil {
			t.Fatal(err)
		}
		return msgs
	}
	absent := format(sig.NewMap("text", "hi", "lang", "fr"))
	empty := format(sig.NewMap("text", "hi", "lang", "fr", "history", sig.History{}))
	null := format(sig.NewMap("text", "hi", "lang", "fr", "history", nil))
	asMap := format(sig.NewMap("text", "hi", "lang", "fr", "history", sig.NewMap("messages", []any{})))
	if len(absent) != 2 {
		t.Fatalf("absent history: %d messages", len(absent))
	}
	for name, m := range map[string][]lm.Message{"empty": empty, "null": null, "map": asMap} {
		compareMessages(t, m, absent)
		_ = name
	}
	if !strings.Contains(absent[0].Content, "[[ ## history ## ]]\n{history}") {
		t.Error("history field must appear in the system message")
	}
	if strings.Contains(absent[1].Content, "history") {
		t.Errorf("final user message must not mention history: %q", absent[1].Content)
	}

	h := sig.History{Messages: []*sig.Map{
		sig.NewMap("text", "a", "lang", "de", "out", "A"),  // full turn
		sig.NewMap("lang", "es", "history", "ignored"),     // missing input omitted, missing output None
		sig.NewMap("other", "x", "out", "only output"),     // no inputs: user message dropped
		sig.NewMap("text", nil, "lang", "it", "out", nil),  // None rendered
		sig.NewMap("text", "trailing  \n", "out", "B  \n"), // message-level strip only
	}}
	msgs := format(sig.NewMap("text", "hi", "lang", "fr", "history", h))
	if got := roles(msgs); got != "system,user,assistant,user,assistant,assistant,user,assistant,user,assistant,user" {
		t.Fatalf("roles %s", got)
	}
	want := []lm.Message{
		{Role: "user", Content: "[[ ## text ## ]]\na\n\n[[ ## lang ## ]]\nde"},
		{Role: "assistant", Content: "[[ ## out ## ]]\nA\n\n[[ ## completed ## ]]\n"},
		{Role: "user", Content: "[[ ## lang ## ]]\nes"},
		{Role: "assistant", Content: "[[ ## out ## ]]\nNone\n\n[[ ## completed ## ]]\n"},
		{Role: "assistant", Content: "[[ ## out ## ]]\nonly output\n\n[[ ## completed ## ]]\n"},
		{Role: "user", Content: "[[ ## text ## ]]\nNone\n\n[[ ## lang ## ]]\nit"},
		{Role: "assistant", Content: "[[ ## out ## ]]\nNone\n\n[[ ## completed ## ]]\n"},
		{Role: "user", Content: "[[ ## text ## ]]\ntrailing"},
		{Role: "assistant", Content: "[[ ## out ## ]]\nB\n\n[[ ## completed ## ]]\n"},
	}
	compareMessages(t, msgs[1:10], want)

	if _, err := (Chat{}).Format(Request{Signature: s, Inputs: sig.NewMap("history", "not a history")}); err == nil {
		t.Error("a string history should be an error")
	}
}

func TestSystemMessageNoTrailingNewline(t *testing.T) {
	s := sig.New("S", "", nil, []sig.Field{field("x", "bool", "")})
	got := SystemMessage(s)
	want := "Your input fields are:\n\nYour output fields are:\n1. `x` (bool):\n" +
		"All interactions will be structured in the following way, with the appropriate values filled in.\n\n\n\n" +
		"[[ ## x ## ]]\n{x}        # note: the value you produce must be True or False\n\n[[ ## completed ## ]]\n" +
		"In adhering to this structure, your objective is: \n        Given the fields , produce the fields `x`."
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestChatStreamField(t *testing.T) {
	s := sig.New("S", "x", []sig.Field{field("q", "str", "")}, []sig.Field{field("reasoning", "str", ""), field("answer", "str", "")})
	cases := []struct{ partial, want string }{
		{"", ""},
		{"Sure, here", ""},
		{"[[ ## reason", ""},
		{"[[ ## reasoning ## ]]", "reasoning"},
		{"[[ ## reasoning ## ]]\nstep 1\n[[ ## q ## ]]\n", "reasoning"},
		{"[[ ## reasoning ## ]]\nstep\n\n[[ ## answer ## ]]\n4", "answer"},
		{"[[ ## reasoning ## ]]\nstep\n\n[[ ## answer ## ]]\n4\n\n[[ ## completed ## ]]", ""},
	}
	for _, c := range cases {
		if got := (Chat{}).StreamField(s, c.partial); got != c.want {
			t.Errorf("%q: got %q, want %q", c.partial, got, c.want)
		}
	}
}
