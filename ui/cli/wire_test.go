package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
)

func runWireCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), Env{Args: args, Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

// referenceExamples reads the DSPy reference cases kept in core/adapter/testdata (one copy
// for every package that checks against them).
func referenceExamples(t *testing.T) *sig.Map {
	t.Helper()
	p := filepath.Join("..", "..", "core", "adapter", "testdata", "chat-adapter-examples.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	v, err := sig.DecodeJSON(data)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return v.(*sig.Map)
}

// TestWireFormatExamples runs `wire format` end to end on every format case and compares
// stdout byte for byte with the expected messages encoded the same way.
func TestWireFormatExamples(t *testing.T) {
	ex := referenceExamples(t)
	raw, _ := ex.Get("format_cases")
	cases := raw.([]any)
	if len(cases) == 0 {
		t.Fatal("no format cases")
	}
	for _, e := range cases {
		c := e.(*sig.Map)
		t.Run(c.String("name"), func(t *testing.T) {
			in, _ := c.Get("inputs")
			inputs := in.(*sig.Map).Clone()
			if c.String("history_passed") == "History" {
				h, _ := c.Get("history")
				inputs.Set(c.String("history_field"), sig.NewMap("messages", h))
			}
			s, _ := c.Get("signature")
			demos, _ := c.Get("demos")
			req := py.CompactJSON(sig.NewMap("adapter", "chat", "signature", s, "demos", demos, "inputs", inputs))
			code, stdout, stderr := runWireCLI(t, req, "wire", "format")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var want struct {
				Messages []lm.Message `json:"messages"`
			}
			msgs, _ := c.Get("messages")
			if err := json.Unmarshal([]byte(py.CompactJSON(msgs)), &want.Messages); err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(want); err != nil {
				t.Fatal(err)
			}
			if stdout != b.String() {
				t.Errorf("stdout differs:\n got %s\nwant %s", stdout, b.String())
			}
		})
	}
}

func TestWireParseExamples(t *testing.T) {
	ex := referenceExamples(t)
	raw, _ := ex.Get("parse_cases")
	for _, e := range raw.([]any) {
		c := e.(*sig.Map)
		t.Run(c.String("name"), func(t *testing.T) {
			s, _ := c.Get("signature")
			req := py.CompactJSON(sig.NewMap("adapter", "chat", "signature", s, "completion", c.String("completion")))
			code, stdout, stderr := runWireCLI(t, req, "wire", "parse")
			if errv, _ := c.Get("error"); errv != nil {
				if code != 1 {
					t.Fatalf("exit %d, want 1 (stdout %q)", code, stdout)
				}
				if want := errv.(*sig.Map).String("message"); stderr != want {
					t.Errorf("stderr:\n got %q\nwant %q", stderr, want)
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			res, _ := c.Get("result")
			want := sig.NewMap()
			res.(*sig.Map).Range(func(k string, v any) bool {
				val, _ := v.(*sig.Map).Get("value")
				want.Set(k, val)
				return true
			})
			if w := `{"outputs":` + py.CompactJSON(want) + "}\n"; stdout != w {
				t.Errorf("stdout %q, want %q", stdout, w)
			}
		})
	}
}

func TestWireErrors(t *testing.T) {
	okSig := `"signature":{"inputs":[{"name":"q"}],"outputs":[{"name":"a","type":"int"}]}`
	cases := []struct {
		name, sub, stdin string
		code             int
		stderr           string // substring of the one-line message
	}{
		{"bad json", "format", `{"adapter":`, 2, "wire format: bad JSON: unexpected end of input"},
		{"syntax", "format", `{"adapter" "chat"}`, 2, "wire format: bad JSON at byte"},
		{"not object", "format", `[1]`, 2, "want an object, got a list"},
		{"unknown adapter", "format", `{"adapter":"xml",` + okSig + `}`, 2, `wire format: adapter: unknown adapter "xml" (known: chat, json`},
		{"unknown type", "format", `{"signature":{"outputs":[{"name":"intent","type":"str"},{"name":"x","type":"lst[str]"}]}}`, 2,
			`wire format: signature.outputs[1].type: type "lst[str]", column 1: unknown type "lst"`},
		{"type column", "format", `{"signature":{"inputs":[{"name":"x","type":"list[str"}],"outputs":[{"name":"y"}]}}`, 2,
			`signature.inputs[0].type: type "list[str", column 9: missing ']'`},
		{"unknown constraint", "format", `{"signature":{"outputs":[{"name":"a","constraints":{"max_len":3}}]}}`, 2,
			`signature.outputs[0].constraints: field "a": unknown constraint "max_len"`},
		{"bad field name", "format", `{"signature":{"outputs":[{"name":"a b"}]}}`, 2, `signature.outputs[0].name:`},
		{"duplicate field", "format", `{"signature":{"inputs":[{"name":"a"}],"outputs":[{"name":"a"}]}}`, 2, `signature.outputs[0].name: field "a" is already defined at signature.inputs[0]`},
		{"bad history", "format", `{"signature":{"inputs":[{"name":"h","type":"History"}],"outputs":[{"name":"a"}]},"inputs":{"h":{"messages":[1]}}}`, 2,
			`inputs.h: history message 0 is an int`},
		{"missing completion", "parse", `{` + okSig + `}`, 2, "wire parse: completion: missing"},
		{"no subcommand", "", `{}`, 2, "missing subcommand; want one of: format, parse, strategies"},
		{"parse failure", "parse", `{` + okSig + `,"completion":"[[ ## a ## ]]\nforty"}`, 1,
			"Failed to parse field a with value forty from the LM response."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"wire"}
			if c.sub != "" {
				args = append(args, c.sub)
			}
			code, stdout, stderr := runWireCLI(t, c.stdin, args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, c.code, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout should be empty, got %q", stdout)
			}
			if !strings.Contains(stderr, c.stderr) {
				t.Errorf("stderr %q does not contain %q", stderr, c.stderr)
			}
			if c.code == 2 && strings.Count(stderr, "\n") != 1 {
				t.Errorf("want a one-line error, got %q", stderr)
			}
		})
	}
}

func TestWireJSONAdapterAndTypedOutputs(t *testing.T) {
	req := `{"adapter":"json","signature":{"instructions":"Score it.","inputs":[{"name":"text"}],
	  "outputs":[{"name":"score","type":"float"},{"name":"tags","type":"list[str]"},{"name":"ok","type":"bool"}]},
	  "completion":"Sure! {\"score\": 2, \"tags\": ['a', 'b',], \"ok\": \"yes\", \"extra\": 1}"}`
	code, stdout, stderr := runWireCLI(t, req, "wire", "parse")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := `{"outputs":{"score":2.0,"tags":["a","b"],"ok":true}}` + "\n"; stdout != want {
		t.Errorf("got %q, want %q", stdout, want)
	}

	fmtReq := `{"adapter":"json","signature":{"instructions":"Score it.","inputs":[{"name":"text"}],"outputs":[{"name":"score","type":"float"}]},"inputs":{"text":"a <b> & c"}}`
	code, stdout, stderr = runWireCLI(t, fmtReq, "wire", "format")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct{ Messages []lm.Message }
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, `a <b> & c`) {
		t.Errorf("HTML characters were escaped: %s", stdout)
	}
	if n := len(got.Messages); n != 2 {
		t.Fatalf("want 2 messages, got %d", n)
	}
	if want := "[[ ## text ## ]]\na <b> & c\n\nRespond with a JSON object in the following order of fields: `score` (must be formatted as a valid Python float)."; got.Messages[1].Content != want {
		t.Errorf("user message %q, want %q", got.Messages[1].Content, want)
	}
}

// TestWireFormatAbsentVsNone: a missing inputs key renders nothing; null renders None;
// ints and floats keep their kinds (2.0 stays 2.0).
func TestWireFormatValueKinds(t *testing.T) {
	req := `{"signature":{"instructions":"x","inputs":[{"name":"a"},{"name":"b","type":"float"},{"name":"c","type":"int"},{"name":"d"}],"outputs":[{"name":"o"}]},
	  "inputs":{"b":2.0,"c":2,"d":null,"zz":"ignored"}}`
	code, stdout, stderr := runWireCLI(t, req, "wire", "format")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct{ Messages []lm.Message }
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	want := "[[ ## b ## ]]\n2.0\n\n[[ ## c ## ]]\n2\n\n[[ ## d ## ]]\nNone\n\nRespond with the corresponding output fields, starting with the field `[[ ## o ## ]]`, and then ending with the marker for `[[ ## completed ## ]]`."
	if last := got.Messages[len(got.Messages)-1].Content; last != want {
		t.Errorf("got %q\nwant %q", last, want)
	}
}

// TestWireTemplateAdapter: the template adapter end to end through the CLI, both
// directions, and its errors (which message, line and column; bad parse mode).
func TestWireTemplateAdapter(t *testing.T) {
	sigJSON := `"signature":{"inputs":[{"name":"question"}],"outputs":[{"name":"answer"},{"name":"n","type":"int"}]}`
	tpl := func(content, mode string) string {
		return `"template":{"messages":[{"role":"system","content":"{instruction}"},{"role":"user","content":` + content + `}],"parse_mode":"` + mode + `"}`
	}
	code, stdout, stderr := runWireCLI(t, `{"adapter":"template",`+tpl(`"{inputs(style='json')}\n{outputs(style='xml', wrap='response')}\n{{literal}}"`, "xml")+`,`+sigJSON+`,"inputs":{"question":"hé \"x\""}}`, "wire", "format")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := `{"messages":[{"role":"system","content":"Given the fields ` + "`question`" + `, produce the fields ` + "`answer`, `n`" + `."},` +
		`{"role":"user","content":"{\n  \"question\": \"hé \\\"x\\\"\"\n}\n<response>\n  <answer>${answer}</answer>\n  <n>${n}</n>\n</response>\n{literal}"}]}` + "\n"
	if stdout != want {
		t.Errorf("format:\n got %s\nwant %s", stdout, want)
	}

	code, stdout, stderr = runWireCLI(t, `{"adapter":"template",`+tpl(`"x"`, "xml")+`,`+sigJSON+`,"completion":"ok <answer> A </answer> <n>4</n>"}`, "wire", "parse")
	if code != 0 || stdout != `{"outputs":{"answer":"A","n":4}}`+"\n" {
		t.Errorf("parse: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// chat parse mode reports ChatAdapter's own error text.
	code, _, stderr = runWireCLI(t, `{"adapter":"template",`+tpl(`"x"`, "chat")+`,`+sigJSON+`,"completion":"[[ ## answer ## ]]\nA"}`, "wire", "parse")
	if code != 1 || !strings.HasPrefix(stderr, "Adapter ChatAdapter failed to parse the LM response. \n\n") {
		t.Errorf("chat parse error: exit %d, stderr %q", code, stderr)
	}

	errCases := []struct{ name, stdin, stderr string }{
		{"unbalanced brace", `{"adapter":"template",` + tpl(`"Q: {question"`, "json") + `,` + sigJSON + `}`,
			"template messages[1].content, line 1, column 4: expected '}' before end of string"},
		{"single close", `{"adapter":"template",` + tpl(`"a\nb } c"`, "json") + `,` + sigJSON + `}`,
			"template messages[1].content, line 2, column 3: Single '}' encountered in format string"},
		{"no template", `{"adapter":"template",` + sigJSON + `}`, `template: missing`},
		{"bad parse mode", `{"adapter":"template",` + tpl(`"x"`, "yaml") + `,` + sigJSON + `}`, `unknown parse_mode "yaml"`},
	}
	for _, c := range errCases {
		code, stdout, stderr := runWireCLI(t, c.stdin, "wire", "format")
		if code != 2 || stdout != "" || !strings.Contains(stderr, c.stderr) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q (want it to contain %q on one line)", c.name, code, stdout, stderr, c.stderr)
		}
	}
}

// TestWireHistoryNullAndJSONParseError: a null history renders like an absent one (the
// project's choice where DSPy crashes, ARCHITECTURE.md); a JSONAdapter completion without an
// object fails with DSPy's message.
func TestWireHistoryNullAndJSONParseError(t *testing.T) {
	s := `"signature":{"instructions":"x","inputs":[{"name":"q"},{"name":"history","type":"History"}],"outputs":[{"name":"a"}]}`
	_, withNull, _ := runWireCLI(t, `{`+s+`,"inputs":{"q":"hi","history":null}}`, "wire", "format")
	_, absent, _ := runWireCLI(t, `{`+s+`,"inputs":{"q":"hi"}}`, "wire", "format")
	if withNull == "" || withNull != absent {
		t.Errorf("null history %q differs from absent %q", withNull, absent)
	}
	code, _, stderr := runWireCLI(t, `{"adapter":"json",`+s+`,"completion":"no object here"}`, "wire", "parse")
	want := "LM response cannot be serialized to a JSON object.\n\nAdapter JSONAdapter failed to parse the LM response. \n\nLM Response: no object here \n\nExpected to find output fields in the LM response: [a] \n\n"
	if code != 1 || stderr != want {
		t.Errorf("exit %d, stderr %q, want %q", code, stderr, want)
	}
}

// wire format/parse answer --help and report stray flags and arguments like other commands.
func TestWireHelpAndStrayArgs(t *testing.T) {
	cases := []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"wire", "format", "--help"}, 0, "sessionbench wire format", ""},
		{[]string{"help", "wire", "parse"}, 0, "sessionbench wire parse", ""},
		{[]string{"wire", "parse", "-x"}, 2, "", "flag provided but not defined: -x"},
		{[]string{"wire", "format", "extra"}, 2, "", `unexpected argument "extra"`},
		{[]string{"wire", "nope"}, 2, "", `unknown subcommand "nope"; want one of: format, parse, strategies`},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := Main(context.Background(), Env{Args: c.args, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb})
		if code != c.code || !strings.Contains(out.String(), c.out) || !strings.Contains(errb.String(), c.err) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", c.args, code, out.String(), errb.String())
		}
	}
}
