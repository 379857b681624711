package llm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const sampleConfig = `# models
[default]
provider = "ollama"
model = "llama3.1:8b"

[[providers]]
name = "ollama"
base_url = "http://localhost:11434/v1"
models = ["llama3.1:8b", "qwen2.5:7b"]

[[providers]]
name = "openai"
base_url = "https://api.openai.com/v1"
api_key_env = "MY_OPENAI_KEY"
models = ["gpt-4o-mini"]
headers = { "X-Title" = "sessionbench" }
temperature = 0.0
max_tokens = 512
max_retries = 2
first_token_timeout = "30s"

[demo]
token_rate = 0
`

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig("cfg.toml", []byte(sampleConfig))
	if err != nil {
		t.Fatal(err)
	}
	if c.Default.Provider != "ollama" || len(c.Providers) != 2 || c.Providers[1].Line != 11 {
		t.Fatalf("config = %+v", c)
	}
	p := c.Providers[1]
	if p.APIKeyEnv != "MY_OPENAI_KEY" || p.Headers["X-Title"] != "sessionbench" || *p.Temperature != 0 ||
		*p.MaxTokens != 512 || *p.FirstTokenTimeout != 30*time.Second {
		t.Errorf("provider = %+v", p)
	}
}

func TestConfigErrorsNameFileLineAndKey(t *testing.T) {
	cases := []struct {
		name, text string
		line       int
		key, msg   string
	}{
		{"syntax", "[default]\nmodel = \n", 2, "default.model", "expected value"},
		{"wrong type", "[[providers]]\nname = \"x\"\nbase_url = \"http://h\"\nmax_tokens = \"many\"\n", 4, "providers.max_tokens", "incompatible types"},
		{"bad duration", "[[providers]]\nname = \"x\"\nbase_url = \"http://h\"\ntotal_timeout = \"5 minutes\"\n", 4, "providers.total_timeout", "invalid duration"},
		{"unknown key", "[[providers]]\nname = \"x\"\nbase_url = \"http://h\"\nbaseurl = \"http://h\"\n", 4, "providers.baseurl", "unknown key"},
		{"unknown table", "[defaults]\nmodel = \"m\"\n", 1, "defaults", "unknown key"},
		{"missing base_url", "[[providers]]\nname = \"x\"\n", 1, "providers.base_url", "has no base_url"},
		{"bad url", "[[providers]]\nname = \"x\"\nbase_url = \"localhost:11434\"\n", 3, "providers.base_url", "must start with http"},
		{"key in file", "[[providers]]\nname = \"x\"\nbase_url = \"http://h\"\napi_key_env = \"sk-abc123\"\n", 4, "providers.api_key_env", "looks like a key"},
		{"duplicate", "[[providers]]\nname = \"x\"\nbase_url = \"http://h\"\n[[providers]]\nname = \"x\"\nbase_url = \"http://h\"\n", 5, "providers.name", "already used"},
		{"unknown default", "[default]\nprovider = \"nope\"\n", 2, "default.provider", `no provider named "nope"`},
		{"azure", "[[providers]]\nname = \"az\"\nbase_url = \"https://x.openai.azure.com\"\nazure = true\n", 1, "providers.api_version", "api_version"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseConfig("/home/u/.config/sessionbench/config.toml", []byte(c.text))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a ConfigError", err)
			}
			if ce.File != "/home/u/.config/sessionbench/config.toml" || ce.Line != c.line || ce.Key != c.key || !strings.Contains(ce.Msg, c.msg) {
				t.Errorf("got %q (line %d key %q), want line %d key %q containing %q", err, ce.Line, ce.Key, c.line, c.key, c.msg)
			}
		})
	}
}

func env(m map[string]string) Env { return func(k string) string { return m[k] } }

