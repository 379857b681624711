package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/tomlfile"
)

func env(m map[string]string) Env { return func(k string) string { return m[k] } }

// XDG everywhere, macOS included: no ~/Library/Application Support.
func TestPaths(t *testing.T) {
	cases := []struct {
		name                 string
		env                  map[string]string
		config, themes, data string // "" when unknown
	}{
		{"xdg set", map[string]string{"XDG_CONFIG_HOME": "/x/cfg", "XDG_DATA_HOME": "/x/data", "HOME": "/home/u"},
			"/x/cfg/sessionbench/config.toml", "/x/cfg/sessionbench/themes", "/x/data/sessionbench/sessionbench.db"},
		{"home only", map[string]string{"HOME": "/home/u"},
			"/home/u/.config/sessionbench/config.toml", "/home/u/.config/sessionbench/themes", "/home/u/.local/share/sessionbench/sessionbench.db"},
		{"relative xdg is ignored", map[string]string{"XDG_CONFIG_HOME": "cfg", "XDG_DATA_HOME": "data", "HOME": "/home/u"},
			"/home/u/.config/sessionbench/config.toml", "/home/u/.config/sessionbench/themes", "/home/u/.local/share/sessionbench/sessionbench.db"},
		{"nothing", nil, "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := env(c.env)
			if got := ConfigFile(e); got != filepath.FromSlash(c.config) {
				t.Errorf("ConfigFile = %q, want %q", got, c.config)
			}
			if got := ThemesDir(e); got != filepath.FromSlash(c.themes) {
				t.Errorf("ThemesDir = %q, want %q", got, c.themes)
			}
			db, err := DatabaseFile(e)
			if c.data == "" {
				if err == nil || !strings.Contains(err.Error(), "--db PATH") {
					t.Errorf("DatabaseFile = %q, %v; want an error suggesting --db", db, err)
				}
			} else if err != nil || db != filepath.FromSlash(c.data) {
				t.Errorf("DatabaseFile = %q, %v; want %q", db, err, c.data)
			}
		})
	}
}

const sample = `# models
theme = "light"

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
stall_timeout = "45s"

[demo]
token_rate = 0

[keys]
fork = ["F"]
`

// One decode gives every section: the workbench's, the models' and the demo model's.
func TestParseEverySection(t *testing.T) {
	f, err := Parse("cfg.toml", []byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	if f.Theme != "light" || f.Keys["fork"][0] != "F" || f.Default.Provider != "ollama" || len(f.Providers) != 2 ||
		f.Providers[1].Line != 13 || f.Demo.TokenRate == nil || *f.Demo.TokenRate != 0 {
		t.Fatalf("file = %+v", f)
	}
	p := f.Providers[1]
	if p.APIKeyEnv != "MY_OPENAI_KEY" || p.Headers["X-Title"] != "sessionbench" || *p.Temperature != 0 ||
		*p.MaxTokens != 512 || *p.FirstTokenTimeout != 30*time.Second || *p.StallTimeout != 45*time.Second {
		t.Errorf("provider = %+v", p)
	}
	if e := f.Errorf("keys.fork", "taken"); e.Line != 29 || e.Error() != "cfg.toml:29: keys.fork: taken" {
		t.Errorf("Errorf = %q (line %d)", e, e.Line)
	}
}

func TestErrorsNameFileLineAndKey(t *testing.T) {
	const file = "/home/u/.config/sessionbench/config.toml"
	cases := []struct {
		name, text string
		line       int
		key, msg   string
	}{
		{"syntax", "[default]\nmodel = \n", 2, "default.model", "expected value"},
		{"wrong type", "[[providers]]\nname = \"x\"\nbase_url = \"http://h\"\nmax_tokens = \"many\"\n", 4, "providers.max_tokens", "incompatible types"},
		{"bad duration", "[[providers]]\nname = \"x\"\nbase_url = \"http://h\"\ntotal_timeout = \"5 minutes\"\n", 4, "providers.total_timeout", "invalid duration"},
		{"unknown key", "[[providers]]\nname = \"x\"\nbase_url = \"http://h\"\nbaseurl = \"http://h\"\n", 4, "providers.baseurl", "unknown key (known: name, base_url"},
		{"unknown table", "[defaults]\nmodel = \"m\"\n", 1, "defaults", "unknown key"},
		{"missing base_url", "[[providers]]\nname = \"x\"\n", 1, "providers[1].base_url", "has no base_url"},
		{"bad url, second provider", "[[providers]]\nname = \"a\"\nbase_url = \"http://h\"\n[[providers]]\nname = \"x\"\nbase_url = \"localhost:11434\"\n", 6, "providers[2].base_url", "must start with http"},
		{"key in file", "[[providers]]\nname = \"x\"\nbase_url = \"http://h\"\napi_key_env = \"sk-abc123\"\n", 4, "providers[1].api_key_env", "looks like a key"},
		{"duplicate", "[[providers]]\nname = \"x\"\nbase_url = \"http://h\"\n[[providers]]\nname = \"x\"\nbase_url = \"http://h\"\n", 5, "providers[2].name", "already used"},
		{"unknown default", "[default]\nprovider = \"nope\"\n", 2, "default.provider", `no provider named "nope"`},
		{"azure", "[[providers]]\nname = \"az\"\nbase_url = \"https://x.openai.azure.com\"\nazure = true\n", 1, "providers[1].api_version", "api_version"},
		{"negative stall", "[[providers]]\nname = \"x\"\nbase_url = \"http://h\"\nstall_timeout = \"-1s\"\n", 4, "providers[1].stall_timeout", "must not be negative"},
		{"empty model", "[[providers]]\nname = \"x\"\nbase_url = \"http://h\"\nmodels = [\"a\", \" \"]\n", 4, "providers[1].models[2]", "model 2 is empty"},
		{"key without keys", "[keys]\nfork = []\n", 2, "keys.fork", "has no keys"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(file, []byte(c.text))
			var fe *tomlfile.FileError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a *tomlfile.FileError", err)
			}
			if fe.File != file || fe.Line != c.line || fe.Key != c.key || !strings.Contains(fe.Msg, c.msg) {
				t.Errorf("got %q (line %d key %q), want line %d key %q containing %q", err, fe.Line, fe.Key, c.line, c.key, c.msg)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(sample), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		path      string
		mustExist bool
		wantPath  string // the File's Path; "-" for an error
	}{
		{"file", path, false, path},
		{"missing default file is no configuration", filepath.Join(dir, "none.toml"), false, ""},
		{"missing named file is an error", filepath.Join(dir, "none.toml"), true, "-"},
		{"no path", "", false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Load(c.path, c.mustExist)
			if c.wantPath == "-" {
				if err == nil {
					t.Fatal("accepted")
				}
				return
			}
			if err != nil || f.Path != c.wantPath {
				t.Fatalf("Load = %+v, %v", f, err)
			}
		})
	}
}
