package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/demo"
)

func init() {
	Register(Command{
		Name: "agents",
		Usage: []string{
			"agents ls                    list the built-in agents and the agent files found",
			"agents show NAME             describe an agent (a built-in agent file prints its TOML)",
			"agents check FILE            validate an agent file (errors with line and key)",
		},
		Run:     runAgents,
		Ordinal: 30,
	})
}

// agentSearch lets tests point the command at other directories.
var agentSearch = func() ([]demo.Agent, []error) { return demo.FindAgents() }

func runAgents(ctx context.Context, env Env) int {
	if len(env.Args) == 0 {
		fmt.Fprintln(env.Stderr, "agents: want 'agents ls', 'agents show NAME' or 'agents check FILE'")
		return 2
	}
	switch sub := env.Args[0]; {
	case sub == "ls" && len(env.Args) == 1:
		return agentsList(env)
	case sub == "show" && len(env.Args) == 2:
		return agentsShow(env, env.Args[1])
	case sub == "check" && len(env.Args) >= 2:
		return agentsCheck(env, env.Args[1:])
	}
	fmt.Fprintf(env.Stderr, "agents: bad arguments %q (see 'sessionbench help')\n", strings.Join(env.Args, " "))
	return 2
}

func agentsList(env Env) int {
	found, errs := agentSearch()
	all := append(demo.Agents(), found...)
	w := 0
	for _, a := range all {
		w = max(w, len(a.Name))
	}
	for _, a := range all {
		fmt.Fprintf(env.Stdout, "%-*s  %-10s  %s -> %s\n", w, a.Name, source(a), strings.Join(a.Inputs, ", "), strings.Join(a.Outputs, ", "))
	}
	fmt.Fprintf(env.Stdout, "\nbuilt-in agent files (agents show NAME.toml): %s\n", strings.Join(demo.ExampleFiles(), ", "))
	for _, err := range errs {
		fmt.Fprintln(env.Stderr, err)
	}
	if len(errs) > 0 {
		return 1
	}
	return 0
}

func source(a demo.Agent) string {
	if a.Source == "built-in" {
		return "built-in"
	}
	return "file"
}

func agentsShow(env Env, name string) int {
	if strings.HasSuffix(name, ".toml") {
		if data, err := demo.ExampleFile(name); err == nil {
			_, _ = env.Stdout.Write(data)
			return 0
		}
	}
	a, ok := demo.Lookup(name)
	if !ok {
		found, _ := agentSearch()
		for _, f := range found {
			if strings.EqualFold(f.Name, name) {
				a, ok = f, true
				break
			}
		}
	}
	if !ok {
		fmt.Fprintf(env.Stderr, "agents show: no agent %q (see 'sessionbench agents ls')\n", name)
		return 1
	}
	fmt.Fprintf(env.Stdout, "%s\n  %s\n  source:  %s\n  inputs:  %s\n  outputs: %s\n", a.Name, a.Description, a.Source,
		strings.Join(a.Inputs, ", "), strings.Join(a.Outputs, ", "))
	_, opts, err := a.Build()
	if err != nil {
		fmt.Fprintf(env.Stderr, "agents show: %v\n", err)
		return 1
	}
	fmt.Fprintf(env.Stdout, "  session: recursive=%s nested_sessions=%s inner_scope=%s\n", orDefault(string(opts.Recursive), "no"),
		orDefault(string(opts.NestedSessions), "keep"), orDefault(string(opts.InnerScope), "cross_turn"))
	for _, k := range sortedConfigKeys(opts) {
		cc := opts.ChildConfigs[k]
		fmt.Fprintf(env.Stdout, "    %s: nested=%s scope=%s exclude_fields=%v\n", k, orDefault(string(cc.Nested), "-"), orDefault(string(cc.Scope), "-"), cc.ExcludeFields)
	}
	if len(opts.Exclude) > 0 {
		fmt.Fprintf(env.Stdout, "    no history: %s\n", strings.Join(opts.Exclude, ", "))
	}
	return 0
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func sortedConfigKeys(o core.Options) []string {
	keys := make([]string, 0, len(o.ChildConfigs))
	for k := range o.ChildConfigs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func agentsCheck(env Env, files []string) int {
	bad := false
	for _, f := range files {
		a, err := demo.LoadAgentFile(f)
		if err != nil {
			bad = true
			var fe demo.FileErrors
			if errors.As(err, &fe) {
				for _, e := range fe {
					fmt.Fprintln(env.Stderr, e)
				}
				continue
			}
			fmt.Fprintf(env.Stderr, "%s: %v\n", f, err)
			continue
		}
		fmt.Fprintf(env.Stdout, "%s: ok (agent %q: %s -> %s)\n", f, a.Name, strings.Join(a.Inputs, ", "), strings.Join(a.Outputs, ", "))
	}
	if bad {
		return 1
	}
	return 0
}
