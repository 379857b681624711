package demo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/llm/config"
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
		{"unknown tool", okHead + "[[steps]]\nname = \"a\"\ntool = \"shell\"\n", 9, "steps[1].tool", `unknown tool "shell"`},
		{"bad context mode", okHead + "[[steps]]\nname = \"a\"\ncontext_mode = \"private\"\n[[steps.steps]]\nname = \"b\"\npredictor = \"respond\"\n", 9, "steps[1].context_mode", `"private" is not one of isolated, shared, inherited`},
		{"two modes", okHead + "[[steps]]\nname = \"a\"\npredictor = \"respond\"\n[[steps]]\nname = \"b\"\ncontext_mode = \"shared\"\n[[steps.steps]]\nname = \"c\"\npredictor = \"respond\"\n", 15, "steps[2].steps[1].predictor", "runs under context_mode shared here but under the top level at steps[1]"},
		{"parallel writes", okHead + "[[steps]]\nname = \"p\"\nparallel = true\ncontext_mode = \"shared\"\n[[steps.steps]]\nname = \"a\"\nset = { reply = \"x\" }\n[[steps.steps]]\nname = \"b\"\nset = { reply = \"y\" }\n", 14, "steps[1].steps[2]", `parallel steps "a" and "b" both write field "reply"`},
		{"retry without attempts", okHead + "[[steps]]\nname = \"a\"\npredictor = \"respond\"\non_error = \"retry\"\n", 7, "steps[1].max_retries", "needs max_retries of 2 or more"},
		{"json fallback on json", okHead + "adapter = \"json\"\njson_fallback = false\n[[steps]]\nname = \"a\"\npredictor = \"respond\"\n", 8, "predictors[1].json_fallback", "chat adapter only"},
		{"leaf context mode", okHead + "[[steps]]\nname = \"a\"\npredictor = \"respond\"\ncontext_mode = \"shared\"\n", 10, "steps[1].context_mode", "compound steps"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseAgentFile("agents/t.toml", []byte(c.text))
			var fe config.FileErrors
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want config.FileErrors", err)
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

func TestValidFileAndBuiltinFiles(t *testing.T) {
	a, err := ParseAgentFile("t.toml", []byte(okHead+"[[steps]]\nname = \"a\"\npredictor = \"respond\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "t" || a.Inputs[0] != "question" || a.Source != "t.toml" {
		t.Fatalf("agent = %+v", a)
	}
	as, err := ExampleAgents()
	if err != nil || len(as) != len(Agents()) {
		t.Fatalf("example agents: %d, %v", len(as), err)
	}
}

// json_fallback = false turns off DSPy's ChatAdapter -> JSONAdapter retry; default keeps it.
func TestJSONFallbackOption(t *testing.T) {
	for _, c := range []struct {
		line string
		want bool
	}{{"", false}, {"json_fallback = true\n", false}, {"json_fallback = false\n", true}} {
		a, err := ParseAgentFile("t.toml", []byte(okHead+c.line+"[[steps]]\nname = \"a\"\npredictor = \"respond\"\n"))
		if err != nil {
			t.Fatal(err)
		}
		m, _, err := a.Build()
		if err != nil {
			t.Fatal(err)
		}
		p := core.FindPredictor(m, "respond")
		if p == nil || p.NoJSONFallback != c.want {
			t.Fatalf("%q: predictor %+v, want NoJSONFallback=%v", c.line, p, c.want)
		}
	}
}

func TestFindAgents(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	write := func(dir, name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	good := okHead + "[[steps]]\nname = \"a\"\npredictor = \"respond\"\n"
	write(d1, "one.toml", good)
	write(d1, "broken.toml", okHead)
	write(d2, "two.toml", strings.Replace(good, `name = "t"`, `name = "other"`, 1))
	write(d2, "dup.toml", good)
	write(d2, "notes.txt", "not an agent")
	agents, errs := FindAgentsIn([]string{d1, d2, filepath.Join(d1, "missing")})
	var names []string
	for _, a := range agents {
		names = append(names, a.Name)
	}
	if strings.Join(names, ",") != "t,other" {
		t.Errorf("agents = %v", names)
	}
	all := ""
	for _, e := range errs {
		all += e.Error() + "\n"
	}
	if len(errs) != 2 || !strings.Contains(all, "broken.toml") || !strings.Contains(all, "has no steps") || !strings.Contains(all, `agent "t" is already defined`) {
		t.Errorf("errors:\n%s", all)
	}
	dirs := AgentDirs(func(k string) string { return map[string]string{"HOME": "/home/u"}[k] })
	if dirs[0] != "/home/u/.config/sessionbench/agents" || dirs[1] != "agents" {
		t.Errorf("dirs = %v", dirs)
	}
}

func TestToolsAndTemplates(t *testing.T) {
	calc := []struct{ in, out string }{{"17 * 23 + 4", "395"}, {"2 ^ 3 ^ 2", "512"}, {"(1 + 2) / 4", "0.75"}, {"-3 % 2", "-1"}}
	for _, c := range calc {
		if got, err := Calculate(c.in); err != nil || got != c.out {
			t.Errorf("Calculate(%q) = %q, %v", c.in, got, err)
		}
	}
	for _, bad := range []string{"1 / 0", "2 +", "rm -rf /", "(1", strings.Repeat("(", 100) + "1"} {
		if _, err := Calculate(bad); err == nil {
			t.Errorf("Calculate(%q) must fail", bad)
		}
	}
	if got := Search("refund", 2); len(got) != 1 || !strings.HasPrefix(got[0], "Refund policy:") {
		t.Errorf("search = %v", got)
	}
	if a := Act("shell: ls", fixedNow()); a.Done || !strings.Contains(a.Observation, "Unknown tool") {
		t.Errorf("act = %+v", a)
	}
	got, err := renderTemplate("{a} {{b}} {a}", func(n string) (string, bool) { return "x", n == "a" })
	if err != nil || got != "x {b} x" {
		t.Errorf("template = %q, %v", got, err)
	}
	if _, err := renderTemplate("{a", func(string) (string, bool) { return "", true }); err == nil {
		t.Error("unclosed brace must fail")
	}
}
