package demo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/sessionbench/sessionbench/core"
)

// fileSpec is an agent file as written (see the package documentation).
type fileSpec struct {
	Name        string                  `toml:"name"`
	Description string                  `toml:"description"`
	Inputs      []string                `toml:"inputs"`
	Outputs     []string                `toml:"outputs"`
	Params      map[string]any          `toml:"params"`
	DemoScript  string                  `toml:"demo_script"`
	Session     sessionSpec             `toml:"session"`
	Predictors  []predictorSpec         `toml:"predictors"`
	Steps       []stepSpec              `toml:"steps"`
	Workflows   map[string]workflowSpec `toml:"workflows"`
}

type sessionSpec struct {
	NestedSessions string   `toml:"nested_sessions"`
	InnerScope     string   `toml:"inner_scope"`
	MaxTurns       *int     `toml:"max_turns"`
	ExcludeFields  []string `toml:"exclude_fields"`
}

type predictorSpec struct {
	Name           string        `toml:"name"`
	Signature      string        `toml:"signature"`
	Instructions   string        `toml:"instructions"`
	Inputs         []fieldSpec   `toml:"inputs"`
	Outputs        []fieldSpec   `toml:"outputs"`
	Type           string        `toml:"type"`
	Adapter        string        `toml:"adapter"`
	JSONFallback   *bool         `toml:"json_fallback"`
	Template       *templateSpec `toml:"template"`
	TemplateFile   string        `toml:"template_file"`
	Model          string        `toml:"model"`
	History        *bool         `toml:"history"`
	ExcludeFields  []string      `toml:"exclude_fields"`
	NestedSessions string        `toml:"nested_sessions"`
	InnerScope     string        `toml:"inner_scope"`
}

type fieldSpec struct {
	Name string `toml:"name"`
	Type string `toml:"type"`
	Desc string `toml:"desc"`
}

type templateSpec struct {
	ParseMode string            `toml:"parse_mode"`
	Messages  []templateMessage `toml:"messages"`
}

type templateMessage struct {
	Role      string  `toml:"role"`
	Content   string  `toml:"content"`
	User      *string `toml:"user"`
	Assistant *string `toml:"assistant"`
}

type stepSpec struct {
	Name        string            `toml:"name"`
	Predictor   string            `toml:"predictor"`
	Tool        string            `toml:"tool"`
	Set         map[string]string `toml:"set"`
	Workflow    string            `toml:"workflow"`
	Steps       []stepSpec        `toml:"steps"`
	Inputs      map[string]string `toml:"inputs"`
	Outputs     map[string]string `toml:"outputs"`
	ContextMode string            `toml:"context_mode"`
	Parallel    bool              `toml:"parallel"`
	OnError     string            `toml:"on_error"`
	MaxRetries  int               `toml:"max_retries"`
	RetryUntil  string            `toml:"retry_until"`
	Best        string            `toml:"best"`
	Counter     string            `toml:"counter"`
	BestAttempt string            `toml:"best_attempt"`
	Status      string            `toml:"status"`
	Summarize   bool              `toml:"summarize"`
	SummaryTo   string            `toml:"summary_to"`
	Loop        *loopSpec         `toml:"loop"`
	Module      string            `toml:"module"`
}

type loopSpec struct {
	MaxIterations int    `toml:"max_iterations"`
	Until         string `toml:"until"`
}

type workflowSpec struct {
	Steps []stepSpec `toml:"steps"`
}

// FileError is one problem in an agent file: where (file, line, key) and what.
type FileError struct {
	File string
	Line int    // 1-based; 0 when unknown
	Key  string // e.g. "steps[2].predictor" (indices 1-based); "" for the whole file
	Msg  string
}

