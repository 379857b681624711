package llm

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Config is the model configuration file, $XDG_CONFIG_HOME/sessionbench/config.toml
// (~/.config/sessionbench/config.toml when XDG_CONFIG_HOME is unset):
//
//	[default]
//	provider = "ollama"             # provider used when none is named
//	model = "llama3.1:8b"           # model used when none is named
//
//	[[providers]]
//	name = "ollama"
//	base_url = "http://localhost:11434/v1"
//	models = ["llama3.1:8b", "qwen2.5:7b"]
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
//	total_timeout = "10m"
//	stream_usage = true             # false for servers rejecting stream_options
//	# azure = true, api_version = "2024-06-01" for Azure OpenAI (model = deployment)
//
//	[demo]
//	token_rate = 60                 # offline demo model: tokens per second
//
// Keys are never stored in the file: only where to find them.
type Config struct {
	Path      string        `toml:"-"` // the file read; "" when there was none
	Default   DefaultChoice `toml:"default"`
	Providers []Provider    `toml:"providers"`
	Demo      DemoConfig    `toml:"demo"`
	// Theme and Keys belong to the workbench (ui.Config reads them from the same file);
	// they are declared here only so they are not reported as unknown keys.
	Theme string              `toml:"theme"`
	Keys  map[string][]string `toml:"keys"`
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
	TotalTimeout      *time.Duration    `toml:"total_timeout"`
	Line              int               `toml:"-"` // line of its [[providers]] header (0: not from a file)
}

// Provider finds a provider by name.
func (c *Config) Provider(name string) (Provider, bool) {
	for _, p := range c.Providers {
		if p.Name == name {
			return p, true
		}
	}
	return Provider{}, false
}

