package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/sessionbench/sessionbench/llm"
	"github.com/sessionbench/sessionbench/llm/config"
)

func init() {
	Register(Command{
		Name:    "models",
		Usage:   []string{"models [--config FILE]       list configured providers and models (keys: only where they come from)"},
		Run:     runModels,
		Ordinal: 20,
	})
}

// modelsOut is what models --json prints.
type modelsOut struct {
	Config       string        `json:"config"`
	ConfigExists bool          `json:"config_exists"`
	Default      *modelChoice  `json:"default"` // null when nothing resolves
	DefaultError string        `json:"default_error,omitempty"`
	Providers    []providerRow `json:"providers"`
}

type modelChoice struct {
	Provider    string `json:"provider"`
	Model       string `json:"model"`
	Description string `json:"description"`
	Note        string `json:"note,omitempty"`
}

// providerRow is one provider as listed: where its key comes from, never the key.
type providerRow struct {
	Name    string   `json:"name"`
	BaseURL string   `json:"base_url"`
	APIKey  string   `json:"api_key"`
	Models  []string `json:"models"`
	Default bool     `json:"default"`
	Note    string   `json:"note,omitempty"` // where the row comes from when not the file
}

func runModels(ctx context.Context, env Env) int {
	fs := newFlags("models")
	configPath := fs.String("config", "", "configuration file (default $XDG_CONFIG_HOME/sessionbench/config.toml)")
	asJSON := fs.Bool("json", false, "print JSON for machines")
	acceptDB(fs)
	pos, code, done := parseFlags(env, fs, env.Args, true)
	if done {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(env.Stderr, "sessionbench models: unexpected argument %q (see 'sessionbench models --help')\n", pos[0])
		return 2
	}
	cfg, err := llm.LoadConfig(llm.Flags{ConfigPath: *configPath}, os.Getenv)
	if err != nil {
		fmt.Fprintf(env.Stderr, "sessionbench models: %v\n", err)
		return 2
	}
	path := *configPath
	if path == "" {
		path = config.ConfigFile(os.Getenv)
	}
	out := modelsOut{Config: path}
	if _, statErr := os.Stat(path); statErr == nil {
		out.ConfigExists = true
	}
	sel, selErr := llm.ResolveWith(ctx, llm.Flags{ConfigPath: path}, os.Getenv, cfg)
	if selErr != nil {
		out.DefaultError = selErr.Error()
		sel = nil
	} else {
		out.Default = &modelChoice{Provider: sel.Provider, Model: sel.Model, Description: sel.Description, Note: sel.Note}
	}
	out.Providers = providerRows(cfg, sel)
	if *asJSON {
		if err := writeJSONOut(env.Stdout, out); err != nil {
			fmt.Fprintf(env.Stderr, "sessionbench models: %v\n", err)
			return 1
		}
		return 0
	}
	if out.ConfigExists {
		fmt.Fprintf(env.Stdout, "configuration: %s\n", path)
	} else {
		fmt.Fprintf(env.Stdout, "configuration: %s (not found; see 'go doc github.com/sessionbench/sessionbench/llm Config' for the format)\n", path)
	}
	if out.Default == nil {
		fmt.Fprintf(env.Stdout, "default model: none (%v)\n", selErr)
	} else {
		fmt.Fprintf(env.Stdout, "default model: %s\n", sel.Description)
		if sel.Note != "" {
			fmt.Fprintf(env.Stdout, "  (%s)\n", sel.Note)
		}
	}
	fmt.Fprintln(env.Stdout)
	writeProviders(env.Stdout, out.Providers, sel)
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

// providerRows lists the demo model, the configured providers and the one the
// environment defines.
func providerRows(cfg *config.File, sel *llm.Selection) []providerRow {
	isDefault := func(provider string) bool { return sel != nil && sel.Provider == provider }
	rows := []providerRow{{Name: "demo", BaseURL: "", APIKey: "none needed", Models: []string{"demo"}, Default: isDefault("demo"), Note: "offline, built in"}}
	for _, p := range cfg.Providers {
		rows = append(rows, providerRow{Name: p.Name, BaseURL: p.BaseURL, APIKey: keyStatus(p.APIKeyEnv, p.KeyCommand),
			Models: append([]string{}, p.Models...), Default: isDefault(p.Name)})
	}
	envModels := func(fallback string) []string {
		if m := os.Getenv("SESSIONBENCH_MODEL"); m != "" {
			return []string{m}
		}
		if fallback != "" {
			return []string{fallback}
		}
		return []string{}
	}
	if base := os.Getenv("OPENAI_BASE_URL"); base != "" {
		rows = append(rows, providerRow{Name: "env", BaseURL: base, APIKey: keyStatus("OPENAI_API_KEY", ""),
			Models: envModels(""), Default: isDefault("env"), Note: "$OPENAI_BASE_URL"})
	} else if _, ok := cfg.Provider("openai"); !ok && os.Getenv("OPENAI_API_KEY") != "" {
		rows = append(rows, providerRow{Name: "openai", BaseURL: llm.DefaultBaseURL, APIKey: keyStatus("OPENAI_API_KEY", ""),
			Models: envModels("gpt-4o-mini"), Default: isDefault("openai"), Note: "$OPENAI_API_KEY"})
	}
	return rows
}

func writeProviders(w io.Writer, rows []providerRow, sel *llm.Selection) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROVIDER\tBASE URL\tAPI KEY\tMODELS")
	for _, r := range rows {
		name, base := r.Name, r.BaseURL
		if r.Default {
			name += " *"
		}
		switch {
		case r.Name == "demo" && base == "":
			base = "(offline, built in)"
		case r.Name == "env":
			base += " (" + r.Note + ")"
		}
		models := make([]string, len(r.Models))
		for i, m := range r.Models {
			models[i] = m
			if r.Default && sel != nil && sel.Model == m && r.Name != "demo" {
				models[i] += " *"
			}
		}
		list := strings.Join(models, ", ")
		switch {
		case len(models) == 0 && r.Name == "env":
			list = "(set SESSIONBENCH_MODEL or --model)"
		case len(models) == 0:
			list = "(none listed; pass --model)"
		case r.Note == "$OPENAI_API_KEY" && os.Getenv("SESSIONBENCH_MODEL") == "":
			list += " (default)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, base, r.APIKey, list)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "\n* = used when no --model is given. Environment: OPENAI_API_KEY, OPENAI_BASE_URL, SESSIONBENCH_MODEL.")
}
