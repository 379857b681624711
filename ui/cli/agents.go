package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/tomlfile"
	"github.com/sessionbench/sessionbench/demo"
	"github.com/sessionbench/sessionbench/ui/sessions"
)

func init() {
	Register(Command{
		Name: "agents",
		Usage: []string{
			"agents ls                    list the built-in agents and the agent files found (all take --json)",
			"agents show NAME             describe an agent (a built-in agent file prints its TOML)",
			"agents check FILE...         validate agent files (errors with line and key)",
		},
		Run:     runAgents,
		Ordinal: 30,
	})
}

// agentCatalog is the agents the commands know (ui/sessions' one lookup, also the
// workbench's); tests point it at other directories. A command that runs turns gives the
// Service the catalog it checked its agent with, so the file is read once.
var agentCatalog = sessions.DefaultCatalog

// agentOut is one agent as agents --json prints it.
type agentOut struct {
	Name        string   `json:"name"`
	Kind        string   `json:"kind"`   // "built-in" or "file"
	Source      string   `json:"source"` // "built-in" or the file's path
	Description string   `json:"description"`
	Inputs      []string `json:"inputs"`
	Outputs     []string `json:"outputs"`
}

func agentJSON(a demo.Agent) agentOut {
	return agentOut{Name: a.Name, Kind: source(a), Source: a.Source, Description: a.Description,
		Inputs: nonNil(a.Inputs), Outputs: nonNil(a.Outputs)}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func runAgents(ctx context.Context, env Env) int {
	if len(env.Args) == 0 {
		return unknownSubcommand(env, "agents", "")
	}
	sub := env.Args[0]
	var names []string // positional arguments wanted; "FILE..." is one or more
	switch sub {
	case "ls":
	case "show":
		names = []string{"NAME"}
	case "check":
		names = []string{"FILE..."}
	default:
		return unknownSubcommand(env, "agents", sub)
	}
	fs := newFlags("agents " + sub)
	asJSON := fs.Bool("json", false, "print JSON for machines")
	acceptDB(fs)
	pos, code, done := parseFlags(env, fs, env.Args[1:], true)
	if done {
		return code
	}
	if n := len(names); len(pos) != n && !(sub == "check" && len(pos) > 0) {
		what := "no arguments"
		if n > 0 {
			what = names[0]
		}
		fmt.Fprintf(env.Stderr, "sessionbench agents %s: want %s, got %d argument(s) %s(see 'sessionbench agents %s --help')\n",
			sub, what, len(pos), quoteArgs(pos), sub)
		return 2
	}
	switch sub {
	case "ls":
		return agentsList(env, *asJSON)
	case "show":
		return agentsShow(env, pos[0], *asJSON)
	}
	return agentsCheck(env, pos, *asJSON)
}

func agentsList(env Env, asJSON bool) int {
	cat := agentCatalog()
	all, errs := cat.All(), cat.Errors()
	if asJSON {
		out := struct {
			Agents       []agentOut `json:"agents"`
			ExampleFiles []string   `json:"example_files"`
			Errors       []string   `json:"errors"`
		}{Agents: []agentOut{}, ExampleFiles: nonNil(demo.ExampleFiles()), Errors: []string{}}
		for _, a := range all {
			out.Agents = append(out.Agents, agentJSON(a))
		}
		for _, err := range errs {
			out.Errors = append(out.Errors, err.Error())
		}
		_ = writeJSONOut(env.Stdout, out)
	} else {
		w := 0
		for _, a := range all {
			w = max(w, len(a.Name))
		}
		for _, a := range all {
			fmt.Fprintf(env.Stdout, "%-*s  %-10s  %s -> %s\n", w, a.Name, source(a), strings.Join(a.Inputs, ", "), strings.Join(a.Outputs, ", "))
		}
		fmt.Fprintf(env.Stdout, "\nbuilt-in agent files (agents show NAME.toml): %s\n", strings.Join(demo.ExampleFiles(), ", "))
	}
	// Broken agent files are reported on stderr (and in "errors") and make the exit 1.
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

// agentSessionOut is an agent's session configuration as agents show --json prints it.
type agentSessionOut struct {
	Recursive      string                   `json:"recursive"`
	NestedSessions string                   `json:"nested_sessions"`
	InnerScope     string                   `json:"inner_scope"`
	Children       map[string]agentChildOut `json:"children"`
	NoHistory      []string                 `json:"no_history"`
}

type agentChildOut struct {
	Nested        string   `json:"nested"`
	Scope         string   `json:"scope"`
	ExcludeFields []string `json:"exclude_fields"`
}

func agentsShow(env Env, name string, asJSON bool) int {
	if strings.HasSuffix(name, ".toml") {
		if data, err := demo.ExampleFile(name); err == nil {
			if asJSON {
				_ = writeJSONOut(env.Stdout, map[string]string{"file": name, "toml": string(data)})
			} else {
				_, _ = env.Stdout.Write(data)
			}
			return 0
		}
	}
	a, err := agentCatalog().Resolve(name)
	if err != nil {
		fmt.Fprintf(env.Stderr, "sessionbench agents show: %v (see 'sessionbench agents ls'; built-in agent files: %s)\n",
			err, strings.Join(demo.ExampleFiles(), ", "))
		return 1
	}
	_, opts, err := a.Build()
	if err != nil {
		fmt.Fprintf(env.Stderr, "sessionbench agents show: %v\n", err)
		return 1
	}
	sess := agentSessionOut{Recursive: orDefault(string(opts.Recursive), "no"), NestedSessions: orDefault(string(opts.NestedSessions), "keep"),
		InnerScope: orDefault(string(opts.InnerScope), "cross_turn"), Children: map[string]agentChildOut{}, NoHistory: nonNil(opts.Exclude)}
	for _, k := range sortedConfigKeys(opts) {
		cc := opts.ChildConfigs[k]
		sess.Children[k] = agentChildOut{Nested: string(cc.Nested), Scope: string(cc.Scope), ExcludeFields: nonNil(cc.ExcludeFields)}
	}
	if asJSON {
		_ = writeJSONOut(env.Stdout, struct {
			agentOut
			Session agentSessionOut `json:"session"`
		}{agentJSON(a), sess})
		return 0
	}
	fmt.Fprintf(env.Stdout, "%s\n  %s\n  source:  %s\n  inputs:  %s\n  outputs: %s\n", a.Name, a.Description, a.Source,
		strings.Join(a.Inputs, ", "), strings.Join(a.Outputs, ", "))
	fmt.Fprintf(env.Stdout, "  session: recursive=%s nested_sessions=%s inner_scope=%s\n", sess.Recursive, sess.NestedSessions, sess.InnerScope)
	for _, k := range sortedConfigKeys(opts) {
		cc := sess.Children[k]
		fmt.Fprintf(env.Stdout, "    %s: nested=%s scope=%s exclude_fields=%v\n", k, orDefault(cc.Nested, "-"), orDefault(cc.Scope, "-"), cc.ExcludeFields)
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

// agentCheckOut is one file's result in agents check --json.
type agentCheckOut struct {
	File   string    `json:"file"`
	OK     bool      `json:"ok"`
	Agent  *agentOut `json:"agent,omitempty"`
	Errors []string  `json:"errors"`
}

func agentsCheck(env Env, files []string, asJSON bool) int {
	bad := false
	results := []agentCheckOut{}
	for _, f := range files {
		r := agentCheckOut{File: f, Errors: []string{}}
		a, err := sessions.LoadAgentFile(f)
		var fe tomlfile.FileErrors
		switch {
		case errors.As(err, &fe):
			for _, e := range fe {
				r.Errors = append(r.Errors, e.Error())
			}
		case err != nil:
			r.Errors = append(r.Errors, fmt.Sprintf("%s: %v", f, err))
		default:
			r.OK = true
			out := agentJSON(a)
			r.Agent = &out
		}
		bad = bad || !r.OK
		results = append(results, r)
		for _, e := range r.Errors {
			fmt.Fprintln(env.Stderr, e)
		}
		if r.OK && !asJSON {
			fmt.Fprintf(env.Stdout, "%s: ok (agent %q: %s -> %s)\n", f, a.Name, strings.Join(a.Inputs, ", "), strings.Join(a.Outputs, ", "))
		}
	}
	if asJSON {
		_ = writeJSONOut(env.Stdout, results)
	}
	if bad {
		return 1
	}
	return 0
}
