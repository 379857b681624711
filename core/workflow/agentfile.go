package workflow

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/tomlfile"
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

// Env is what an agent file may name outside itself; the application supplies it.
type Env struct {
	// Tools are the tools steps may run (tool = "..."), by name.
	Tools map[string]Tool
	// DemoScripts are the names demo_script may take (the built-in agents whose
	// demo-model scripts a file can borrow).
	DemoScripts []string
	// ReadFile reads a predictor's template_file (a path relative to the agent file's
	// directory is joined to it first). Nil: template files cannot be read.
	ReadFile func(path string) ([]byte, error)
}

// AgentFile is an agent file that compiled: what it declares, ready to build workflows.
type AgentFile struct {
	Name        string // the file's name = "...", else its base name without .toml
	Description string
	Inputs      []string
	Outputs     []string
	DemoScript  string // "" when the file names none
	Path        string // as given to Parse
	spec        *fileSpec
	ix          *tomlfile.TOML
	env         Env
}

// Parse checks an agent file and compiles it once; path names it in errors and anchors
// relative template_file paths. A file with problems returns tomlfile.FileErrors listing every
// problem found with its line and key.
func Parse(path string, data []byte, env Env) (*AgentFile, error) {
	spec, ix, err := decodeFile(path, data)
	if err != nil {
		return nil, err
	}
	f := &AgentFile{Description: spec.Description, Inputs: spec.Inputs, Outputs: spec.Outputs,
		DemoScript: spec.DemoScript, Path: path, spec: spec, ix: ix, env: env}
	if _, _, errs := f.compiler().compile(nil); len(errs) > 0 {
		return nil, errs
	}
	f.Name = spec.Name
	if f.Name == "" {
		f.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return f, nil
}

// Build compiles a fresh workflow and its session options; the date tool reads now
// (nil: the wall clock).
func (f *AgentFile) Build(now Clock) (*Workflow, core.Options, error) {
	w, o, errs := f.compiler().compile(now)
	if len(errs) > 0 {
		return nil, core.Options{}, errs
	}
	return w, o, nil
}

// Files are the files the agent is built from: the agent file, then each template_file
// (as Build reads them), each once. A change to any of them changes the agent.
func (f *AgentFile) Files() []string {
	out := []string{f.Path}
	dir := filepath.Dir(f.Path)
	for _, ps := range f.spec.Predictors {
		if ps.TemplateFile == "" {
			continue
		}
		if p := templatePath(dir, ps.TemplateFile); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// templatePath is where a template_file is: a relative path is joined to the agent
// file's directory.
func templatePath(dir, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}

func (f *AgentFile) compiler() *compiler {
	return &compiler{file: f.Path, dir: filepath.Dir(f.Path), ix: f.ix, spec: f.spec, env: f.env}
}

// decodeFile parses the TOML and reports syntax errors, wrong types and unknown keys
// with their lines.
func decodeFile(path string, data []byte) (*fileSpec, *tomlfile.TOML, error) {
	var spec fileSpec
	doc, err := tomlfile.Decode(path, data, &spec)
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