func TestResolve(t *testing.T) {
	cfg, err := ParseConfig("cfg.toml", []byte(sampleConfig))
	if err != nil {
		t.Fatal(err)
	}
	empty := &Config{}
	cases := []struct {
		name                string
		flags               Flags
		env                 map[string]string
		cfg                 *Config
		provider, model     string
		baseURL, keyEnv     string
		keySet, demo        bool
		wantErr, wantInNote string
	}{
		{name: "nothing configured", cfg: empty, demo: true, provider: "demo", wantInNote: "nothing is configured"},
		{name: "demo by name", flags: Flags{Model: "demo"}, cfg: cfg, demo: true, provider: "demo"},
		{name: "config default", cfg: cfg, provider: "ollama", model: "llama3.1:8b", baseURL: "http://localhost:11434/v1"},
		{name: "model found in a provider's list", flags: Flags{Model: "gpt-4o-mini"}, env: map[string]string{"MY_OPENAI_KEY": "k"}, cfg: cfg,
			provider: "openai", model: "gpt-4o-mini", baseURL: DefaultBaseURL, keyEnv: "MY_OPENAI_KEY", keySet: true},
		{name: "provider prefix", flags: Flags{Model: "openai/gpt-4.1"}, cfg: cfg, provider: "openai", model: "gpt-4.1", keyEnv: "MY_OPENAI_KEY", baseURL: DefaultBaseURL},
		{name: "env model beats config", env: map[string]string{"SESSIONBENCH_MODEL": "qwen2.5:7b"}, cfg: cfg, provider: "ollama", model: "qwen2.5:7b", baseURL: "http://localhost:11434/v1"},
		{name: "flag beats env", flags: Flags{Model: "llama3.1:8b"}, env: map[string]string{"SESSIONBENCH_MODEL": "qwen2.5:7b"}, cfg: cfg, provider: "ollama", model: "llama3.1:8b", baseURL: "http://localhost:11434/v1"},
		{name: "env base url beats config", env: map[string]string{"OPENAI_BASE_URL": "http://vllm:8000/v1", "SESSIONBENCH_MODEL": "mistral"}, cfg: cfg,
			provider: "env", model: "mistral", baseURL: "http://vllm:8000/v1", keyEnv: "OPENAI_API_KEY"},
		{name: "flag base url beats env", flags: Flags{BaseURL: "http://localhost:1234/v1", Model: "local"}, env: map[string]string{"OPENAI_BASE_URL": "http://vllm:8000/v1"}, cfg: cfg,
			provider: "flags", model: "local", baseURL: "http://localhost:1234/v1", keyEnv: "OPENAI_API_KEY"},
		{name: "only an OpenAI key", env: map[string]string{"OPENAI_API_KEY": "sk-x"}, cfg: empty, provider: "openai", model: "gpt-4o-mini", baseURL: DefaultBaseURL, keyEnv: "OPENAI_API_KEY", keySet: true},
		{name: "unknown model", flags: Flags{Model: "mystery"}, cfg: empty, wantErr: `model "mystery" (set by --model): no provider`},
		{name: "unknown provider", flags: Flags{Provider: "nope"}, cfg: cfg, wantErr: "--provider nope: no such provider in cfg.toml (configured: ollama, openai)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := ResolveWith(context.Background(), c.flags, env(c.env), c.cfg)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Demo != c.demo || s.Provider != c.provider || !strings.Contains(s.Note, c.wantInNote) {
				t.Fatalf("selection = %+v", s)
			}
			if c.demo {
				if s.LM.Name() != DemoName {
					t.Errorf("demo LM named %q", s.LM.Name())
				}
				return
			}
			if s.Model != c.model || s.BaseURL != c.baseURL || s.KeyEnv != c.keyEnv || s.KeySet != c.keySet || s.LM.Name() != c.model {
				t.Errorf("selection = %+v", s)
			}
			if strings.Contains(s.Description, "sk-x") {
				t.Errorf("description leaks the key: %s", s.Description)
			}
		})
	}
}

func TestResolveKeyCommandAndFlagsOverrides(t *testing.T) {
	cfg, err := ParseConfig("cfg.toml", []byte("[[providers]]\nname = \"p\"\nbase_url = \"http://h/v1\"\nkey_command = \"echo secret-from-command\"\nmodels = [\"m\"]\ntemperature = 0.3\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := ResolveWith(context.Background(), Flags{Model: "m", Temperature: ptr(0.9)}, env(nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	o := s.LM.(*OpenAI).Options()
	if o.APIKey != "secret-from-command" || *o.Temperature != 0.9 || !s.KeySet || strings.Contains(s.Description, "secret") {
		t.Errorf("options %+v selection %+v", o, s)
	}
	cfg.Providers[0].KeyCommand = "exit 3"
	if _, err := ResolveWith(context.Background(), Flags{Model: "m"}, env(nil), cfg); err == nil || !strings.Contains(err.Error(), "key_command") {
		t.Errorf("failing key command: err = %v", err)
	}
}

func TestResolveReadsTheConfigFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sessionbench", "config.toml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(sampleConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Resolve(context.Background(), Flags{}, env(map[string]string{"XDG_CONFIG_HOME": dir}))
	if err != nil || s.Provider != "ollama" || s.Config.Path != path {
		t.Fatalf("selection %+v err %v", s, err)
	}
	// A missing default file is no configuration; a missing explicit one is an error.
	if s, err := Resolve(context.Background(), Flags{}, env(map[string]string{"XDG_CONFIG_HOME": t.TempDir()})); err != nil || !s.Demo {
		t.Errorf("missing default file: %+v %v", s, err)
	}
	if _, err := Resolve(context.Background(), Flags{ConfigPath: filepath.Join(dir, "nope.toml")}, env(nil)); err == nil {
		t.Error("missing explicit file accepted")
	}
}

// The workbench's keys (theme, [keys]) share the file; they are not unknown keys here.
func TestConfigAcceptsWorkbenchKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	text := "theme = \"light\"\n[default]\nmodel = \"demo\"\n[keys]\nfork = [\"F\"]\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(path, true)
	if err != nil {
		t.Fatalf("a config with theme and [keys] is refused: %v", err)
	}
	if c.Default.Model != "demo" {
		t.Errorf("default model = %q", c.Default.Model)
	}
}
