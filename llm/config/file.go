package config

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/sessionbench/sessionbench/core/tomlfile"
)

// File is the configuration file, ConfigFile() (~/.config/sessionbench/config.toml),
// every section of it, decoded once:
//
//	theme = "light"                 # the workbench's theme
//	[keys]                          # the workbench's key bindings: action = [keys]
//	fork = ["F"]                    # or one key: fork = "F"
//
//	[default]
//	provider = "ollama"             # provider used when none is named
//	model = "llama3.1:8b"           # model used when none is named
//
//	[[providers]]
//	name = "ollama"
//	base_url = "http://localhost:11434/v1"
//	models = ["llama3.1:8b", "qwen2.5:7b"]  # optional: the server's GET /models is asked
//
//	[[providers]]
//	name = "openai"
//	base_url = "https://api.openai.com/v1"
//	api_key_env = "OPENAI_API_KEY"  # the NAME of the variable holding the key
//	# key_command = "pass show openai"  # or a command printing the key
//	models = ["gpt-4o-mini", "gpt-4o"]
//	headers = { "X-Title" = "sessionbench" }
//	temperature = 0.0               # defaults for requests that do not set them
//	max_tokens = 2048
//	max_retries = 4
//	connect_timeout = "10s"
//	first_token_timeout = "2m"
//	stall_timeout = "60s"           # a stream silent this long has stalled
//	total_timeout = "10m"
//	stream_usage = true             # false for servers rejecting stream_options
//	# azure = true, api_version = "2024-06-01" for Azure OpenAI (model = deployment)
//
//	[demo]
//	token_rate = 60                 # offline demo model: tokens per second
//
// Keys are never stored in the file: only where to find them. A file that holds one
// anyway (a header carrying a credential, a key in key_command) and that other users
// can read is reported through OnWarning with the chmod that makes it private.
type File struct {
	Path      string             `toml:"-"` // the file read; "" when there was none
	Theme     string             `toml:"theme"`
	Keys      map[string]KeyList `toml:"keys"`
	Default   DefaultChoice      `toml:"default"`
	Providers []Provider         `toml:"providers"`
	Demo      DemoConfig         `toml:"demo"`

	doc *tomlfile.TOML // positions, for problems the reader finds later (nil without a file)
}

// KeyList is the keys of one action in [keys]: a list of keys, or one key as a string.
type KeyList []string

// UnmarshalTOML takes "F" as well as ["F", "ctrl+f"].
func (k *KeyList) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case string:
		*k = KeyList{v}
		return nil
	case []any:
		out := make(KeyList, 0, len(v))
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				return fmt.Errorf("key %d is %s, want a string like \"ctrl+f\"", i+1, tomlKind(e))
			}
			out = append(out, s)
		}
		*k = out
		return nil
	}
	return fmt.Errorf("want a key (\"F\") or a list of keys ([\"F\", \"ctrl+f\"]), got %s", tomlKind(v))
}

// tomlKind names a decoded TOML value's kind as the file's author wrote it.
func tomlKind(v any) string {
	switch v.(type) {
	case int64, float64:
		return "a number"
	case bool:
		return "true or false"
	case map[string]any:
		return "a table"
	case []any:
		return "a list"
	case time.Time:
		return "a date"
	}
	return fmt.Sprintf("%T", v)
}

// DefaultChoice is the [default] table.
type DefaultChoice struct {
	Provider string `toml:"provider"`
	Model    string `toml:"model"`
}

// DemoConfig is the [demo] table.
type DemoConfig struct {
	TokenRate *float64 `toml:"token_rate"`
}

// Provider is one [[providers]] entry.
type Provider struct {
	Name              string            `toml:"name"`
	BaseURL           string            `toml:"base_url"`
	APIKeyEnv         string            `toml:"api_key_env"`
	KeyCommand        string            `toml:"key_command"`
	Models            []string          `toml:"models"`
	Headers           map[string]string `toml:"headers"`
	Azure             bool              `toml:"azure"`
	APIVersion        string            `toml:"api_version"`
	StreamUsage       *bool             `toml:"stream_usage"`
	Temperature       *float64          `toml:"temperature"`
	MaxTokens         *int              `toml:"max_tokens"`
	MaxRetries        *int              `toml:"max_retries"`
	ConnectTimeout    *time.Duration    `toml:"connect_timeout"`
	FirstTokenTimeout *time.Duration    `toml:"first_token_timeout"`
	StallTimeout      *time.Duration    `toml:"stall_timeout"`
	TotalTimeout      *time.Duration    `toml:"total_timeout"`
	Line              int               `toml:"-"` // line of its [[providers]] header (0: not from a file)
}

// Provider finds a provider by name.
func (f *File) Provider(name string) (Provider, bool) {
	for _, p := range f.Providers {
		if p.Name == name {
			return p, true
		}
	}
	return Provider{}, false
}

// Errorf is a problem the reader of a section found at key ("keys.fork"), located in
// the file. Without a file it names the key only.
func (f *File) Errorf(key, format string, args ...any) *tomlfile.FileError {
	if f.doc == nil {
		return &tomlfile.FileError{File: f.Name(), Key: tomlfile.DisplayKey(key), Msg: fmt.Sprintf(format, args...)}
	}
	return f.doc.Errorf(key, format, args...)
}

// Name is the file's path for messages ("the configuration file" when there is none).
func (f *File) Name() string {
	if f.Path == "" {
		return "the configuration file"
	}
	return f.Path
}

