package llm

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/llm/config"
)

// Flags are the model choices made on the command line; empty fields are unset.
type Flags struct {
	Model       string // "demo", a model name, or "<provider>/<model>"
	Provider    string
	BaseURL     string // an ad-hoc OpenAI-compatible endpoint
	APIKeyEnv   string // variable holding the key for BaseURL (default OPENAI_API_KEY)
	Temperature *float64
	MaxTokens   *int
	ConfigPath  string // explicit configuration file (must exist)
}

// Selection is the resolved model plus what the UI should say about it.
type Selection struct {
	LM          lm.LM
	Demo        bool
	Provider    string // "demo" for the demo model
	Model       string
	BaseURL     string
	KeyEnv      string // variable the key comes from ("" when none / key_command)
	KeySet      bool   // a key was found
	Description string // one line, e.g. "gpt-4o-mini via openai (https://…, key from $OPENAI_API_KEY)"
	Note        string // why this choice was made, when not obvious (e.g. "nothing configured"), and how to pin it
	Config      *config.File
	// Choices are the models the provider offers when none was named: the provider's
	// models in the file, else the server's list (GET /models). Model is the first chat
	// model among them. Empty when a model was named.
	Choices []string

	builder *builder // nil for the demo model
}

// Resolve picks the model: flags first, then the environment (OPENAI_API_KEY,
// OPENAI_BASE_URL, SESSIONBENCH_MODEL), then the configuration file. With nothing
// configured it returns the offline demo model and says so in Note. Errors name what
// was asked for and where to fix it.
//
// Provider choice, in order: --provider; --base-url (ad hoc); OPENAI_BASE_URL (ad hoc,
// "env"); a "<provider>/" prefix on the model naming a configured provider; the
// configured provider whose models list has the model; [default] provider; OpenAI
// itself when OPENAI_API_KEY is set.
func Resolve(ctx context.Context, f Flags, getenv config.Env) (*Selection, error) {
	cfg, err := LoadConfig(f, getenv)
	if err != nil {
		return nil, err
	}
	return ResolveWith(ctx, f, getenv, cfg)
}

// LoadConfig reads the configuration file the flags name (--config, which must exist),
// else the default one (config.ConfigFile), which may be missing.
func LoadConfig(f Flags, getenv config.Env) (*config.File, error) {
	if f.ConfigPath != "" {
		return config.Load(f.ConfigPath, true)
	}
	return config.Load(config.ConfigFile(getenv), false)
}

// ResolveWith is Resolve over an already loaded configuration.
func ResolveWith(ctx context.Context, f Flags, getenv config.Env, cfg *config.File) (*Selection, error) {
	model := firstNonEmpty(f.Model, getenv("SESSIONBENCH_MODEL"), cfg.Default.Model)
	where := "set by " + modelSource(f, getenv)
	if model == "demo" || strings.HasPrefix(model, "demo/") {
		return demoSelection(cfg, ""), nil
	}
	var prov config.Provider
	var found bool
	switch {
	case f.Provider != "":
		if f.Provider == "demo" {
			return demoSelection(cfg, ""), nil
		}
		if prov, found = cfg.Provider(f.Provider); !found {
			if f.Provider == "openai" {
				prov, found = config.Provider{Name: "openai", BaseURL: DefaultBaseURL, APIKeyEnv: "OPENAI_API_KEY"}, true
			} else {
				return nil, fmt.Errorf("--provider %s: no such provider in %s (configured: %s)", f.Provider, cfg.Name(), cfg.ProviderNames())
			}
		}
	case f.BaseURL != "":
		prov, found = config.Provider{Name: "flags", BaseURL: f.BaseURL, APIKeyEnv: firstNonEmpty(f.APIKeyEnv, "OPENAI_API_KEY")}, true
	case getenv("OPENAI_BASE_URL") != "":
		prov, found = config.Provider{Name: "env", BaseURL: getenv("OPENAI_BASE_URL"), APIKeyEnv: "OPENAI_API_KEY"}, true
	}
	if !found && model != "" {
		if name, rest, ok := strings.Cut(model, "/"); ok {
			if p, ok := cfg.Provider(name); ok {
				prov, found, model = p, true, rest
			}
		}
	}
	if !found && model != "" {
		for _, p := range cfg.Providers {
			for _, m := range p.Models {
				if m == model {
					prov, found = p, true
				}
			}
			if found {
				break
			}
		}
	}
	if !found && cfg.Default.Provider != "" {
		prov, found = cfg.Provider(cfg.Default.Provider)
	}
	if !found && getenv("OPENAI_API_KEY") != "" {
		prov, found = config.Provider{Name: "openai", BaseURL: DefaultBaseURL, APIKeyEnv: "OPENAI_API_KEY"}, true
		if model == "" {
			model = "gpt-4o-mini"
			where = "the default for OpenAI"
		}
	}
	if !found {
		if model != "" {
			return nil, fmt.Errorf("model %q (%s): no provider for it; add it to a provider's models in %s, or set OPENAI_BASE_URL / OPENAI_API_KEY (run and ask also take --base-url)",
				model, where, cfg.Name())
		}
		return demoSelection(cfg, "nothing is configured (see 'sessionbench models')"), nil
	}
	key, keyEnv, err := providerKey(ctx, prov, getenv)
	if err != nil {
		return nil, err
	}
	b := &builder{prov: prov, key: key, keyEnv: keyEnv, flags: f, cfg: cfg, getenv: getenv}
	if model != "" {
		return b.build(model, "")
	}
	// No model named: the provider's own list in the file, else the server's.
	choices, from := prov.Models, fmt.Sprintf("provider %q's models in %s", prov.Name, cfg.Name())
	if len(choices) == 0 {
		list, err := ListModels(ctx, Server{BaseURL: prov.BaseURL, APIKey: key, KeyEnv: keyEnv, Headers: prov.Headers, Azure: prov.Azure})
		if err != nil {
			return nil, fmt.Errorf("no model named, and the server's model list is unavailable: %w; name one with --model NAME or SESSIONBENCH_MODEL=NAME", err)
		}
		if len(list) == 0 {
			return nil, fmt.Errorf("no model named, and %s lists no models (GET /models gave an empty list); name one with --model NAME or SESSIONBENCH_MODEL=NAME", prov.BaseURL)
		}
		choices, from = list, fmt.Sprintf("the models %s lists", prov.BaseURL)
	}
	b.choices = choices
	model = ChatModel(choices)
	note := fmt.Sprintf("took %s, the first chat model of %d (%s); pin it with --model %s or SESSIONBENCH_MODEL=%s",
		model, len(choices), from, model, model)
	if len(choices) == 1 {
		note = fmt.Sprintf("took %s, the only model of %s; pin it with --model %s or SESSIONBENCH_MODEL=%s", model, from, model, model)
	}
	return b.build(model, note)
}

