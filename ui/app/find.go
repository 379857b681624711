package app

import (
	"strings"

	"github.com/sessionbench/sessionbench/core"
)

// findPredictor is core.FindPredictor that also looks inside sessions used as
// submodules (the Orchestrator's container holds sessionified predictors, whose calls
// are recorded under the session's path), which core's walk does not enter.
func findPredictor(m core.Module, path string) *core.Predict {
	if p := core.FindPredictor(m, path); p != nil {
		return p
	}
	if s, ok := m.(*core.Session); ok {
		return findPredictor(s.Module(), path)
	}
	c, ok := m.(core.Composite)
	if !ok || path == "" {
		return nil
	}
	for _, sub := range c.Submodules() {
		if sub.Module == nil {
			continue
		}
		switch {
		case sub.Name == path:
			return findPredictor(sub.Module, "")
		case strings.HasPrefix(path, sub.Name+"."):
			if p := findPredictor(sub.Module, strings.TrimPrefix(path, sub.Name+".")); p != nil {
				return p
			}
		}
	}
	return nil
}
