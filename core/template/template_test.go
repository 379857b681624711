package template

import (
	"errors"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
)

var qaSig = sig.New("QA", "Answer it.",
	[]sig.Field{{Name: "question"}, {Name: "tags"} /* str: a list value renders as a «» list */, {Name: "history", Type: sig.THistory}},
	[]sig.Field{{Name: "answer", Desc: "The answer"}, {Name: "score", Type: sig.TInt}})

var qaHist = hist(
	sig.NewMap("question", "q1", "answer", "a1"),
	sig.NewMap("question", "q2", "answer", "a2", "score", int64(3)),
	sig.NewMap("answer", "orphan"),  // no input: no user message
	sig.NewMap("question", "alone"), // no output: no assistant message
)

func qaInputs() *sig.Map {
	return sig.NewMap("question", "Why?", "tags", []any{"a", "b"}, "history", qaHist)
}

func doRender(t *testing.T, tpl *Template, req adapter.Request) []lm.Message {
	t.Helper()
	if req.Signature == nil {
		req.Signature = qaSig
	}
	if err := tpl.Validate(); err != nil {
		t.Fatal(err)
	}
	msgs, err := tpl.Format(req)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func one(content string) *Template {
	return &Template{Messages: []MessageTemplate{{Role: "user", Content: content}}}
}

func TestInlineFunctions(t *testing.T) {
	outer := hist(sig.NewMap("text", "t1", "translated", "x1"), sig.NewMap("text", "t2", "translated", "x2"))
	cases := []struct{ name, content, want string }{
		{"inputs default", "{inputs()}", "question: Why?\ntags: [1] «a»\n[2] «b»"},
		{"inputs yaml", "{inputs(style='yaml')}", "question: Why?\ntags: [1] «a»\n[2] «b»"},
		{"inputs json", `{inputs(style="json")}`, "{\n  \"question\": \"Why?\",\n  \"tags\": \"[1] «a»\\n[2] «b»\"\n}"},
		{"inputs xml", "{inputs(style='xml')}", "<question>Why?</question>\n<tags>[1] «a»\n[2] «b»</tags>"},
		{"unquoted kwarg ignored", "{inputs(style=xml)}", "question: Why?\ntags: [1] «a»\n[2] «b»"},
		{"outputs default", "{outputs()}", "1. `answer` (str): The answer\n2. `score` (int):"},
		{"outputs schema", "{outputs(style='schema')}", "{\n  \"answer\": {\n    \"type\": \"string\"\n  },\n  \"score\": {\n    \"type\": \"integer\"\n  }\n}"},
		{"outputs xml", "{outputs(style='xml')}", "<answer>The answer</answer>\n<score>${score}</score>"},
		{"outputs xml wrap", "{outputs(style='xml', wrap='response')}", "<response>\n  <answer>The answer</answer>\n  <score>${score}</score>\n</response>"},
		{"variables", "{instruction}|{question}|{tags}|{nope}", "Answer it.|Why?|[1] «a»\n[2] «b»|{nope}"},
		{"history placeholder", "{history}", "messages=[{'question': 'q1', 'answer': 'a1'}, {'question': 'q2', 'answer': 'a2', 'score': 3}, {'answer': 'orphan'}, {'question': 'alone'}]"},
		{"history default", "{history()}", "Turn 1:\n  question: q1\n  answer: a1\n\nTurn 2:\n  question: q2\n  answer: a2\n  score: 3\n\nTurn 3:\n  answer: orphan\n\nTurn 4:\n  question: alone"},
		{"history yaml", "{history(style='yaml')}", "- turn: 1\n  question: q1\n  answer: a1\n- turn: 2\n  question: q2\n  answer: a2\n  score: 3\n- turn: 3\n  answer: orphan\n- turn: 4\n  question: alone"},
		{"history xml", "{history(style='xml')}", "<turn>\n  <question>q1</question>\n  <answer>a1</answer>\n</turn>\n<turn>\n  <question>q2</question>\n  <answer>a2</answer>\n  <score>3</score>\n</turn>\n<turn>\n  <answer>orphan</answer>\n</turn>\n<turn>\n  <question>alone</question>\n</turn>"},
		{"history json", "{history(style='json')}", "[\n  {\n    \"question\": \"q1\",\n    \"answer\": \"a1\"\n  },\n  {\n    \"question\": \"q2\",\n    \"answer\": \"a2\",\n    \"score\": 3\n  },\n  {\n    \"answer\": \"orphan\"\n  },\n  {\n    \"question\": \"alone\"\n  }\n]"},
		{"outer history yaml", "{outer_history(style='yaml')}", "- turn: 1\n  text: t1\n  translated: x1\n- turn: 2\n  text: t2\n  translated: x2"},
		{"outer history default", "{outer_history()}", "Turn 1:\n  text: t1\n  translated: x1\n\nTurn 2:\n  text: t2\n  translated: x2"},
		{"unknown function verbatim", "{shout(text='hi')} {question}", "{shout(text='hi')} Why?"},
		{"function result not re-read", "{history(style='json')}"[:0] + "{{question}} {outputs(style='xml')}", "{question} <answer>The answer</answer>\n<score>${score}</score>"},
		{"args with newline", "{inputs(\n style='xml'\n)}", "<question>Why?</question>\n<tags>[1] «a»\n[2] «b»</tags>"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msgs := doRender(t, one(c.content), adapter.Request{Inputs: qaInputs(), OuterHistory: &outer})
			// History not consumed inline is injected before the (only) user message.
			wantN := 1
			if !strings.Contains(c.content, "{history(") {
				wantN = 7
			}
			if len(msgs) != wantN {
				t.Fatalf("got %d messages, want %d: %s", len(msgs), wantN, dump(msgs))
			}
			if got := msgs[len(msgs)-1].Content; got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestHelpers(t *testing.T) {
	tpl := one("{greet(name='Ada', n=3)} {braces()} {bad()}")
	var seen map[string]string
	tpl.RegisterHelper("greet", func(ctx Context, s *sig.Signature, demos []*sig.Map, kw map[string]string) (string, error) {
		seen = kw
		return "hello " + kw["name"] + " (" + ctx.Vars["question"] + ", " + s.Name + ")", nil
	})
	tpl.RegisterHelper("braces", func(Context, *sig.Signature, []*sig.Map, map[string]string) (string, error) {
		return "{question}", nil
	})
	tpl.RegisterHelper("bad", func(Context, *sig.Signature, []*sig.Map, map[string]string) (string, error) {
		return "", errors.New("boom")
	})
	_, err := tpl.Format(adapter.Request{Signature: qaSig, Inputs: qaInputs()})
	var te *TemplateError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "helper bad(): boom") || te.Column != 37 {
		t.Fatalf("err = %v", err)
	}
	delete(tpl.Helpers, "bad")
	msgs := doRender(t, tpl, adapter.Request{Inputs: sig.NewMap("question", "Why?")})
	if want := "hello Ada (Why?, QA) {question} {bad()}"; msgs[0].Content != want {
		t.Errorf("got %q want %q", msgs[0].Content, want)
	}
	if len(seen) != 1 || seen["name"] != "Ada" {
		t.Errorf("kwargs %v: only quoted values count", seen)
	}
	_, err = one("{greet(ctx='x')}").withHelper("greet", tpl.Helpers["greet"]).Format(adapter.Request{Signature: qaSig})
	if err == nil || !strings.Contains(err.Error(), "multiple values for argument 'ctx'") {
		t.Errorf("dup arg: %v", err)
	}
	_, err = one("{inputs(signature='x')}").Format(adapter.Request{Signature: qaSig})
	if err == nil || !strings.Contains(err.Error(), "multiple values for argument 'signature'") {
		t.Errorf("dup arg: %v", err)
	}
}

func (t *Template) withHelper(name string, h Helper) *Template {
	t.RegisterHelper(name, h)
	return t
}

func TestHistoryDirective(t *testing.T) {
	base := []MessageTemplate{{Role: "system", Content: "{instruction}"}, {Role: RoleHistory}, {Role: "user", Content: "{question}"}}
	cases := []struct {
		mode string
		want []lm.Message
	}{
		{ParseJSON, []lm.Message{sy("Answer it."),
			u("question: q1"), a("{\n  \"answer\": \"a1\"\n}"),
			u("question: q2"), a("{\n  \"answer\": \"a2\",\n  \"score\": 3\n}"),
			a("{\n  \"answer\": \"orphan\"\n}"),
			u("question: alone"),
			u("Why?")}},
		{ParseXML, []lm.Message{sy("Answer it."),
			u("question: q1"), a("<answer>a1</answer>"),
			u("question: q2"), a("<answer>a2</answer>\n<score>3</score>"),
			a("<answer>orphan</answer>"),
			u("question: alone"),
			u("Why?")}},
		{ParseFullText, []lm.Message{sy("Answer it."),
			u("question: q1"), a("a1"),
			u("question: q2"), a("{\n  \"answer\": \"a2\",\n  \"score\": 3\n}"),
			a("orphan"),
			u("question: alone"),
			u("Why?")}},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			checkMessages(t, doRender(t, &Template{Messages: base, ParseMode: c.mode}, adapter.Request{Inputs: qaInputs()}), c.want)
		})
	}
	t.Run("repeated", func(t *testing.T) {
		h := hist(sig.NewMap("question", "q1", "answer", "a1"))
		tpl := &Template{Messages: []MessageTemplate{{Role: RoleHistory}, {Role: RoleHistory}, {Role: "user", Content: "x"}}, ParseMode: ParseFullText}
		checkMessages(t, doRender(t, tpl, adapter.Request{Inputs: sig.NewMap("history", h)}),
			[]lm.Message{u("question: q1"), a("a1"), u("question: q1"), a("a1"), u("x")})
	})
	t.Run("raw list verbatim", func(t *testing.T) {
		raw := []any{sig.NewMap("role", "user", "content", "hi"), sig.NewMap("role", "assistant", "content", "hello")}
		for _, tpl := range []*Template{one("{question}"), {Messages: []MessageTemplate{{Role: RoleHistory}, {Role: "user", Content: "{question}"}}}} {
			checkMessages(t, doRender(t, tpl, adapter.Request{Inputs: sig.NewMap("question", "q", "history", raw)}),
				[]lm.Message{u("hi"), a("hello"), u("q")})
		}
		_, err := one("x").Format(adapter.Request{Signature: qaSig, Inputs: sig.NewMap("history", []any{"oops"})})
		if err == nil || !strings.Contains(err.Error(), "raw history message 0") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("mapping extension", func(t *testing.T) {
		h := hist(sig.NewMap("question", "q1", "reply", "r1", "n", int64(2)), sig.NewMap("reply", "r2"))
		tpl := &Template{Messages: []MessageTemplate{
			{Role: RoleHistory, User: Str("{question}|{n}"), Assistant: Str("{reply} {missing} {answer} {outputs_json}")},
			{Role: "user", Content: "{question}"},
		}}
		checkMessages(t, doRender(t, tpl, adapter.Request{Inputs: sig.NewMap("question", "q", "history", h)}), []lm.Message{
			u("q1|2"), a(`r1 {missing}  {"answer": "", "score": ""}`),
			u("|{n}"), a(`r2 {missing}  {"answer": "", "score": ""}`),
			u("q"),
		})
	})
	t.Run("none is empty", func(t *testing.T) {
		checkMessages(t, doRender(t, one("{question}"), adapter.Request{Inputs: sig.NewMap("question", "q", "history", nil)}), []lm.Message{u("q")})
	})
}

func TestAutoInsertion(t *testing.T) {
	demos := []*sig.Map{
		sig.NewMap("question", "dq", "tags", []any{"x"}, "answer", "da", "score", int64(1)),
		sig.NewMap("answer", "no inputs: skipped"),
		sig.NewMap("question", "only input"),
	}
	h := hist(sig.NewMap("question", "q1", "answer", "a1"))
	in := sig.NewMap("question", "Why?", "history", h)
	demoMsgs := []lm.Message{u("question: dq\ntags: «x»"), a("{\n  \"answer\": \"da\",\n  \"score\": 1\n}"), u("question: only input")}
	histMsgs := []lm.Message{u("question: q1"), a("{\n  \"answer\": \"a1\"\n}")}
	cat := func(parts ...[]lm.Message) []lm.Message {
		var out []lm.Message
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	cases := []struct {
		name string
		msgs []MessageTemplate
		want []lm.Message
	}{
		{"before last user", []MessageTemplate{{Role: "system", Content: "s"}, {Role: "user", Content: "first"}, {Role: "assistant", Content: "ok"}, {Role: "user", Content: "{question}"}},
			cat([]lm.Message{sy("s"), u("first"), a("ok")}, demoMsgs, histMsgs, []lm.Message{u("Why?")})},
		// Without a user message demos go first and history then lands before the last
		// demo user message (the reference searches the list it already changed).
		{"no user message", []MessageTemplate{{Role: "system", Content: "s"}},
			cat(demoMsgs[:2], histMsgs, demoMsgs[2:], []lm.Message{sy("s")})},
		{"inline demos and history", []MessageTemplate{{Role: "system", Content: "{demos(style='yaml')}"}, {Role: "user", Content: "{history(style='yaml')}"}},
			[]lm.Message{sy("question: dq\ntags: ['x']\nanswer: da\nscore: 1\n\nanswer: no inputs: skipped\n\nquestion: only input"), u("- turn: 1\n  question: q1\n  answer: a1")}},
		{"demos directive mapped", []MessageTemplate{{Role: RoleDemos, User: Str("Q: {question} {tags}"), Assistant: Str("{outputs_json}")}, {Role: "user", Content: "{question}"}},
			cat([]lm.Message{
				u("Q: dq ['x']"), a(`{"answer": "da", "score": 1}`),
				u("Q:  "), a(`{"answer": "no inputs: skipped", "score": ""}`),
				u("Q: only input "), a(`{"answer": "", "score": ""}`),
			}, histMsgs, []lm.Message{u("Why?")})},
		{"demos directive default", []MessageTemplate{{Role: "user", Content: "{question}"}, {Role: RoleDemos}},
			// History goes before the last user message, which is now a demo's.
			cat([]lm.Message{u("Why?")}, demoMsgs[:2], histMsgs, demoMsgs[2:])},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkMessages(t, doRender(t, &Template{Messages: c.msgs}, adapter.Request{Inputs: in, Demos: demos}), c.want)
		})
	}
	t.Run("demos inline styles", func(t *testing.T) {
		d := []*sig.Map{sig.NewMap("question", "dq", "answer", "da"), sig.NewMap("score", int64(2))}
		want := map[string]string{
			"":     "Example 1:\n  question: dq\n  answer: da\n\nExample 2:\n  score: 2",
			"xml":  "<question>dq</question>\n<answer>da</answer>\n\n<score>2</score>",
			"json": "{\n  \"question\": \"dq\",\n  \"answer\": \"da\"\n}\n\n{\n  \"score\": 2\n}",
		}
		for style, w := range want {
			msgs := doRender(t, one("{demos(style='"+style+"')}"), adapter.Request{Demos: d})
			if len(msgs) != 1 || msgs[0].Content != w {
				t.Errorf("style %q: %s", style, dump(msgs))
			}
		}
	})
}

func TestLoad(t *testing.T) {
	tpl, err := Load([]byte(`{"messages":[{"role":"system","content":"{instruction}"},{"role":"history","user":"{question}","assistant":"{reply}"},{"role":"user"}],"parse_mode":"xml"}`))
	if err != nil {
		t.Fatal(err)
	}
	if tpl.Mode() != ParseXML || len(tpl.Messages) != 3 || !tpl.Messages[1].Mapped() || *tpl.Messages[1].Assistant != "{reply}" || tpl.Messages[2].Content != "" {
		t.Fatalf("loaded %+v", tpl)
	}
	back, _ := tpl.MarshalJSON()
	again, err := Load(back)
	if err != nil || len(again.Messages) != 3 || again.Mode() != ParseXML {
		t.Fatalf("round trip %s: %v", back, err)
	}
	bad := map[string]string{
		`{"messages":[{"role":"user","contnet":"x"}]}`: `messages[0]: unknown key "contnet"`,
		`{"messages":[{"role":"user","content":3}]}`:   `messages[0]: "content" must be a string`,
		`{"messages":[]}`:       "at least one message",
		`{"parse_mode":"json"}`: `missing "messages"`,
		`{"messages":[{"role":"user","content":"x"}],"parse_mode":"yaml"}`: `unknown parse_mode "yaml"`,
		`{"messages":[{"role":"user","content":"x {"}]}`:                   "messages[0].content, line 1, column 3: Single '{'",
		`{"messages":["x"]}`:                        "messages[0]: want an object",
		`{"messages":[{"role":"user"}], "extra":1}`: `unknown field "extra"`,
		`[1]`: "template:",
	}
	for in, want := range bad {
		if _, err := Load([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", in, err, want)
		}
	}
}

func TestWireFactory(t *testing.T) {
	spec := `{"adapter":"template","template":{"messages":[{"role":"system","content":"{outer_history(style='yaml')}"},{"role":"history"},{"role":"user","content":"{question}"}],"parse_mode":"full_text"},
	 "outer_history":{"messages":[{"question":"a","reply":"b"}]},
	 "inputs":{"question":"q","history":[{"role":"user","content":"raw"}]}}`
	ad, err := adapter.New("template", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	s := sig.New("", "", []sig.Field{{Name: "question"}, {Name: "history", Type: sig.THistory}}, []sig.Field{{Name: "reply"}})
	// The wire decoder turns the bare list into a History; the factory restores the list.
	in := sig.NewMap("question", "q", "history", hist(sig.NewMap("role", "user", "content", "raw")))
	msgs, err := ad.Format(adapter.Request{Signature: s, Inputs: in})
	if err != nil {
		t.Fatal(err)
	}
	checkMessages(t, msgs, []lm.Message{sy("- turn: 1\n  question: a\n  reply: b"), u("raw"), u("q")})
	if _, err := adapter.New("template", []byte(`{"adapter":"template"}`)); err == nil || !strings.Contains(err.Error(), "template") {
		t.Errorf("missing template: %v", err)
	}
	if _, err := adapter.New("template", []byte(`{"template":{"messages":[{"role":"user"}]},"outer_history":3}`)); err == nil || !strings.Contains(err.Error(), "outer_history") {
		t.Errorf("bad outer history: %v", err)
	}
}
