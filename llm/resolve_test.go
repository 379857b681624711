package llm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/llm/config"
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

func env(m map[string]string) config.Env { return func(k string) string { return m[k] } }

func TestResolve(t *testing.T) {
	cfg, err := config.Parse("cfg.toml", []byte(sampleConfig))
	if err != nil {
		t.Fatal(err)
	}
	empty := &config.File{}
	cases := []struct {
		name                string
		flags               Flags
		env                 map[string]string
		cfg                 *config.File
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
	cfg, err := config.Parse("cfg.toml", []byte("[[providers]]\nname = \"p\"\nbase_url = \"http://h/v1\"\nkey_command = \"echo secret-from-command\"\nmodels = [\"m\"]\ntemperature = 0.3\n"))
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
