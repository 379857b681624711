package demo

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/llm/config"
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

// decodeFile parses the TOML and reports syntax errors, wrong types and unknown keys
// with their lines.
func decodeFile(path string, data []byte) (*fileSpec, *config.TOML, error) {
	var spec fileSpec
	doc, err := config.Decode(path, data, &spec)
	if err != nil {
		return nil, nil, err
	}
	free := func(k toml.Key) bool { // free-form tables
		return k[0] == "params" && len(k) > 1 || len(k) == 2 && k[0] == "workflows"
	}
	if errs := doc.UnknownKeys(free, nil); len(errs) > 0 {
		return nil, nil, errs
	}
	return &spec, doc, nil
}

// AgentDirs are the directories FindAgents searches, in order: config.AgentsDir
// (~/.config/sessionbench/agents) and ./agents.
func AgentDirs(getenv config.Env) []string {
	if dir := config.AgentsDir(getenv); dir != "" {
		return []string{dir, "agents"}
	}
	return []string{"agents"}
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
				errs = append(errs, &config.FileError{File: f, Key: "name", Msg: fmt.Sprintf("agent %q is already defined (%s); this file is ignored", a.Name, prev)})
				continue
			}
			seen[strings.ToLower(a.Name)] = f
			agents = append(agents, a)
		}
	}
	return agents, errs
}

func builtinByName(name string) (Agent, bool) { return Lookup(name) }
