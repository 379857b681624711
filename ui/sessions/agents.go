package sessions

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/sessionbench/sessionbench/demo"
)

// agentFiles caches the agent files found in the agent directories. A listing is
// reloaded only when the set of files or one's size or modification time changes, so
// Agents() can be called per frame without re-reading TOML.
type agentFiles struct {
	mu     sync.Mutex
	dirs   []string
	stamp  string
	agents []demo.Agent
	errs   []error
	// byPath holds agents loaded from an explicit path (a conversation started with
	// `--agent FILE`), by absolute path; they are listed next to the found ones.
	byPath map[string]demo.Agent
}

// SetAgentDirs replaces the directories searched for agent files (default:
// AgentDirs(os.Getenv), i.e. the user config dir and ./agents). Call it before use.
func (a *Service) SetAgentDirs(dirs ...string) {
	a.files.mu.Lock()
	defer a.files.mu.Unlock()
	a.files.dirs = append([]string(nil), dirs...)
	a.files.stamp, a.files.agents, a.files.errs = "", nil, nil
}

// AgentErrors reports agent files that failed to load at the last listing, each with
// its file, line and key.
func (a *Service) AgentErrors() []error {
	a.fileAgents()
	a.files.mu.Lock()
	defer a.files.mu.Unlock()
	return append([]error(nil), a.files.errs...)
}

// fileAgents lists the agent files of the agent directories (valid ones only).
func (a *Service) fileAgents() []demo.Agent {
	f := &a.files
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	for _, d := range f.dirs {
		names, _ := filepath.Glob(filepath.Join(d, "*.toml"))
		sort.Strings(names)
		for _, n := range names {
			if st, err := os.Stat(n); err == nil {
				fmt.Fprintf(&b, "%s\x00%d\x00%d\n", n, st.Size(), st.ModTime().UnixNano())
			}
		}
	}
	if s := b.String(); s != f.stamp || f.agents == nil {
		f.agents, f.errs = FindAgentsIn(f.dirs)
		if f.agents == nil {
			f.agents = []demo.Agent{}
		}
		f.stamp = s
	}
	out := append([]demo.Agent(nil), f.agents...)
	for _, ag := range f.byPath {
		if !hasSource(out, ag.Source) {
			out = append(out, ag)
		}
	}
	return out
}

func hasSource(list []demo.Agent, src string) bool {
	for _, ag := range list {
		if absPath(ag.Source) == absPath(src) {
			return true
		}
	}
	return false
}

func absPath(p string) string {
	if p == "" || p == "built-in" {
		return p
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// isPath tells an agent file reference from an agent name.
func isPath(ref string) bool {
	return strings.ContainsRune(ref, filepath.Separator) || strings.ContainsRune(ref, '/') ||
		strings.HasSuffix(strings.ToLower(ref), ".toml")
}

// allAgents are the built-in agents, then the agent files.
func (a *Service) allAgents() []demo.Agent {
	return append(demo.Agents(), a.fileAgents()...)
}

// resolveAgent finds an agent by built-in name, agent-file name (case-insensitive) or
// agent-file path.
func (a *Service) resolveAgent(ref string) (demo.Agent, error) {
	if ag, ok := demo.Lookup(ref); ok {
		return ag, nil
	}
	files := a.fileAgents()
	if isPath(ref) {
		abs := absPath(ref)
		for _, ag := range files {
			if absPath(ag.Source) == abs {
				return ag, nil
			}
		}
		ag, err := LoadAgentFile(abs)
		if err != nil {
			return demo.Agent{}, err
		}
		a.files.mu.Lock()
		if a.files.byPath == nil {
			a.files.byPath = map[string]demo.Agent{}
		}
		a.files.byPath[abs] = ag
		a.files.mu.Unlock()
		return ag, nil
	}
	for _, ag := range files {
		if strings.EqualFold(ag.Name, ref) {
			return ag, nil
		}
	}
	var names []string
	for _, ag := range a.allAgents() {
		names = append(names, ag.Name)
	}
	return demo.Agent{}, fmt.Errorf("unknown agent %q (known: %s; agent files are read from %s)",
		ref, strings.Join(names, ", "), strings.Join(a.files.dirs, ", "))
}

// agentRef is what a conversation stores to find its agent again: a built-in agent's
// name, or an agent file's absolute path (a name alone would depend on the directory
// the workbench is started from).
func agentRef(ag demo.Agent) string {
	if ag.Source == "" || ag.Source == "built-in" {
		return ag.Name
	}
	return absPath(ag.Source)
}

// agentName is the name to show for a stored agent reference.
func (a *Service) agentName(ref string) string {
	if !isPath(ref) {
		return ref
	}
	if ag, err := a.resolveAgent(ref); err == nil {
		return ag.Name
	}
	return strings.TrimSuffix(filepath.Base(ref), filepath.Ext(ref))
}

// Agents lists the built-in demo agents, then the agent files (and files that stored
// conversations were started with).
func (a *Service) Agents() []AgentInfo {
	var out []AgentInfo
	for _, ag := range a.allAgents() {
		out = append(out, agentInfo(ag))
	}
	return out
}
