package demo

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/workflow"
	"github.com/sessionbench/sessionbench/llm/config"
)

// env is what the demo's agent files may name: the built-in tools, the built-in agents'
// demo scripts, and template files on disk.
func env() workflow.Env {
	var names []string
	for _, a := range Agents() {
		names = append(names, a.Name)
	}
	return workflow.Env{Tools: Tools(), DemoScripts: names, ReadFile: os.ReadFile}
}

// LoadAgentFile reads and validates an agent file (the format: go doc ./core/workflow).
// A file with problems returns config.FileErrors listing every problem found with its
// line and key.
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
	f, err := workflow.Parse(path, data, env())
	if err != nil {
		return Agent{}, err
	}
	a := Agent{Name: f.Name, Description: f.Description, Inputs: f.Inputs, Outputs: f.Outputs, Source: path}
	if f.DemoScript != "" {
		b, _ := Lookup(f.DemoScript) // checked by Parse
		a.script = b.script
	}
	var build func(now Clock) Agent
	build = func(now Clock) Agent {
		b := a
		b.build = func() (core.Module, core.Options, error) {
			w, o, err := f.Build(now)
			if err != nil {
				return nil, core.Options{}, err
			}
			return w, o, nil
		}
		b.withClock = build
		return b
	}
	return build(nil), nil
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
