package workflow

import (
	"errors"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/tomlfile"
)

const okHead = `name = "t"
inputs = ["question"]
outputs = ["reply"]
[[predictors]]
name = "respond"
signature = "question -> reply"
`

// Every kind of problem is reported with the file, the line and the key.
func TestValidationErrors(t *testing.T) {
	cases := []struct {
		name, text string
		line       int
		key, msg   string
	}{
		{"unknown predictor", okHead + "[[steps]]\nname = \"a\"\npredictor = \"respnd\"\n", 9, "steps[1].predictor", `unknown predictor "respnd" (defined: respond)`},
		{"field not produced", okHead + "[[steps]]\nname = \"a\"\npredictor = \"respond\"\ninputs = { question = \"{topic}\" }\n", 10, "steps[1].inputs", `"question" reads field "topic", which is not produced by any earlier step`},
		{"output not produced", strings.Replace(okHead, `outputs = ["reply"]`, `outputs = ["answer"]`, 1) + "[[steps]]\nname = \"a\"\npredictor = \"respond\"\n", 3, "outputs", `output "answer" is not produced by any step`},
		{"cycle", okHead + "[[steps]]\nname = \"a\"\npredictor = \"respond\"\n[[steps]]\nname = \"b\"\nworkflow = \"x\"\n[workflows.x]\n[[workflows.x.steps]]\nname = \"c\"\nworkflow = \"y\"\n[workflows.y]\n[[workflows.y.steps]]\nname = \"d\"\nworkflow = \"x\"\n", 20, "workflows.y.steps[1].workflow", "workflow cycle: x -> y -> x"},
		{"bad signature", strings.Replace(okHead, `"question -> reply"`, `"question -> reply: list[str"`, 1) + "[[steps]]\nname = \"a\"\npredictor = \"respond\"\n", 6, "predictors[1].signature", "bad signature"},
		{"bad template", okHead + "adapter = \"template\"\n[predictors.template]\n[[predictors.template.messages]]\nrole = \"user\"\ncontent = \"\"\"\nfirst line\n{question\n\"\"\"\n[[steps]]\nname = \"a\"\npredictor = \"respond\"\n", 13, "predictors[1].template.messages[1].content", "bad template"},
		{"template without adapter", okHead + "template_file = \"x.json\"\n[[steps]]\nname = \"a\"\npredictor = \"respond\"\n", 7, "predictors[1].template_file", `needs adapter = "template"`},
		{"unknown key", okHead + "[[steps]]\nname = \"a\"\npredictor = \"respond\"\nretries = 3\n", 10, "steps.retries", "unknown key"},
		{"wrong type", okHead + "[[steps]]\nname = \"a\"\npredictor = \"respond\"\nmax_retries = \"3\"\n", 10, "steps.max_retries", "incompatible types"},
		{"syntax", okHead + "[[steps]\n", 8, "predictors", "expected end of table array name"},
		{"unknown tool", okHead + "[[steps]]\nname = \"a\"\ntool = \"shell\"\n", 9, "steps[1].tool", `unknown tool "shell" (built-in tools: upper)`},
		{"unknown demo script", "demo_script = \"Nope\"\n" + okHead + "[[steps]]\nname = \"a\"\npredictor = \"respond\"\n", 1, "demo_script", `unknown demo script "Nope" (built-in agents: SupportAgent)`},
		{"bad context mode", okHead + "[[steps]]\nname = \"a\"\ncontext_mode = \"private\"\n[[steps.steps]]\nname = \"b\"\npredictor = \"respond\"\n", 9, "steps[1].context_mode", `"private" is not one of isolated, shared, inherited`},
		{"two modes", okHead + "[[steps]]\nname = \"a\"\npredictor = \"respond\"\n[[steps]]\nname = \"b\"\ncontext_mode = \"shared\"\n[[steps.steps]]\nname = \"c\"\npredictor = \"respond\"\n", 15, "steps[2].steps[1].predictor", "runs under context_mode shared here but under the top level at steps[1]"},
		{"parallel writes", okHead + "[[steps]]\nname = \"p\"\nparallel = true\ncontext_mode = \"shared\"\n[[steps.steps]]\nname = \"a\"\nset = { reply = \"x\" }\n[[steps.steps]]\nname = \"b\"\nset = { reply = \"y\" }\n", 14, "steps[1].steps[2]", `parallel steps "a" and "b" both write field "reply"`},
		{"retry without attempts", okHead + "[[steps]]\nname = \"a\"\npredictor = \"respond\"\non_error = \"retry\"\n", 7, "steps[1].max_retries", "needs max_retries of 2 or more"},
		{"json fallback on json", okHead + "adapter = \"json\"\njson_fallback = false\n[[steps]]\nname = \"a\"\npredictor = \"respond\"\n", 8, "predictors[1].json_fallback", "chat adapter only"},
		{"leaf context mode", okHead + "[[steps]]\nname = \"a\"\npredictor = \"respond\"\ncontext_mode = \"shared\"\n", 10, "steps[1].context_mode", "compound steps"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parse("agents/t.toml", c.text)
			var fe tomlfile.FileErrors
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want tomlfile.FileErrors", err)
			}
			for _, e := range fe {
				if e.Line == c.line && e.Key == c.key && strings.Contains(e.Msg, c.msg) && e.File == "agents/t.toml" {
					return
				}
			}
			t.Fatalf("want %d %s: %s\ngot:\n%v", c.line, c.key, c.msg, err)
		})
	}
}

