package demo

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
)

// The demo agents also ship as agent files: they prove the format can express them,
// and users can copy them into ./agents or $XDG_CONFIG_HOME/sessionbench/agents.
//
//go:embed agentfiles/*.toml
var agentFiles embed.FS

// ExampleFiles names the built-in agent files ("orchestrator.toml", ...), sorted.
func ExampleFiles() []string {
	names, _ := fs.Glob(agentFiles, "agentfiles/*.toml")
	for i, n := range names {
		names[i] = path.Base(n)
	}
	sort.Strings(names)
	return names
}

// ExampleFile returns a built-in agent file's text.
func ExampleFile(name string) ([]byte, error) {
	data, err := agentFiles.ReadFile("agentfiles/" + name)
	if err != nil {
		return nil, fmt.Errorf("no built-in agent file %q (have: %v)", name, ExampleFiles())
	}
	return data, nil
}

// ExampleAgents loads every built-in agent file.
func ExampleAgents() ([]Agent, error) {
	var out []Agent
	for _, n := range ExampleFiles() {
		data, _ := ExampleFile(n)
		a, err := ParseAgentFile("builtin:"+n, data)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}
