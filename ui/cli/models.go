package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/sessionbench/sessionbench/llm"
)

func init() {
	Register(Command{
		Name:    "models",
		Usage:   []string{"models [--config FILE]       list configured providers and models (keys: only where they come from)"},
		Run:     runModels,
		Ordinal: 20,
	})
}

func runModels(ctx context.Context, env Env) int {
	fs := flag.NewFlagSet("models", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	configPath := fs.String("config", "", "configuration file (default $XDG_CONFIG_HOME/sessionbench/config.toml)")
	if err := fs.Parse(env.Args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(env.Stderr, "models: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	path := *configPath
	if path == "" {
		path = llm.DefaultConfigPath(os.Getenv)
	}
	cfg, err := llm.LoadConfig(path, *configPath != "")
	if err != nil {
		fmt.Fprintf(env.Stderr, "models: %v\n", err)
		return 2
	}
	if _, statErr := os.Stat(path); statErr != nil {
		fmt.Fprintf(env.Stdout, "configuration: %s (not found; see 'go doc github.com/sessionbench/sessionbench/llm Config' for the format)\n", path)
	} else {
		fmt.Fprintf(env.Stdout, "configuration: %s\n", path)
	}
	sel, selErr := llm.ResolveWith(ctx, llm.Flags{ConfigPath: path}, os.Getenv, cfg)
	switch {
	case selErr != nil:
		fmt.Fprintf(env.Stdout, "default model: none (%v)\n", selErr)
	default:
		fmt.Fprintf(env.Stdout, "default model: %s\n", sel.Description)
		if sel.Note != "" {
			fmt.Fprintf(env.Stdout, "  (%s)\n", sel.Note)
		}
	}
	fmt.Fprintln(env.Stdout)
	writeProviders(env.Stdout, cfg, sel)
	return 0
}

// keyStatus says where a provider's key comes from and whether it is there, never the key.
func keyStatus(keyEnv, keyCommand string) string {
	switch {
	case keyCommand != "":
		return "key_command"
	case keyEnv == "":
		return "none"
	case os.Getenv(keyEnv) != "":
		return "$" + keyEnv + " (set)"
	}
	return "$" + keyEnv + " (not set)"
}

func writeProviders(w io.Writer, cfg *llm.Config, sel *llm.Selection) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROVIDER\tBASE URL\tAPI KEY\tMODELS")
	mark := func(provider string) string {
		if sel != nil && sel.Provider == provider {
			return provider + " *"
		}
		return provider
	}
	models := func(provider string, ms []string) string {
		out := make([]string, len(ms))
		for i, m := range ms {
			out[i] = m
			if sel != nil && sel.Provider == provider && sel.Model == m {
				out[i] += " *"
			}
		}
		if len(out) == 0 {
			return "(none listed; pass --model)"
		}
		return strings.Join(out, ", ")
	}
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", mark("demo"), "(offline, built in)", "none needed", "demo")
	for _, p := range cfg.Providers {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", mark(p.Name), p.BaseURL, keyStatus(p.APIKeyEnv, p.KeyCommand), models(p.Name, p.Models))
	}
	if base := os.Getenv("OPENAI_BASE_URL"); base != "" {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", mark("env"), base+" ($OPENAI_BASE_URL)", keyStatus("OPENAI_API_KEY", ""),
			firstSet(os.Getenv("SESSIONBENCH_MODEL"), "(set SESSIONBENCH_MODEL or --model)"))
	} else if _, ok := cfg.Provider("openai"); !ok && os.Getenv("OPENAI_API_KEY") != "" {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", mark("openai"), llm.DefaultBaseURL, keyStatus("OPENAI_API_KEY", ""),
			firstSet(os.Getenv("SESSIONBENCH_MODEL"), "gpt-4o-mini (default)"))
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "\n* = used when no --model is given. Environment: OPENAI_API_KEY, OPENAI_BASE_URL, SESSIONBENCH_MODEL.")
}

func firstSet(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