func TestValidFile(t *testing.T) {
	a, err := parse("agents/t.toml", "demo_script = \"supportagent\"\n"+okHead+"[[steps]]\nname = \"a\"\npredictor = \"respond\"\n")
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "t" || a.Inputs[0] != "question" || a.Path != "agents/t.toml" || a.DemoScript != "supportagent" {
		t.Fatalf("agent = %+v", a)
	}
	a, err = parse("agents/unnamed.toml", strings.Replace(okHead, `name = "t"`, "", 1)+"[[steps]]\nname = \"a\"\npredictor = \"respond\"\n")
	if err != nil || a.Name != "unnamed" {
		t.Fatalf("a file without a name is named for the file: %+v, %v", a, err)
	}
}

// json_fallback = false turns off DSPy's ChatAdapter -> JSONAdapter retry; default keeps it.
func TestJSONFallbackOption(t *testing.T) {
	for _, c := range []struct {
		line string
		want bool
	}{{"", false}, {"json_fallback = true\n", false}, {"json_fallback = false\n", true}} {
		a, err := parse("t.toml", okHead+c.line+"[[steps]]\nname = \"a\"\npredictor = \"respond\"\n")
		if err != nil {
			t.Fatal(err)
		}
		m, _, err := a.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		p := core.FindPredictor(m, "respond")
		if p == nil || p.NoJSONFallback != c.want {
			t.Fatalf("%q: predictor %+v, want NoJSONFallback=%v", c.line, p, c.want)
		}
	}
}

// Without Env.ReadFile a template_file is an error at its key, not a silent read.
func TestTemplateFileNeedsAReader(t *testing.T) {
	text := okHead + "adapter = \"template\"\ntemplate_file = \"respond.json\"\n[[steps]]\nname = \"a\"\npredictor = \"respond\"\n"
	_, err := Parse("agents/t.toml", []byte(text), Env{})
	if err == nil || !strings.Contains(err.Error(), "agents/t.toml:8: predictors[1].template_file: template files cannot be read here") {
		t.Fatalf("err = %v", err)
	}
}

func TestTemplates(t *testing.T) {
	got, err := renderTemplate("{a} {{b}} {a}", func(n string) (string, bool) { return "x", n == "a" })
	if err != nil || got != "x {b} x" {
		t.Errorf("template = %q, %v", got, err)
	}
	if _, err := renderTemplate("{a", func(string) (string, bool) { return "", true }); err == nil {
		t.Error("unclosed brace must fail")
	}
}
