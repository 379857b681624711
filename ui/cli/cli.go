// Package cli holds the headless subcommands (wire, models, ask, run, session, export,
// import, agents). Each command registers itself; main.go only dispatches.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/sessionbench/sessionbench/llm/config"
)

// Env is what a command may touch: its arguments and standard streams. Main makes the
// streams safe for a terminal before a command sees them (guard, terminal.go).
type Env struct {
	Args   []string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Terminal says standard output is a terminal, so its text is sanitised; Main also
	// sets it when Stdout is an *os.File that is one.
	Terminal bool
	// Workbench opens the terminal workbench on the database at db until the user quits
	// (proxy --open). main.go provides it, so this package stays free of the terminal UI;
	// nil where there is none.
	Workbench func(ctx context.Context, db, config string) error
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
	b.WriteString("  help [COMMAND [SUB]]         this text, or a command's usage and flags (same as COMMAND --help)\n")
	b.WriteString("\nsession, export, import, run, models, ask and agents take --db PATH and --json.\n")
	b.WriteString("Exit codes: 0 done, 1 failed (not found, refused, busy, a turn that failed), 2 bad input\n")
	b.WriteString("(flags, arguments, files), 130 cancelled or interrupted by Ctrl+C, 143 by SIGTERM, 129 by\n")
	b.WriteString("SIGHUP. A turn stopped by a signal is kept interrupted and resumable ('session retry');\n")
	b.WriteString("a failed or cancelled turn is kept beside its branch ('session show', 'session retry').\n")
	b.WriteString("Errors go to standard error, with --json too, as one line saying what and where.\n")
	b.WriteString("Text from models, files and servers is sanitised on a terminal (controls shown as ␛, ␇,\n")
	b.WriteString("⟨RLO⟩); piped standard output keeps the exact bytes; --json escapes them.\n")
	return b.String()
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

// commandNames lists the registered commands in usage order.
func commandNames() []string {
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
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.Name
	}
	return names
}

// usageOf returns the usage lines of a command or subcommand path ("export",
// "session fork"), with their indented continuation lines.
func usageOf(path string) []string {
	name, _, _ := strings.Cut(path, " ")
	c, ok := registry[name]
	if !ok {
		return nil
	}
	var out []string
	in := false
	for _, u := range c.Usage {
		if !strings.HasPrefix(u, " ") {
			in = u == path || strings.HasPrefix(u, path+" ")
		}
		if in {
			out = append(out, u)
		}
	}
	return out
}

// subcommandsOf lists a command's subcommands as its usage lines name them ("session"
// -> ls, show, ...); nil for a command without subcommands.
func subcommandsOf(name string) []string {
	c, ok := registry[name]
	if !ok {
		return nil
	}
	var subs []string
	seen := map[string]bool{}
	for _, u := range c.Usage { // continuation lines (indented) are prose, not forms
		f := strings.Fields(u)
		if strings.HasPrefix(u, " ") || len(f) < 2 || f[0] != name || !isSubcommandWord(f[1]) || seen[f[1]] {
			continue
		}
		seen[f[1]] = true
		subs = append(subs, f[1])
	}
	return subs
}

// isSubcommandWord: subcommands are lower-case words ("rm-branch"); arguments are
// upper-case (ID, FILE) and flags or options start with '-' or '['.
func isSubcommandWord(w string) bool {
	for _, r := range w {
		if (r < 'a' || r > 'z') && r != '-' {
			return false
		}
	}
	return w != "" && w[0] != '-'
}

// commandHelp is the help of a command with subcommands: its usage lines.
func commandHelp(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: sessionbench %s SUBCOMMAND ...\n\n", name)
	for _, u := range usageOf(name) {
		b.WriteString("  " + u + "\n")
	}
	fmt.Fprintf(&b, "\n'sessionbench %s SUBCOMMAND --help' shows a subcommand's flags.\n", name)
	return b.String()
}

