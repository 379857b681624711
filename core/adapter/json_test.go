package adapter

import (
	"errors"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

func TestRepairJSON(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"a": 1, "b": [true, null]}`, `{"a":1,"b":[true,null]}`},
		{`{'a': 'it"s', 'b': 2.0}`, `{"a":"it\"s","b":2.0}`},
		{`{"a": 1, "b": [1, 2,],}`, `{"a":1,"b":[1,2]}`},
		{`{name: "x", count: 3}`, `{"name":"x","count":3}`},
		{`{"a": {"b": [1, 2`, `{"a":{"b":[1,2]}}`},
		{`{"a": "unterminated`, `{"a":"unterminated"}`},
		{`{"ok": True, "no": False, "n": None}`, `{"ok":true,"no":false,"n":"None"}`},
		{"```json\n{\"a\": 1}\n```", `{"a":1}`},
		{"Here you go: {\"a\": 1} Hope it helps!", `{"a":1}`},
		{`{"a": "say "hi" now", "b": 1}`, `{"a":"say \"hi\" now","b":1}`},
		{`{"a": "line\nbreak \u00e9 \ud83d\ude00"}`, `{"a":"line\nbreak é 😀"}`},
		{`{"a": 1 // comment` + "\n" + `, "b": 2}`, `{"a":1,"b":2}`},
		{`[1, 2] [3]`, `[[1,2],[3]]`},
		{`{"a": 1} {"a": 2}`, `{"a":2}`},
		{`{"a": unquoted words, "b": 2}`, `{"a":"unquoted words","b":2}`},
		{`{"a": -1.5e3, "b": 12abc}`, `{"a":-1500.0,"b":"12abc"}`},
		{`{"a": [1, "", 2]}`, `{"a":[1,2]}`},
		{`{"a": }`, `{"a":""}`},
		{`{“a”: “b”}`, `{"a":"b"}`},
	}
	for _, c := range cases {
		got, err := RepairJSON(c.in)
		if err != nil || py.CompactJSON(got) != c.want {
			t.Errorf("%q: got %s, %v; want %s", c.in, py.CompactJSON(got), err, c.want)
		}
	}
	for _, none := range []string{"", "42", "true", `"str"`, "plain words", "yes"} {
		if v, err := RepairJSON(none); !errors.Is(err, ErrNoJSON) {
			t.Errorf("%q: want ErrNoJSON, got %s, %v", none, py.CompactJSON(v), err)
		}
		if v := RepairLoads(none); v != "" {
			t.Errorf("RepairLoads(%q) = %#v, want \"\"", none, v)
		}
	}
}

func jsonSig() *sig.Signature {
	return sig.New("S", "Answer.", []sig.Field{field("question", "str", "")},
		[]sig.Field{field("answer", "str", "The answer"), field("score", "float", ""), field("tags", "list[str]", "")})
}

func TestJSONFormat(t *testing.T) {
	s := jsonSig().AppendInput(sig.Field{Name: "history", Type: sig.THistory, Desc: "Conversation history"})
	h := sig.History{Messages: []*sig.Map{sig.NewMap("question", "q1", "answer", "a1", "score", 2.0)}}
	msgs, err := JSON{}.Format(Request{Signature: s, Inputs: sig.NewMap("question", "q2", "history", h)})
	if err != nil {
		t.Fatal(err)
	}
	system := "Your input fields are:\n1. `question` (str): \n2. `history` (History): Conversation history\n" +
		"Your output fields are:\n1. `answer` (str): The answer\n2. `score` (float): \n3. `tags` (list[str]):\n" +
		"All interactions will be structured in the following way, with the appropriate values filled in.\n\n" +
		"Inputs will have the following structure:\n\n[[ ## question ## ]]\n{question}\n\n[[ ## history ## ]]\n{history}\n\n" +
		"Outputs will be a JSON object with the following fields.\n\n{\n  \"answer\": \"{answer}\",\n" +
		"  \"score\": \"{score}        # note: the value you produce must be a single float value\",\n" +
		"  \"tags\": \"{tags}        # note: the value you produce must adhere to the JSON schema: {\\\"type\\\": \\\"array\\\", \\\"items\\\": {\\\"type\\\": \\\"string\\\"}}\"\n}\n" +
		"In adhering to this structure, your objective is: \n        Answer."
	want := []lm.Message{
		{Role: "system", Content: system},
		{Role: "user", Content: "[[ ## question ## ]]\nq1"},
		{Role: "assistant", Content: "{\n  \"answer\": \"a1\",\n  \"score\": 2.0,\n  \"tags\": null\n}"},
		{Role: "user", Content: "[[ ## question ## ]]\nq2\n\nRespond with a JSON object in the following order of fields: `answer`, then `score` (must be formatted as a valid Python float), then `tags` (must be formatted as a valid Python list[str])."},
	}
	compareMessages(t, msgs, want)

	demo := sig.NewMap("question", "dq", "answer", "da")
	msgs, err = JSON{}.Format(Request{Signature: jsonSig(), Demos: []*sig.Map{demo}, Inputs: sig.NewMap("question", "q")})
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"answer\": \"da\",\n  \"score\": \"Not supplied for this particular example. \",\n  \"tags\": \"Not supplied for this particular example. \"\n}"; msgs[2].Content != want {
		t.Errorf("incomplete demo assistant:\n got %q\nwant %q", msgs[2].Content, want)
	}
}

func TestJSONParse(t *testing.T) {
	s := jsonSig()
	cases := []struct{ completion, want string }{
		{`{"answer": "x", "score": 1, "tags": ["a"]}`, `{"answer":"x","score":1.0,"tags":["a"]}`},
		{"```json\n{\"tags\": \"['a', 'b']\", \"score\": \"0.5\", \"answer\": 42, \"extra\": 1,}\n```", `{"answer":"42","score":0.5,"tags":["a","b"]}`},
		{"Sure! {'answer': 'y', 'score': 2.5, 'tags': []} Done.", `{"answer":"y","score":2.5,"tags":[]}`},
	}
	for _, c := range cases {
		got, err := JSON{}.Parse(s, c.completion)
		if err != nil || py.CompactJSON(got) != c.want {
			t.Errorf("%q: got %s, %v; want %s", c.completion, py.CompactJSON(got), err, c.want)
		}
	}

	_, err := JSON{}.Parse(s, `{"answer": "x"}`)
	want := "Adapter JSONAdapter failed to parse the LM response. \n\nLM Response: {\"answer\": \"x\"} \n\n" +
		"Expected to find output fields in the LM response: [answer, score, tags] \n\nActual output fields parsed from the LM response: [answer] \n\n"
	if err == nil || err.Error() != want {
		t.Errorf("missing fields:\n got %q\nwant %q", err, want)
	}
	_, err = JSON{}.Parse(s, "no json here")
	want = "LM response cannot be serialized to a JSON object.\n\nAdapter JSONAdapter failed to parse the LM response. \n\nLM Response: no json here \n\n" +
		"Expected to find output fields in the LM response: [answer, score, tags] \n\n"
	if err == nil || err.Error() != want {
		t.Errorf("not an object:\n got %q\nwant %q", err, want)
	}
	_, err = JSON{}.Parse(s, `{"answer": "x", "score": "high", "tags": []}`)
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Field != "score" || !pe.Bare {
		t.Errorf("conversion failure: %v", err)
	}
}

func TestFirstBalancedObject(t *testing.T) {
	cases := []struct{ in, want string }{
		{"a {b} c", "{b}"},
		{"{{x}", "{x}"},
		{"x {a {b} c} {d}", "{a {b} c}"},
		{"}{ {q}", "{q}"},
		{"none", ""},
	}
	for _, c := range cases {
		if got, _ := FirstBalancedObject(c.in); got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
	}
}

func TestJSONStreamField(t *testing.T) {
	s := jsonSig()
	cases := []struct{ partial, want string }{
		{"", ""},
		{"```json\n{", ""},
		{`{"answer`, ""},
		{`{"answer": "he said {\"x\": 1}`, "answer"},
		{`{"answer": "a", "score": 0.`, "score"},
		{`{"answer": "a", "unknown": 1`, ""},
		{`{"answer": "a", "tags": ["x", {"score": 1}`, "tags"},
		{`{"answer": "a"}`, ""},
	}
	for _, c := range cases {
		if got := (JSON{}).StreamField(s, c.partial); got != c.want {
			t.Errorf("%q: got %q, want %q", c.partial, got, c.want)
		}
	}
}