func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	if e.Key != "" {
		b.WriteString(": " + e.Key)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

// FileErrors are all the problems found in one file, in line order.
type FileErrors []*FileError

func (es FileErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// LoadAgentFile reads and validates an agent file. A file with problems returns
// FileErrors listing every problem found with its line and key.
func LoadAgentFile(path string) (Agent, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Agent{}, fmt.Errorf("agent file: %w", err)
	}
	return ParseAgentFile(path, data)
}

// ParseAgentFile is LoadAgentFile for text already read; path names it in errors and
// anchors relative template_file paths.
func ParseAgentFile(path string, data []byte) (Agent, error) {
	spec, ix, err := decodeFile(path, data)
	if err != nil {
		return Agent{}, err
	}
	c := &compiler{file: path, dir: filepath.Dir(path), ix: ix, spec: spec}
	if _, _, errs := c.compile(nil); len(errs) > 0 {
		return Agent{}, errs
	}
	name := spec.Name
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	a := Agent{Name: name, Description: spec.Description, Inputs: spec.Inputs, Outputs: spec.Outputs, Source: path}
	if spec.DemoScript != "" {
		b, _ := builtinByName(spec.DemoScript) // checked by compile
		a.script = b.script
	}
	var build func(now Clock) Agent
	build = func(now Clock) Agent {
		b := a
		b.build = func() (core.Module, core.Options, error) {
			cc := &compiler{file: path, dir: filepath.Dir(path), ix: ix, spec: spec}
			w, o, errs := cc.compile(now)
			if len(errs) > 0 {
				return nil, core.Options{}, errs
			}
			return w, o, nil
		}
		b.withClock = build
		return b
	}
	return build(nil), nil
}

var tomlLineErr = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`)

// decodeFile parses the TOML and reports syntax errors, wrong types and unknown keys
// with their lines.
func decodeFile(path string, data []byte) (*fileSpec, *lineIndex, error) {
	var spec fileSpec
	md, err := toml.Decode(string(data), &spec)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, nil, FileErrors{{File: path, Line: pe.Position.Line, Key: pe.LastKey, Msg: pe.Message}}
		}
		if m := tomlLineErr.FindStringSubmatch(err.Error()); m != nil {
			line, _ := strconv.Atoi(m[1])
			return nil, nil, FileErrors{{File: path, Line: line, Key: m[2], Msg: m[3]}}
		}
		return nil, nil, FileErrors{{File: path, Msg: strings.TrimPrefix(err.Error(), "toml: ")}}
	}
	ix := newLineIndex(string(data))
	var errs FileErrors
	for _, k := range md.Undecoded() {
		key := k.String()
		if strings.HasPrefix(key, "params.") || (len(k) >= 2 && k[0] == "workflows" && len(k) == 2) {
			continue // free-form tables
		}
		errs = append(errs, &FileError{File: path, Line: ix.lineOfPattern(key), Key: key, Msg: "unknown key"})
	}
	if len(errs) > 0 {
		sortErrors(errs)
		return nil, nil, errs
	}
	return &spec, ix, nil
}

func sortErrors(errs FileErrors) {
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
}

// AgentDirs are the directories FindAgents searches, in order:
// $XDG_CONFIG_HOME/sessionbench/agents (~/.config/... when unset) and ./agents.
func AgentDirs(getenv func(string) string) []string {
	base := getenv("XDG_CONFIG_HOME")
	if base == "" {
		if home := getenv("HOME"); home != "" {
			base = filepath.Join(home, ".config")
		}
	}
	var dirs []string
	if base != "" {
		dirs = append(dirs, filepath.Join(base, "sessionbench", "agents"))
	}
	return append(dirs, "agents")
}

// FindAgents loads every *.toml agent file in AgentDirs(os.Getenv). Files that fail
// to load are reported in the errors and left out; a name used twice keeps the first.
func FindAgents() ([]Agent, []error) { return FindAgentsIn(AgentDirs(os.Getenv)) }

// FindAgentsIn is FindAgents over given directories (missing ones are skipped).
func FindAgentsIn(dirs []string) ([]Agent, []error) {
	var agents []Agent
	var errs []error
	seen := map[string]string{}
	for _, a := range Agents() {
		seen[strings.ToLower(a.Name)] = "built-in"
	}
	for _, d := range dirs {
		files, err := filepath.Glob(filepath.Join(d, "*.toml"))
		if err != nil {
			errs = append(errs, fmt.Errorf("agents in %s: %w", d, err))
			continue
		}
		sort.Strings(files)
		for _, f := range files {
			a, err := LoadAgentFile(f)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if prev, dup := seen[strings.ToLower(a.Name)]; dup {
				errs = append(errs, &FileError{File: f, Key: "name", Msg: fmt.Sprintf("agent %q is already defined (%s); this file is ignored", a.Name, prev)})
				continue
			}
			seen[strings.ToLower(a.Name)] = f
			agents = append(agents, a)
		}
	}
	return agents, errs
}

func builtinByName(name string) (Agent, bool) { return Lookup(name) }