// ProviderNames lists the configured providers for messages ("none" when there are none).
func (f *File) ProviderNames() string {
	if len(f.Providers) == 0 {
		return "none"
	}
	names := make([]string, len(f.Providers))
	for i, p := range f.Providers {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// Load reads the file at path. A missing file is an empty configuration, not an error,
// unless mustExist is set (a path the user named). path "" is no file.
func Load(path string, mustExist bool) (*File, error) {
	if path == "" {
		return &File{}, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && !mustExist {
		return &File{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading configuration: %w", err)
	}
	f, err := Parse(path, data)
	if err == nil {
		warnExposed(path, data, f)
	}
	return f, err
}

// Parse decodes and checks configuration text; path names it in errors. The first
// problem is returned as a *tomlfile.FileError.
func Parse(path string, data []byte) (*File, error) {
	f := &File{}
	doc, err := tomlfile.Decode(path, data, f)
	if err != nil {
		var fe tomlfile.FileErrors
		if errors.As(err, &fe) && len(fe) > 0 {
			return nil, fe[0]
		}
		return nil, err
	}
	f.Path, f.doc = path, doc
	if errs := doc.UnknownKeys(nil, knownKeys); len(errs) > 0 {
		return nil, errs[0]
	}
	for i := range f.Providers {
		f.Providers[i].Line = doc.Line(fmt.Sprintf("providers.%d", i))
		if err := f.checkProvider(i); err != nil {
			return nil, err
		}
	}
	if p := f.Default.Provider; p != "" {
		if _, ok := f.Provider(p); !ok {
			return nil, doc.Errorf("default.provider", "no provider named %q (configured: %s)", p, f.ProviderNames())
		}
	}
	if r := f.Demo.TokenRate; r != nil && *r < 0 {
		return nil, doc.Errorf("demo.token_rate", "must be 0 (instant) or a positive number of tokens per second")
	}
	for action, keys := range f.Keys {
		if len(keys) == 0 {
			return nil, doc.Errorf("keys."+action, "action %q has no keys", action)
		}
	}
	return f, nil
}

var keyLike = regexp.MustCompile(`^(sk-|gsk_|sk_|xai-|AIza)|^[A-Za-z0-9_\-]{32,}$`)
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (f *File) checkProvider(i int) error {
	p := f.Providers[i]
	bad := func(key, format string, args ...any) error {
		return f.doc.Errorf(fmt.Sprintf("providers.%d.%s", i, key), format, args...)
	}
	switch {
	case p.Name == "":
		return bad("name", "missing name")
	case p.Name == "demo":
		return bad("name", `"demo" is reserved for the offline demo model`)
	case strings.ContainsAny(p.Name, "/ \t"):
		return bad("name", "%q: a name may not contain '/' or spaces", p.Name)
	}
	for j := 0; j < i; j++ {
		if f.Providers[j].Name == p.Name {
			return bad("name", "%q is already used by provider %d", p.Name, j+1)
		}
	}
	if p.BaseURL == "" {
		return bad("base_url", "provider %q has no base_url", p.Name)
	}
	if !strings.HasPrefix(p.BaseURL, "http://") && !strings.HasPrefix(p.BaseURL, "https://") {
		return bad("base_url", "%q must start with http:// or https://", p.BaseURL)
	}
	if p.APIKeyEnv != "" && !envName.MatchString(p.APIKeyEnv) {
		if keyLike.MatchString(p.APIKeyEnv) {
			return bad("api_key_env", "this looks like a key itself; put the key in an environment variable and name the variable here")
		}
		return bad("api_key_env", "%q is not an environment variable name", p.APIKeyEnv)
	}
	if p.APIKeyEnv != "" && p.KeyCommand != "" {
		return bad("key_command", "set either api_key_env or key_command, not both")
	}
	if p.Azure && p.APIVersion == "" {
		return bad("api_version", "Azure OpenAI needs api_version (e.g. \"2024-06-01\")")
	}
	if p.MaxRetries != nil && *p.MaxRetries < 0 {
		return bad("max_retries", "must be 0 or more")
	}
	if p.MaxTokens != nil && *p.MaxTokens <= 0 {
		return bad("max_tokens", "must be positive")
	}
	if p.Temperature != nil && (*p.Temperature < 0 || *p.Temperature > 2) {
		return bad("temperature", "must be between 0 and 2")
	}
	for _, d := range []struct {
		key string
		v   *time.Duration
	}{{"connect_timeout", p.ConnectTimeout}, {"first_token_timeout", p.FirstTokenTimeout}, {"stall_timeout", p.StallTimeout}, {"total_timeout", p.TotalTimeout}} {
		if d.v != nil && *d.v < 0 {
			return bad(d.key, "must not be negative (0 means no limit)")
		}
	}
	for j, m := range p.Models {
		if strings.TrimSpace(m) == "" {
			return bad(fmt.Sprintf("models.%d", j), "model %d is empty", j+1)
		}
	}
	return nil
}

func knownKeys(k toml.Key) string {
	switch {
	case len(k) == 1:
		return " (known: theme, [keys], [default], [[providers]], [demo])"
	case k[0] == "providers" && len(k) == 2:
		return " (known: name, base_url, api_key_env, key_command, models, headers, azure, api_version, stream_usage, temperature, max_tokens, max_retries, connect_timeout, first_token_timeout, stall_timeout, total_timeout)"
	case k[0] == "default" && len(k) == 2:
		return " (known: provider, model)"
	case k[0] == "demo" && len(k) == 2:
		return " (known: token_rate)"
	}
	return ""
}

// SecretHeader reports a header name that carries a credential (Authorization,
// api-key, X-Api-Key, a token or a cookie).
func SecretHeader(name string) bool {
	n := strings.ToLower(name)
	return n == "authorization" || n == "proxy-authorization" || n == "cookie" ||
		strings.Contains(n, "key") || strings.Contains(n, "token") || strings.Contains(n, "secret")
}
