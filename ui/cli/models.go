package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/sessionbench/sessionbench/llm"
	"github.com/sessionbench/sessionbench/llm/config"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

func init() {
	Register(Command{
		Name: "models",
		Usage: []string{
			"models [--config FILE]       every provider with the models its server lists (GET /models) and where",
			"                             its key comes from (never the key); * marks what is used by default",
		},
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
	Models  []string `json:"models"` // as configured (the file, SESSIONBENCH_MODEL)
	// ServerModels are the models the server lists, in its order; null when it was not
	// asked (the demo model) or did not answer, and then ServerError says why.
	ServerModels []string `json:"server_models"`
	ServerError  string   `json:"server_error,omitempty"`
	Default      bool     `json:"default"`
	Note         string   `json:"note,omitempty"` // where the row comes from when not the file

	server llm.Server
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
	flags := llm.Flags{ConfigPath: *configPath}
	cfg, err := llm.LoadConfig(flags, os.Getenv)
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
	sel, selErr := llm.ResolveWith(ctx, flags, os.Getenv, cfg)
	if selErr != nil {
		out.DefaultError = selErr.Error()
		sel = nil
	} else {
		out.Default = &modelChoice{Provider: sel.Provider, Model: sel.Model, Description: sel.Description, Note: sel.Note}
	}
	out.Providers = providerRows(cfg, sel)
	askServers(ctx, out.Providers)
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
		fmt.Fprintf(env.Stdout, "configuration: %s (not found; see 'go doc github.com/sessionbench/sessionbench/llm/config File' for the format)\n", path)
	}
	if out.Default == nil {
		fmt.Fprintf(env.Stdout, "default model: none (%v)\n", selErr)
	} else {
		fmt.Fprintf(env.Stdout, "default model: %s\n", termtext.OneLine(sel.Description))
		if sel.Note != "" {
			fmt.Fprintf(env.Stdout, "  (%s)\n", termtext.OneLine(sel.Note))
		}
	}
	fmt.Fprintln(env.Stdout)
	writeProviders(env.Stdout, out.Providers, sel)
	return 0
}

// askServers fills in every provider's server list, all servers at once; each answer
// is bounded by llm.ModelsTimeout.
func askServers(ctx context.Context, rows []providerRow) {
	var wg sync.WaitGroup
	for i := range rows {
		if rows[i].server.BaseURL == "" {
			continue
		}
		wg.Add(1)
		go func(r *providerRow) {
			defer wg.Done()
			models, err := llm.ListModels(ctx, r.server)
			if err != nil {
				r.ServerError = err.Error()
				return
			}
			r.ServerModels = models
		}(&rows[i])
	}
	wg.Wait()
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
// environment defines. The server of a provider whose key comes from key_command is not
// asked (listing models should not run a password manager).
func providerRows(cfg *config.File, sel *llm.Selection) []providerRow {
	isDefault := func(provider string) bool { return sel != nil && sel.Provider == provider }
	rows := []providerRow{{Name: "demo", BaseURL: "", APIKey: "none needed", Models: []string{"demo"}, Default: isDefault("demo"), Note: "offline, built in"}}
	for _, p := range cfg.Providers {
		r := providerRow{Name: p.Name, BaseURL: p.BaseURL, APIKey: keyStatus(p.APIKeyEnv, p.KeyCommand),
			Models: append([]string{}, p.Models...), Default: isDefault(p.Name),
			server: llm.Server{BaseURL: p.BaseURL, APIKey: envKey(p.APIKeyEnv), KeyEnv: p.APIKeyEnv, Headers: p.Headers, Azure: p.Azure}}
		if p.KeyCommand != "" {
			r.server = llm.Server{}
			r.ServerError = "not asked: the key comes from key_command"
		}
		rows = append(rows, r)
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
			Models: envModels(""), Default: isDefault("env"), Note: "$OPENAI_BASE_URL",
			server: llm.Server{BaseURL: base, APIKey: os.Getenv("OPENAI_API_KEY"), KeyEnv: "OPENAI_API_KEY"}})
	} else if _, ok := cfg.Provider("openai"); !ok && os.Getenv("OPENAI_API_KEY") != "" {
		rows = append(rows, providerRow{Name: "openai", BaseURL: llm.DefaultBaseURL, APIKey: keyStatus("OPENAI_API_KEY", ""),
			Models: envModels("gpt-4o-mini"), Default: isDefault("openai"), Note: "$OPENAI_API_KEY",
			server: llm.Server{BaseURL: llm.DefaultBaseURL, APIKey: os.Getenv("OPENAI_API_KEY"), KeyEnv: "OPENAI_API_KEY"}})
	}
	return rows
}

func envKey(name string) string {
	if name == "" {
		return ""
	}
	return os.Getenv(name)
}

func writeProviders(w io.Writer, rows []providerRow, sel *llm.Selection) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROVIDER\tBASE URL\tAPI KEY")
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
		fmt.Fprintf(tw, "%s\t%s\t%s\n", name, termtext.OneLine(base), r.APIKey)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	for _, r := range rows {
		fmt.Fprintf(w, "%s:\n", r.Name)
		star := func(m string) string {
			if r.Default && sel != nil && sel.Model == m && r.Name != "demo" {
				return termtext.OneLine(m) + " *"
			}
			return termtext.OneLine(m)
		}
		list := func(ms []string) string {
			out := make([]string, len(ms))
			for i, m := range ms {
				out[i] = star(m)
			}
			return strings.Join(out, ", ")
		}
		switch {
		case r.Name == "demo":
			fmt.Fprintf(w, "  models: %s\n", list(r.Models))
			continue
		case len(r.Models) > 0 && r.Note == "$OPENAI_API_KEY" && os.Getenv("SESSIONBENCH_MODEL") == "":
			fmt.Fprintf(w, "  configured: %s (the default for OpenAI)\n", list(r.Models))
		case len(r.Models) > 0:
			fmt.Fprintf(w, "  configured: %s\n", list(r.Models))
		}
		switch {
		case r.ServerError != "":
			fmt.Fprintf(w, "  server: unreachable or no list: %s\n", termtext.OneLine(r.ServerError))
		case len(r.ServerModels) == 0:
			fmt.Fprintln(w, "  server: lists no models (name one with --model NAME or SESSIONBENCH_MODEL)")
		default:
			fmt.Fprintf(w, "  server lists %d: %s\n", len(r.ServerModels), list(r.ServerModels))
		}
	}
	fmt.Fprintln(w, "\n* = used when no --model is given. Environment: OPENAI_API_KEY, OPENAI_BASE_URL, SESSIONBENCH_MODEL.")
}
