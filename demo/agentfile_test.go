package demo

import (
	"errors"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/tomlfile"
)

const okHead = `name = "t"
inputs = ["question"]
outputs = ["reply"]
[[predictors]]
name = "respond"
signature = "question -> reply"
`

// The demo's agent files get the built-in tools, demo scripts and template files.
func TestParseAgentFileWithDemoEnv(t *testing.T) {
	a, err := ParseAgentFile("t.toml", []byte("demo_script = \"supportagent\"\n"+okHead+"[[steps]]\nname = \"a\"\npredictor = \"respond\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "t" || a.Inputs[0] != "question" || a.Source != "t.toml" || len(a.Scripts()) == 0 {
		t.Fatalf("agent = %+v", a)
	}
	as, err := ExampleAgents()
	if err != nil || len(as) != len(Agents()) {
		t.Fatalf("example agents: %d, %v", len(as), err)
	}
	_, err = ParseAgentFile("t.toml", []byte(okHead+"[[steps]]\nname = \"a\"\ntool = \"shell\"\n"))
	var fe tomlfile.FileErrors
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), `unknown tool "shell" (built-in tools: act, calculator, date, search)`) {
		t.Fatalf("unknown tool: %v", err)
	}
	_, err = ParseAgentFile("t.toml", []byte("demo_script = \"Nope\"\n"+okHead+"[[steps]]\nname = \"a\"\npredictor = \"respond\"\n"))
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), `unknown demo script "Nope" (built-in agents: SupportAgent, CorrectThenTranslate, `) {
		t.Fatalf("unknown demo script: %v", err)
	}
}

func TestTools(t *testing.T) {
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
	if got, err := Tools()["date"].Run(nil, fixedNow()); err != nil || got.String("date") != "2025-01-15 (Wednesday)" {
		t.Errorf("date tool = %v, %v", got, err)
	}
}