// unknownSubcommand reports a missing or unknown subcommand with the list of known ones.
func unknownSubcommand(env Env, name, sub string) int {
	what := fmt.Sprintf("unknown subcommand %q", sub)
	if sub == "" {
		what = "missing subcommand"
	}
	fmt.Fprintf(env.Stderr, "sessionbench %s: %s; want one of: %s (see 'sessionbench help %s')\n",
		name, what, strings.Join(subcommandsOf(name), ", "), name)
	return 2
}

// newFlags makes the flag set of a (sub)command whose errors and help parseFlags
// reports: the flag package's own output (the whole flag list on every mistake, on
// standard error even when help was asked for) is switched off.
func newFlags(path string) *flag.FlagSet {
	fs := flag.NewFlagSet(path, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args for the command fs was made for. Flags may come before,
// between or after positional arguments when interleaved is set; otherwise the first
// positional argument ends the flags (ask TEXT...). When done is set the command must
// return code at once: 0 after -h/--help printed the usage and flags on standard
// output, 2 after a bad flag was reported, naming the flag and the command.
func parseFlags(env Env, fs *flag.FlagSet, args []string, interleaved bool) (pos []string, code int, done bool) {
	var err error
	if interleaved {
		pos, err = parseInterleaved(fs, args)
	} else if err = fs.Parse(args); err == nil {
		pos = fs.Args()
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		printFlagHelp(env.Stdout, fs)
		return nil, 0, true
	case err != nil:
		fmt.Fprintf(env.Stderr, "sessionbench %s: %v (see 'sessionbench %s --help')\n", fs.Name(), err, fs.Name())
		return nil, 2, true
	}
	return pos, 0, false
}

// acceptDB gives a command that uses no database the --db flag every headless command
// takes, so a script may pass the same --db to all of them.
func acceptDB(fs *flag.FlagSet) {
	fs.String("db", "", "accepted for uniformity with the other commands; this one uses no database")
}

// printFlagHelp writes a (sub)command's usage lines and its flags.
func printFlagHelp(w io.Writer, fs *flag.FlagSet) {
	lines := usageOf(fs.Name())
	if len(lines) == 0 {
		fmt.Fprintf(w, "usage: sessionbench %s [flags]\n", fs.Name())
	} else {
		fmt.Fprintln(w, "usage:")
	}
	const prog = "sessionbench "
	for _, u := range lines {
		if strings.HasPrefix(u, " ") {
			u = strings.Repeat(" ", len(prog)) + u // continuation: keep it under its text
		} else {
			u = prog + u
		}
		fmt.Fprintln(w, "  "+u)
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprintln(w, "\nflags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// parseInterleaved parses flags that may come before, between or after the positional
// arguments ("fork ID --at 3 --name b"); the flag package alone stops at the first
// positional argument. After "--" everything is positional.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil // the flag package consumed the terminator
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// Main dispatches args[0] to its command. It returns the process exit code.
// "help CMD [SUB]" is "CMD [SUB] --help"; "CMD --help" of a command with subcommands
// lists them.
func Main(ctx context.Context, env Env) int {
	env, flush := guard(env)
	defer flush()
	prevWarn := config.OnWarning
	config.OnWarning = func(msg string) { fmt.Fprintf(env.Stderr, "sessionbench: warning: %s\n", msg) }
	defer func() { config.OnWarning = prevWarn }()
	args := env.Args
	if len(args) == 0 || isHelp(args[0]) || (args[0] == "help" && len(args) == 1) {
		fmt.Fprint(env.Stdout, Usage())
		return 0
	}
	if args[0] == "help" {
		args = append(append([]string(nil), args[1:]...), "--help")
	}
	c, ok := Lookup(args[0])
	if !ok {
		fmt.Fprintf(env.Stderr, "sessionbench: unknown command %q; commands: %s (see 'sessionbench help')\n",
			args[0], strings.Join(commandNames(), ", "))
		return 2
	}
	if len(args) == 2 && isHelp(args[1]) && len(subcommandsOf(c.Name)) > 0 {
		fmt.Fprint(env.Stdout, commandHelp(c.Name))
		return 0
	}
	sub := env
	sub.Args = args[1:]
	return c.Run(ctx, sub)
}