// builder makes the selection of one model on a resolved provider; Selection.Choose
// uses it again for another of the provider's models.
type builder struct {
	prov        config.Provider
	key, keyEnv string
	flags       Flags
	cfg         *config.File
	getenv      config.Env
	choices     []string
}

func (b *builder) build(model, note string) (*Selection, error) {
	prov, f := b.prov, b.flags
	opts := OpenAIOptions{Provider: prov.Name, BaseURL: prov.BaseURL, APIKey: b.key, APIKeyEnv: b.keyEnv, Model: model,
		Temperature: prov.Temperature, MaxTokens: prov.MaxTokens, Headers: prov.Headers, Azure: prov.Azure,
		APIVersion: prov.APIVersion, NoStreamUsage: prov.StreamUsage != nil && !*prov.StreamUsage}
	if f.Temperature != nil {
		opts.Temperature = f.Temperature
	}
	if f.MaxTokens != nil {
		opts.MaxTokens = f.MaxTokens
	}
	retry := DefaultRetry()
	if prov.MaxRetries != nil {
		retry.MaxRetries = *prov.MaxRetries
	}
	to := DefaultTimeouts()
	setDur(&to.Connect, prov.ConnectTimeout)
	setDur(&to.FirstToken, prov.FirstTokenTimeout)
	setDur(&to.Stall, prov.StallTimeout)
	setDur(&to.Total, prov.TotalTimeout)
	if v := b.getenv("SESSIONBENCH_STALL_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("SESSIONBENCH_STALL_TIMEOUT=%q: want a duration such as 90s (0 for no limit)", v)
		}
		to.Stall = d
	}
	opts.Retry, opts.Timeouts = &retry, &to
	m, err := NewOpenAI(opts)
	if err != nil {
		return nil, fmt.Errorf("provider %q: %w", prov.Name, err)
	}
	return &Selection{LM: m, Provider: prov.Name, Model: model, BaseURL: prov.BaseURL, KeyEnv: b.keyEnv, KeySet: b.key != "",
		Description: m.describe(), Note: note, Config: b.cfg, Choices: b.choices, builder: b}, nil
}

// Choose is the same provider with another model, e.g. one of Choices picked in the
// workbench. The new selection's Note is empty: the model was named.
func (s *Selection) Choose(model string) (*Selection, error) {
	if s.builder == nil {
		return nil, fmt.Errorf("%s: no other model to choose", s.Description)
	}
	return s.builder.build(model, "")
}

func setDur(dst *time.Duration, v *time.Duration) {
	if v != nil {
		*dst = *v
	}
}

func demoSelection(cfg *config.File, note string) *Selection {
	rate := float64(DefaultDemoTokenRate)
	if cfg.Demo.TokenRate != nil {
		rate = *cfg.Demo.TokenRate
	}
	d := NewDemo(DemoOptions{TokenRate: rate})
	return &Selection{LM: d, Demo: true, Provider: "demo", Model: d.Name(), Description: d.Name() + ": offline, deterministic, no network",
		Note: note, Config: cfg}
}

// providerKey reads the provider's API key from its variable or its key command. The
// key is held in memory only.
func providerKey(ctx context.Context, p config.Provider, getenv config.Env) (key, keyEnv string, err error) {
	if p.KeyCommand != "" {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "sh", "-c", p.KeyCommand)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", "", fmt.Errorf("provider %q: key_command %q failed: %w: %s", p.Name, p.KeyCommand, err, strings.TrimSpace(stderr.String()))
		}
		key := strings.TrimSpace(string(out))
		if key == "" {
			return "", "", fmt.Errorf("provider %q: key_command %q printed nothing", p.Name, p.KeyCommand)
		}
		return key, "", nil
	}
	if p.APIKeyEnv == "" {
		return "", "", nil
	}
	return getenv(p.APIKeyEnv), p.APIKeyEnv, nil
}

func modelSource(f Flags, getenv config.Env) string {
	switch {
	case f.Model != "":
		return "--model"
	case getenv("SESSIONBENCH_MODEL") != "":
		return "SESSIONBENCH_MODEL"
	}
	return "[default] model"
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
