// Package cli holds the headless subcommands (wire, models, ask, run, session, export,
// import, agents). Each command registers itself; main.go only dispatches.
package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Env is what a command may touch: its arguments and standard streams.
type Env struct {
	Args   []string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Command is one subcommand.
type Command struct {
	Name    string   // first word, e.g. "wire"
	Usage   []string // one line per form, e.g. "wire format   render ... (JSON on stdin)"
	Run     func(ctx context.Context, env Env) int
	Ordinal int // position in the usage listing
}

var registry = map[string]Command{}

// Register adds a command; called from init functions.
func Register(c Command) { registry[c.Name] = c }

// Lookup finds a command by name.
func Lookup(name string) (Command, bool) {
	c, ok := registry[name]
	return c, ok
}

// Usage lists every registered command.
func Usage() string {
	var b strings.Builder
	b.WriteString("sessionbench: a workbench for multi-step LLM programs\n\n")
	b.WriteString("usage:\n  sessionbench                 open the workbench (offline demo model unless configured)\n")
	b.WriteString("  sessionbench <command> ...\n\ncommands:\n")
	cmds := make([]Command, 0, len(registry))
	for _, c := range registry {
		cmds = append(cmds, c)
	}
	sort.Slice(cmds, func(i, j int) bool {
		if cmds[i].Ordinal != cmds[j].Ordinal {
			return cmds[i].Ordinal < cmds[j].Ordinal
		}
		return cmds[i].Name < cmds[j].Name
	})
	for _, c := range cmds {
		for _, u := range c.Usage {
			b.WriteString("  " + u + "\n")
		}
	}
	b.WriteString("  help                         show this text\n")
	return b.String()
}

// Main dispatches args[0] to its command. It returns the process exit code.
func Main(ctx context.Context, env Env) int {
	if len(env.Args) == 0 || env.Args[0] == "help" || env.Args[0] == "-h" || env.Args[0] == "--help" {
		fmt.Fprint(env.Stdout, Usage())
		return 0
	}
	c, ok := Lookup(env.Args[0])
	if !ok {
		fmt.Fprintf(env.Stderr, "sessionbench: unknown command %q (see 'sessionbench help')\n", env.Args[0])
		return 2
	}
	sub := env
	sub.Args = env.Args[1:]
	return c.Run(ctx, sub)
}
