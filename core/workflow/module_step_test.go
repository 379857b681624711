package workflow

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/tomlfile"
	"github.com/sessionbench/sessionbench/core/trace"
)

// nestedModules has a module step inside a module step, a shared module and a
// predictor at the top: every call lands at its depth with the module's type.
const nestedModules = `
name = "nest"
inputs = ["q"]
outputs = ["a", "b", "c"]
[[predictors]]
name = "outer.first"
signature = "q -> x"
[[predictors]]
name = "outer.inner.second"
signature = "x -> a"
[[predictors]]
name = "team.third"
signature = "q -> b"
[[predictors]]
name = "last"
signature = "q -> c"
[[steps]]
name = "outer"
module = "Outer"
inputs = { q = "{q}" }
outputs = { a = "a" }
  [[steps.steps]]
  name = "first"
  predictor = "outer.first"
  [[steps.steps]]
  name = "inner"
  module = "Inner"
  inputs = { x = "{x}" }
  outputs = { a = "a" }
    [[steps.steps.steps]]
    name = "second"
    predictor = "outer.inner.second"
[[steps]]
name = "team"
module = "Team"
context_mode = "shared"
  [[steps.steps]]
  name = "third"
  predictor = "team.third"
[[steps]]
name = "last"
predictor = "last"
`

func TestModuleStepsNest(t *testing.T) {
	a := mustAgent(t, nestedModules)
	s, o := session(t, a)
	if o.Recursive != core.Modules {
		t.Fatalf("recursive = %q, want modules", o.Recursive)
	}
	m := &lm.Scripted{Func: echo}
	run(t, s, m, "q", "hello")
	turn := run(t, s, m, "q", "again")
	want := []string{"outer Outer", "  outer.first Predict", "  outer.inner Inner", "    outer.inner.second Predict",
		"team Team", "  team.third Predict", "last Predict"}
	if got := tree(turn); !reflect.DeepEqual(got, want) {
		t.Fatalf("tree:\n%s", strings.Join(got, "\n"))
	}
	outer, team := turn.Calls[0], turn.Calls[1]
	if got := outer.Outputs.String("a"); got != "a:x:again" || turn.Outputs.String("a") != got {
		t.Errorf("outer module outputs %v, turn outputs %v", outer.Outputs, turn.Outputs)
	}
	if got := outer.Children[1].Inputs.Keys(); !reflect.DeepEqual(got, []string{"x"}) {
		t.Errorf("inner module inputs %v", got)
	}
	// isolated inside a module: per_turn; shared: the outer conversation (one turn so far).
	if n := len(outer.Children[0].History.Messages); n != 0 {
		t.Errorf("outer.first saw %d messages, want 0 (per_turn)", n)
	}
	if n := len(team.Children[0].History.Messages); n != 1 {
		t.Errorf("team.third saw %d messages, want the outer conversation's 1", n)
	}
	if n := len(turn.Calls[2].History.Messages); n != 1 {
		t.Errorf("last saw %d messages, want its own 1", n)
	}
	// The shared module's step writes straight into the parent scope.
	if got := turn.Outputs.String("b"); got != "b:again" {
		t.Errorf("b = %q", got)
	}
	for _, path := range []string{"outer", "outer.inner", "team"} {
		if _, ok := s.Children()[path]; !ok {
			t.Errorf("no child session for module %q", path)
		}
	}
}

// Module-step mistakes are reported with their key.
func TestModuleStepErrors(t *testing.T) {
	const head = `name = "t"
inputs = ["question"]
outputs = ["reply"]
[[predictors]]
name = "research.respond"
signature = "question -> reply"
[[predictors]]
name = "respond"
signature = "question -> reply"
`
	module := func(extra, body string) string {
		return head + "[[steps]]\nname = \"research\"\nmodule = \"Research\"\noutputs = { reply = \"reply\" }\n" + extra +
			"  [[steps.steps]]\n  name = \"r\"\n  predictor = \"" + body + "\"\n"
	}
	cases := []struct {
		name, text, key, msg string
	}{
		{"leaf", head + "[[steps]]\nname = \"a\"\npredictor = \"respond\"\nmodule = \"X\"\n", "steps[1].module", "compound steps"},
		{"bad type", strings.Replace(module("", "research.respond"), `"Research"`, `"Re search"`, 1), "steps[1].module", "must be a name"},
		{"bad name", strings.Replace(module("", "research.respond"), `name = "research"`, `name = "re search"`, 1), "steps[1].name", "call path"},
		{"not under module", module("", "respond"), "steps[1].steps[1].predictor", `so its name must start with "research."`},
		{"outside its module", head + "[[steps]]\nname = \"a\"\npredictor = \"research.respond\"\n[[steps]]\nname = \"research\"\nmodule = \"R\"\n  [[steps.steps]]\n  name = \"s\"\n  set = { x = \"y\" }\n",
			"steps[1].predictor", `belongs to module step "research"`},
		{"summarize", module("summarize = true\n", "research.respond"), "steps[1].summarize", "does not apply to module steps"},
		{"in parallel", head + "[[steps]]\nname = \"p\"\nparallel = true\n  [[steps.steps]]\n  name = \"research\"\n  module = \"R\"\n    [[steps.steps.steps]]\n    name = \"r\"\n    predictor = \"research.respond\"\n",
			"steps[1].steps[1].module", "inside a parallel step"},
		{"twice", head + "[[steps]]\nname = \"a\"\nworkflow = \"w\"\n[[steps]]\nname = \"b\"\nworkflow = \"w\"\n[workflows.w]\n[[workflows.w.steps]]\nname = \"research\"\nmodule = \"R\"\n  [[workflows.w.steps.steps]]\n  name = \"r\"\n  predictor = \"research.respond\"\n",
			"workflows.w.steps[1].name", `module step path "research" is used twice`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parse("agents/t.toml", c.text)
			var fe tomlfile.FileErrors
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want tomlfile.FileErrors", err)
			}
			for _, e := range fe {
				if e.Key == c.key && strings.Contains(e.Msg, c.msg) && e.Line > 0 {
					return
				}
			}
			t.Fatalf("want %s: %s\ngot:\n%v", c.key, c.msg, err)
		})
	}
}

// tree is a turn's call paths with their depth ("  outer.first" one level down).
func tree(t *trace.Turn) []string {
	var out []string
	trace.WalkCalls(t.Calls, func(c *trace.Call, depth int) {
		out = append(out, strings.Repeat("  ", depth)+c.Path+" "+c.PredictorType)
	})
	return out
}
