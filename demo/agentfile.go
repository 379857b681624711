package demo

import (
	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/workflow"
)

// Env is what agent files may name here: the built-in tools and the built-in agents'
// demo scripts. It reads no files; a loader that does sets ReadFile (template_file).
func Env() workflow.Env {
	var names []string
	for _, a := range Agents() {
		names = append(names, a.Name)
	}
	return workflow.Env{Tools: Tools(), DemoScripts: names}
}

// FileAgent is a compiled agent file as an Agent, with the demo scripts it names.
func FileAgent(f *workflow.AgentFile) Agent {
	a := Agent{Name: f.Name, Description: f.Description, Inputs: f.Inputs, Outputs: f.Outputs, Source: f.Path, Files: f.Files()}
	if f.DemoScript != "" {
		b, _ := Lookup(f.DemoScript) // checked by workflow.Parse
		a.script = b.script
	}
	var build func(now Clock) Agent
	build = func(now Clock) Agent {
		b := a
		b.build = func() (core.Module, core.Options, error) {
			w, o, err := f.Build(now)
			if err != nil {
				return nil, core.Options{}, err
			}
			return w, o, nil
		}
		b.withClock = build
		return b
	}
	return build(nil)
}

// ParseAgentFile compiles an agent file's text with Env (no template files); path names
// it in errors.
func ParseAgentFile(path string, data []byte) (Agent, error) {
	f, err := workflow.Parse(path, data, Env())
	if err != nil {
		return Agent{}, err
	}
	return FileAgent(f), nil
}
