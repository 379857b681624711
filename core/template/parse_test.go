package template

import (
	"errors"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

var (
	twoOut = sig.New("", "", []sig.Field{{Name: "question"}}, []sig.Field{{Name: "answer"}, {Name: "score", Type: sig.TInt}})
	oneOut = sig.New("", "", []sig.Field{{Name: "question"}}, []sig.Field{{Name: "n", Type: sig.TInt}})
)

func TestParseModes(t *testing.T) {
	cases := []struct {
		name, mode string
		s          *sig.Signature
		completion string
		want       string // sig.JSON of the outputs
		err        string // exact error text when set
		errHas     string // or a substring of it
	}{
		{name: "json fenced, lax int", mode: ParseJSON, s: twoOut, completion: "```json\n{\"answer\": \"x\", \"score\": \"3\"}\n```", want: `{"answer":"x","score":3}`},
		{name: "json repaired", mode: ParseJSON, s: twoOut, completion: "{'answer': 'x', 'score': 3,}", want: `{"answer":"x","score":3}`},
		{name: "json prose around", mode: ParseJSON, s: twoOut, completion: "Sure! {\"score\": 1, \"answer\": \"y\", \"extra\": true} Hope that helps.", want: `{"answer":"y","score":1}`},
		{name: "json number into str", mode: ParseJSON, s: twoOut, completion: `{"answer": 42, "score": 1}`, want: `{"answer":"42","score":1}`},
		{name: "json default mode", mode: "", s: twoOut, completion: `{"answer": "a", "score": 2.0}`, want: `{"answer":"a","score":2}`},
		{name: "json missing field", mode: ParseJSON, s: twoOut, completion: `{"answer": "x"}`,
			err: "Adapter TemplateAdapter failed to parse the LM response. \n\nLM Response: {\"answer\": \"x\"} \n\nExpected to find output fields in the LM response: [answer, score] \n\nActual output fields parsed from the LM response: [answer] \n\n"},
		{name: "json none", mode: ParseJSON, s: twoOut, completion: "no json here",
			err: "No JSON object found in LM response.\n\nAdapter TemplateAdapter failed to parse the LM response. \n\nLM Response: no json here \n\nExpected to find output fields in the LM response: [answer, score] \n\n"},
		{name: "json bad value", mode: ParseJSON, s: twoOut, completion: `{"answer": "x", "score": "many"}`, errHas: "Failed to parse field 'score': "},
		{name: "full_text strip", mode: ParseFullText, s: oneOut, completion: "  42 \n", want: `{"n":42}`},
		{name: "full_text str", mode: ParseFullText, s: sig.New("", "", nil, []sig.Field{{Name: "reply"}}), completion: "\n Hello there.\n", want: `{"reply":"Hello there."}`},
		{name: "full_text two outputs", mode: ParseFullText, s: twoOut, completion: "x",
			err: "parse_mode='full_text' requires exactly 1 output field, got 2: ['answer', 'score']\n\nAdapter TemplateAdapter failed to parse the LM response. \n\nLM Response: x \n\nExpected to find output fields in the LM response: [answer, score] \n\n"},
		{name: "full_text bad int", mode: ParseFullText, s: oneOut, completion: "forty", errHas: "1 validation error for int\n  Input should be a valid integer, unable to parse string as an integer"},
		{name: "xml", mode: ParseXML, s: twoOut, completion: "Here: <answer>\n  multi\nline </answer> and <score>4</score> <answer>second</answer>", want: `{"answer":"multi\nline","score":4}`},
		{name: "xml fenced", mode: ParseXML, s: twoOut, completion: "```xml\n<answer>a</answer><score>1</score>\n```", want: `{"answer":"a","score":1}`},
		{name: "xml missing", mode: ParseXML, s: twoOut, completion: "<answer>a</answer>",
			err: "Missing XML tags for output fields: {'score'}\n\nAdapter TemplateAdapter failed to parse the LM response. \n\nLM Response: <answer>a</answer> \n\nExpected to find output fields in the LM response: [answer, score] \n\nActual output fields parsed from the LM response: [answer] \n\n"},
		{name: "xml bad value", mode: ParseXML, s: twoOut, completion: "<answer>a</answer><score>x</score>", errHas: "Failed to parse XML field 'score'"},
		{name: "chat", mode: ParseChat, s: twoOut, completion: "[[ ## answer ## ]]\nx\n\n[[ ## score ## ]]\n3\n\n[[ ## completed ## ]]", want: `{"answer":"x","score":3}`},
		{name: "chat missing", mode: ParseChat, s: twoOut, completion: "[[ ## answer ## ]]\nx", errHas: "Adapter ChatAdapter failed to parse"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tpl := &Template{Messages: []MessageTemplate{{Role: "user"}}, ParseMode: c.mode}
			got, err := tpl.Parse(c.s, c.completion)
			switch {
			case c.err != "" || c.errHas != "":
				if err == nil {
					t.Fatalf("no error; got %s", py.CompactJSON(got))
				}
				if c.err != "" && err.Error() != c.err {
					t.Errorf("error\n got %q\nwant %q", err.Error(), c.err)
				}
				if !strings.Contains(err.Error(), c.errHas) {
					t.Errorf("error %q lacks %q", err.Error(), c.errHas)
				}
				var pe *adapter.ParseError
				if !errors.As(err, &pe) {
					t.Errorf("error is %T, want an adapter.ParseError in the chain", err)
				}
			case err != nil:
				t.Fatal(err)
			case py.CompactJSON(got) != c.want:
				t.Errorf("got %s want %s", py.CompactJSON(got), c.want)
			}
		})
	}
}

