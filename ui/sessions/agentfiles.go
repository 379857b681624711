package sessions

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sessionbench/sessionbench/core/tomlfile"
	"github.com/sessionbench/sessionbench/core/workflow"
	"github.com/sessionbench/sessionbench/demo"
	"github.com/sessionbench/sessionbench/llm/config"
)

// LoadAgentFile reads and validates an agent file (the format: go doc ./core/workflow)
// with the built-in tools and demo scripts; its template files are read relative to it.
// A file with problems returns tomlfile.FileErrors listing every problem found with its
// line and key.
func LoadAgentFile(path string) (demo.Agent, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return demo.Agent{}, fmt.Errorf("agent file: %w", err)
	}
	env := demo.Env()
	env.ReadFile = os.ReadFile
	f, err := workflow.Parse(path, data, env)
	if err != nil {
		return demo.Agent{}, err
	}
	return demo.FileAgent(f), nil
}

// AgentDirs are the directories DefaultCatalog searches, in order: config.AgentsDir
// (~/.config/sessionbench/agents) and ./agents.
func AgentDirs(getenv config.Env) []string {
	if dir := config.AgentsDir(getenv); dir != "" {
		return []string{dir, "agents"}
	}
	return []string{"agents"}
}

// FindAgentsIn loads every *.toml agent file in dirs (missing ones are skipped). Files
// that fail to load are reported in the errors and left out; a name used twice keeps the
// first.
func FindAgentsIn(dirs []string) ([]demo.Agent, []error) {
	var agents []demo.Agent
	var errs []error
	seen := map[string]string{}
	for _, a := range demo.Agents() {
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
				errs = append(errs, &tomlfile.FileError{File: f, Key: "name", Msg: fmt.Sprintf("agent %q is already defined (%s); this file is ignored", a.Name, prev)})
				continue
			}
			seen[strings.ToLower(a.Name)] = f
			agents = append(agents, a)
		}
	}
	return agents, errs
}
