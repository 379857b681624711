package demo

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/workflow"
	"github.com/sessionbench/sessionbench/llm"
)

// Agent is a runnable agent as the workbench and the CLI see it: a Go demo agent or an
// agent file.
type Agent struct {
	Name        string
	Description string   // one or two sentences, shown in the UI
	Inputs      []string // field names of the user-facing call
	Outputs     []string // fields the agent returns
	// Source is "built-in" for the Go agents, else the agent file's path.
	Source string
	// Files are the files an agent file's agent is built from: the agent file and its
	// template files (nil for a built-in agent).
	Files  []string
	build  func() (core.Module, core.Options, error)
	script []llm.Script
	// withClock rebuilds the agent around another clock (agents with a date tool).
	withClock func(Clock) Agent
}

// WithClock returns the agent with its date tool reading c (tests pin the date).
// Agents without a clock are returned unchanged.
func (a Agent) WithClock(c Clock) Agent {
	if a.withClock == nil || c == nil {
		return a
	}
	return a.withClock(c)
}

// New returns a fresh module and the session options the seed recommends for it. It
// panics only when a built-in agent is broken; agent files are built once at load time,
// so their errors surface there (LoadAgentFile), never here.
func (a Agent) New() (core.Module, core.Options) {
	m, o, err := a.build()
	if err != nil {
		panic(fmt.Sprintf("agent %s: %v", a.Name, err))
	}
	return m, o
}

// Build is New returning the error instead of panicking.
func (a Agent) Build() (core.Module, core.Options, error) {
	if a.build == nil {
		return nil, core.Options{}, fmt.Errorf("agent %q has no builder", a.Name)
	}
	return a.build()
}

// Scripts are the demo-model scripts that make this agent's conversations look
// sensible offline (see llm.DemoOptions.Scripts).
func (a Agent) Scripts() []llm.Script { return append([]llm.Script(nil), a.script...) }

// historyInput is the input an agent lists to read the history its session injects
// (core.Options' default history field, as the workflow engine reads it).
const historyInput = "history"

// Signature is the user-facing call as a signature ("question -> reply, intent"). An
// input named history is the session's history (typed so): nobody types it.
func (a Agent) Signature() *sig.Signature {
	in := make([]sig.Field, len(a.Inputs))
	for i, n := range a.Inputs {
		in[i] = sig.Field{Name: n, Type: sig.TStr}
		if n == historyInput {
			in[i].Type = sig.THistory
		}
	}
	out := make([]sig.Field, len(a.Outputs))
	for i, n := range a.Outputs {
		out[i] = sig.Field{Name: n, Type: sig.TStr}
	}
	return sig.New(a.Name, a.Description, in, out)
}

// UserInputs are the input fields a user fills in (the input form, run's --input and
// script lines): the signature's inputs but the history the session injects.
func (a Agent) UserInputs() []sig.Field {
	var out []sig.Field
	for _, f := range a.Signature().Inputs {
		if !f.Type.IsHistory() {
			out = append(out, f)
		}
	}
	return out
}

// Clock is what the date tool reads; tests pin it.
type Clock = workflow.Clock

// Agents lists the built-in demo agents in the order the UI shows them.
func Agents() []Agent { return slices.Clone(builtins()) }

// builtins describes the built-in agents once per process (their modules are built per
// use): a Send looks its agent up, and describing all seven cost ~35 µs each time.
var builtins = sync.OnceValue(func() []Agent {
	return []Agent{
		supportAgent(), translateAgent("French"), retryAgent(), stepAgent(time.Now), ragAgent(), orchestratorAgent(), researchAgent(),
	}
})

// Lookup finds a built-in agent by name, case-insensitively.
func Lookup(name string) (Agent, bool) {
	for _, a := range Agents() {
		if strings.EqualFold(a.Name, name) {
			return a, true
		}
	}
	return Agent{}, false
}

// Scripts are every built-in agent's demo-model scripts, for a demo model shared by
// all conversations. Each script answers only its own agent's predictors.
func Scripts() []llm.Script {
	var out []llm.Script
	for _, a := range Agents() {
		out = append(out, a.script...)
	}
	return out
}

// goAgent builds a registry entry for a Go agent whose builder cannot fail.
func goAgent(name, desc string, inputs, outputs []string, build func() (core.Module, core.Options), scripts ...llm.Script) Agent {
	a := Agent{Name: name, Description: desc, Inputs: inputs, Outputs: outputs, Source: "built-in", script: scripts}
	if build != nil {
		a.build = func() (core.Module, core.Options, error) { m, o := build(); return m, o, nil }
	}
	return a
}