// ConfigError is a problem in the configuration file, with where it is.
type ConfigError struct {
	File string
	Line int    // 1-based; 0 when unknown
	Key  string // dotted key, e.g. "providers.base_url"; "" when none
	Msg  string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	if e.Key != "" {
		b.WriteString(": key " + e.Key)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

// DefaultConfigPath is where the configuration lives, given an environment lookup.
func DefaultConfigPath(getenv func(string) string) string {
	if dir := getenv("XDG_CONFIG_HOME"); dir != "" {
		return filepath.Join(dir, "sessionbench", "config.toml")
	}
	if home := getenv("HOME"); home != "" {
		return filepath.Join(home, ".config", "sessionbench", "config.toml")
	}
	if dir, err := os.UserConfigDir(); err == nil {
		return filepath.Join(dir, "sessionbench", "config.toml")
	}
	return ""
}

// LoadConfig reads the file at path. A missing file is an empty configuration, not an
// error, unless mustExist is set (a path the user named explicitly).
func LoadConfig(path string, mustExist bool) (*Config, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && !mustExist {
		return &Config{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading configuration: %w", err)
	}
	return ParseConfig(path, data)
}

var tomlLineErr = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`)

// ParseConfig parses configuration text; path is used in error messages.
func ParseConfig(path string, data []byte) (*Config, error) {
	c := &Config{}
	md, err := toml.Decode(string(data), c)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &ConfigError{File: path, Line: pe.Position.Line, Key: pe.LastKey, Msg: pe.Message}
		}
		if m := tomlLineErr.FindStringSubmatch(err.Error()); m != nil {
			line, _ := strconv.Atoi(m[1])
			return nil, &ConfigError{File: path, Line: line, Key: m[2], Msg: m[3]}
		}
		return nil, &ConfigError{File: path, Msg: err.Error()}
	}
	c.Path = path
	idx := indexKeys(data)
	for _, k := range md.Undecoded() {
		// Undecoded lists tables too; report the first key that is not a known table.
		line := idx.line(k, -1)
		return nil, &ConfigError{File: path, Line: line, Key: k.String(), Msg: "unknown key" + knownKeys(k)}
	}
	for i := range c.Providers {
		c.Providers[i].Line = idx.header("providers", i)
		if err := c.checkProvider(i, idx); err != nil {
			return nil, err
		}
	}
	cerr := func(key string, msg string) error {
		return &ConfigError{File: path, Line: idx.line(strings.Split(key, "."), -1), Key: key, Msg: msg}
	}
	if p := c.Default.Provider; p != "" {
		if _, ok := c.Provider(p); !ok {
			return nil, cerr("default.provider", fmt.Sprintf("no provider named %q (configured: %s)", p, c.providerNames()))
		}
	}
	if r := c.Demo.TokenRate; r != nil && *r < 0 {
		return nil, cerr("demo.token_rate", "must be 0 (instant) or a positive number of tokens per second")
	}
	return c, nil
}

func (c *Config) providerNames() string {
	if len(c.Providers) == 0 {
		return "none"
	}
	names := make([]string, len(c.Providers))
	for i, p := range c.Providers {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

var keyLike = regexp.MustCompile(`^(sk-|gsk_|sk_|xai-|AIza)|^[A-Za-z0-9_\-]{32,}$`)
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (c *Config) checkProvider(i int, idx keyIndex) error {
	p := c.Providers[i]
	cerr := func(key, msg string) error {
		line := idx.line([]string{"providers", key}, i)
		if line == 0 {
			line = p.Line
		}
		return &ConfigError{File: c.Path, Line: line, Key: "providers." + key, Msg: fmt.Sprintf("provider %d: %s", i+1, msg)}
	}
	switch {
	case p.Name == "":
		return cerr("name", "missing name")
	case p.Name == "demo":
		return cerr("name", `"demo" is reserved for the offline demo model`)
	case strings.ContainsAny(p.Name, "/ \t"):
		return cerr("name", fmt.Sprintf("%q: a name may not contain '/' or spaces", p.Name))
	}
	for j := 0; j < i; j++ {
		if c.Providers[j].Name == p.Name {
			return cerr("name", fmt.Sprintf("%q is already used by provider %d", p.Name, j+1))
		}
	}
	if p.BaseURL == "" {
		return cerr("base_url", fmt.Sprintf("provider %q has no base_url", p.Name))
	}
	if !strings.HasPrefix(p.BaseURL, "http://") && !strings.HasPrefix(p.BaseURL, "https://") {
		return cerr("base_url", fmt.Sprintf("%q must start with http:// or https://", p.BaseURL))
	}
	if p.APIKeyEnv != "" && !envName.MatchString(p.APIKeyEnv) {
		msg := fmt.Sprintf("%q is not an environment variable name", p.APIKeyEnv)
		if keyLike.MatchString(p.APIKeyEnv) {
			msg = "this looks like a key itself; put the key in an environment variable and name the variable here"
		}
		return cerr("api_key_env", msg)
	}
	if p.APIKeyEnv != "" && p.KeyCommand != "" {
		return cerr("key_command", "set either api_key_env or key_command, not both")
	}
	if p.Azure && p.APIVersion == "" {
		return cerr("api_version", "Azure OpenAI needs api_version (e.g. \"2024-06-01\")")
	}
	if p.MaxRetries != nil && *p.MaxRetries < 0 {
		return cerr("max_retries", "must be 0 or more")
	}
	if p.MaxTokens != nil && *p.MaxTokens <= 0 {
		return cerr("max_tokens", "must be positive")
	}
	if p.Temperature != nil && (*p.Temperature < 0 || *p.Temperature > 2) {
		return cerr("temperature", "must be between 0 and 2")
	}
	for key, d := range map[string]*time.Duration{"connect_timeout": p.ConnectTimeout, "first_token_timeout": p.FirstTokenTimeout, "total_timeout": p.TotalTimeout} {
		if d != nil && *d < 0 {
			return cerr(key, "must not be negative (0 means no limit)")
		}
	}
	for j, m := range p.Models {
		if strings.TrimSpace(m) == "" {
			return cerr("models", fmt.Sprintf("model %d is empty", j+1))
		}
	}
	return nil
}

func knownKeys(k toml.Key) string {
	switch {
	case len(k) == 1:
		return " (known: [default], [[providers]], [demo], theme, [keys])"
	case k[0] == "providers" && len(k) == 2:
		return " (known: name, base_url, api_key_env, key_command, models, headers, azure, api_version, stream_usage, temperature, max_tokens, max_retries, connect_timeout, first_token_timeout, total_timeout)"
	case k[0] == "default" && len(k) == 2:
		return " (known: provider, model)"
	case k[0] == "demo" && len(k) == 2:
		return " (known: token_rate)"
	}
	return ""
}

// keyIndex maps keys to the lines defining them. BurntSushi/toml reports lines for
// syntax and type errors only, so unknown keys and invalid values are located here.
type keyIndex struct {
	entries []keyEntry
	headers map[string][]int // array-table name -> header lines, in order
}

type keyEntry struct {
	path  string // dotted, unquoted
	line  int
	array int // index of the enclosing [[array]] table, -1 outside one
}

func indexKeys(data []byte) keyIndex {
	idx := keyIndex{headers: map[string][]int{}}
	var table []string
	array := -1
	for i, raw := range bytes.Split(data, []byte("\n")) {
		line := strings.TrimSpace(string(raw))
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "[["):
			end := strings.Index(line, "]]")
			if end < 0 {
				continue
			}
			table = splitKey(line[2:end])
			name := strings.Join(table, ".")
			idx.headers[name] = append(idx.headers[name], i+1)
			array = len(idx.headers[name]) - 1
			idx.entries = append(idx.entries, keyEntry{name, i + 1, array})
		case strings.HasPrefix(line, "["):
			end := strings.Index(line, "]")
			if end < 0 {
				continue
			}
			table = splitKey(line[1:end])
			array = -1
			idx.entries = append(idx.entries, keyEntry{strings.Join(table, "."), i + 1, array})
		default:
			eq := strings.Index(line, "=")
			if eq < 0 {
				continue
			}
			path := append(append([]string(nil), table...), splitKey(line[:eq])...)
			idx.entries = append(idx.entries, keyEntry{strings.Join(path, "."), i + 1, array})
			// Inline tables: record their keys too (headers = { "X" = "y" }).
			if rest := strings.TrimSpace(line[eq+1:]); strings.HasPrefix(rest, "{") {
				for _, part := range strings.Split(strings.Trim(rest, "{} "), ",") {
					if k, _, ok := strings.Cut(part, "="); ok {
						sub := append(append([]string(nil), path...), splitKey(k)...)
						idx.entries = append(idx.entries, keyEntry{strings.Join(sub, "."), i + 1, array})
					}
				}
			}
		}
	}
	return idx
}

// splitKey splits a dotted TOML key, removing quotes.
func splitKey(s string) []string {
	var parts []string
	var cur strings.Builder
	var quote rune
	for _, r := range strings.TrimSpace(s) {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote = r
		case r == '.':
			parts = append(parts, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	return append(parts, strings.TrimSpace(cur.String()))
}

// line finds where key is defined; array selects the [[table]] occurrence (-1: any).
func (x keyIndex) line(key []string, array int) int {
	want := strings.Join(key, ".")
	for _, e := range x.entries {
		if e.path == want && (array < 0 || e.array == array) {
			return e.line
		}
	}
	return 0
}

func (x keyIndex) header(name string, i int) int {
	if h := x.headers[name]; i < len(h) {
		return h[i]
	}
	return 0
}