func TestParseFuncAndFinetune(t *testing.T) {
	tpl := &Template{Messages: []MessageTemplate{{Role: "user"}}, ParseFunc: func(s *sig.Signature, c string) (*sig.Map, error) {
		return sig.NewMap("answer", strings.ToUpper(c)), nil
	}}
	got, err := tpl.Parse(twoOut, "shout")
	if err != nil || py.CompactJSON(got) != `{"answer":"SHOUT"}` {
		t.Errorf("got %s %v", py.CompactJSON(got), err)
	}
	outs := sig.NewMap("answer", "café", "score", int64(2))
	for mode, want := range map[string]string{
		ParseJSON: "{\n  \"answer\": \"caf\\u00e9\",\n  \"score\": 2\n}",
		ParseXML:  "<answer>café</answer>\n<score>2</score>",
		ParseChat: "{\n  \"answer\": \"caf\\u00e9\",\n  \"score\": 2\n}",
	} {
		if got := (&Template{ParseMode: mode}).FinetuneReply(twoOut, outs); got != want {
			t.Errorf("%s: %q want %q", mode, got, want)
		}
	}
	if got := (&Template{ParseMode: ParseFullText}).FinetuneReply(oneOut, sig.NewMap("n", int64(7))); got != "7" {
		t.Errorf("full_text: %q", got)
	}
}

func TestStripFences(t *testing.T) {
	cases := map[string]string{
		"```json\n{\"a\": 1}\n```":   `{"a": 1}`,
		"  ```\nx\n  ```  \n":        "x",
		"```\nno closing":            "no closing",
		"plain ``` inside\n":         "plain ``` inside\n",
		"```":                        "",
		"\n```py\nline1\nline2\n```": "line1\nline2",
	}
	for in, want := range cases {
		if got := StripFences(in); got != want {
			t.Errorf("StripFences(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFirstBraceGroup(t *testing.T) {
	cases := map[string]string{
		"x {a} {b}":       "{a}",
		"{ {inner} tail":  "{inner}",
		"} {a {b} c} {d}": "{a {b} c}",
		"none":            "",
		"{unclosed {x":    "",
	}
	for in, want := range cases {
		got, ok := adapter.FirstBalancedObject(in)
		if got != want || ok != (want != "") {
			t.Errorf("adapter.FirstBalancedObject(%q) = %q %v, want %q", in, got, ok, want)
		}
	}
}

func TestStreamField(t *testing.T) {
	cases := []struct {
		mode    string
		s       *sig.Signature
		partial string
		want    string
	}{
		{ParseFullText, oneOut, "", "n"},
		{ParseFullText, twoOut, "abc", ""},
		{ParseXML, twoOut, "thinking <answer>par", "answer"},
		{ParseXML, twoOut, "<answer>x</answer>", ""},
		{ParseXML, twoOut, "<answer>x</answer>\n<score>1", "score"},
		{ParseXML, twoOut, "<answer>x</answer>\n<sco", ""},
		{ParseChat, twoOut, "[[ ## answer ## ]]\nfoo", "answer"},
		{ParseChat, twoOut, "[[ ## answer ## ]]\nfoo\n\n[[ ## score ## ]]\n", "score"},
		{ParseChat, twoOut, "[[ ## answer ## ]]\nfoo\n[[ ## completed ## ]]", ""},
		{ParseChat, twoOut, "[[ ## answer ## ]]\nfoo\n[[ ## sco", "answer"},
		{ParseJSON, twoOut, `{"answer": "a, b`, "answer"},
		{ParseJSON, twoOut, `{"answer": "x", "sc`, "answer"},
		{ParseJSON, twoOut, `{"answer": "x", "score": 1`, "score"},
		{ParseJSON, twoOut, `{"answer": {"n": "}", "m": [1, {"k": 2}]}, `, "answer"},
		{ParseJSON, twoOut, `{"answer": {"n": "}", "m": [1, {"k": 2`, "answer"},
		{ParseJSON, twoOut, `{"answer": "x"}`, ""},
		{ParseJSON, twoOut, "```json\n{\"answer\": \"", "answer"},
		{ParseJSON, twoOut, `{answer: "x`, "answer"},
		{ParseJSON, twoOut, `{"other": "x`, ""},
		{ParseJSON, twoOut, `{"answer": "say \"hi\", ok`, "answer"},
		{ParseJSON, twoOut, `{"answer"`, ""},
		{ParseJSON, twoOut, `{"answer":`, "answer"},
	}
	for _, c := range cases {
		tpl := &Template{ParseMode: c.mode}
		if got := tpl.StreamField(c.s, c.partial); got != c.want {
			t.Errorf("%s %q: got %q want %q", c.mode, c.partial, got, c.want)
		}
	}
}
