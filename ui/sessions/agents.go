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

// Catalog is every agent a conversation can name: the built-in agents, the agent files
// of its directories and agent files named by path. It is the one lookup the service and
// the headless commands share. A listing of the directories is reloaded only when the set
// of files or one's size or modification time changes, so it can be asked per frame
// without re-reading TOML; an agent file resolved by its path (every Send of a file
// agent) is checked alone, without listing the directories. It is safe for concurrent
// use.
type Catalog struct {
	mu     sync.Mutex
	dirs   []string
	stamp  string
	agents []demo.Agent
	errs   []error
	// byPath holds agents loaded from an explicit path (a conversation started with
	// `--agent FILE`), by absolute path, with the file's size and modification time when
	// it was read: a file edited since is read again. They are listed next to the found
	// ones.
	byPath map[string]pathAgent
	// listed holds the agents of the last listing by absolute path, with their file's
	// stamp then: resolving one whose file is unchanged needs no new listing (listedFile).
	listed map[string]pathAgent
}

// pathAgent is an agent loaded from an explicit path and the file's stamp then.
type pathAgent struct {
	agent demo.Agent
	stamp string
}

// fileStamp is a file's size and modification time ("" when it cannot be read).
func fileStamp(path string) string {
	st, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d\x00%d", st.Size(), st.ModTime().UnixNano())
}

// NewCatalog is the catalogue over agent directories (AgentDirs(os.Getenv) by default,
// i.e. the user config dir and ./agents; missing ones are skipped).
func NewCatalog(dirs ...string) *Catalog {
	return &Catalog{dirs: append([]string(nil), dirs...)}
}

// DefaultCatalog is NewCatalog(AgentDirs(os.Getenv)...).
func DefaultCatalog() *Catalog { return NewCatalog(AgentDirs(os.Getenv)...) }

// SetAgentDirs replaces the directories searched for agent files (default:
// AgentDirs(os.Getenv), i.e. the user config dir and ./agents). Call it before use.
func (a *Service) SetAgentDirs(dirs ...string) { a.files = NewCatalog(dirs...) }

// SetCatalog makes the service look agents up in c, which the caller shares: an agent
// file the caller has read (to check it, or to list it) is not read again for the first
// turn. Call it before use.
func (a *Service) SetCatalog(c *Catalog) { a.files = c }

// AgentErrors reports agent files that failed to load at the last listing, each with
// its file, line and key.
func (a *Service) AgentErrors() []error { return a.files.Errors() }

// Errors reports the agent files that failed to load at the last listing, each with its
// file, line and key.
func (c *Catalog) Errors() []error {
	c.Files()
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]error(nil), c.errs...)
}

// Files lists the agent files of the directories (valid ones only), then those loaded
// by path.
func (c *Catalog) Files() []demo.Agent {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	stamps := map[string]string{}
	for _, d := range c.dirs {
		names, _ := filepath.Glob(filepath.Join(d, "*.toml"))
		sort.Strings(names)
		for _, n := range names {
			if st := fileStamp(n); st != "" {
				stamps[n] = st
				fmt.Fprintf(&b, "%s\x00%s\n", n, st)
			}
		}
	}
	if s := b.String(); s != c.stamp || c.agents == nil {
		c.agents, c.errs = FindAgentsIn(c.dirs)
		if c.agents == nil {
			c.agents = []demo.Agent{}
		}
		c.stamp = s
		// by absolute path (a Getwd each for a relative directory): on a reload only, not
		// on every check; the stamps are those taken before the files were read, so a file
		// changed meanwhile is read again at its next use
		byAbs := make(map[string]string, len(stamps))
		for n, st := range stamps {
			byAbs[absPath(n)] = st
		}
		c.listed = map[string]pathAgent{}
		for _, ag := range c.agents {
			abs := absPath(ag.Source)
			c.listed[abs] = pathAgent{agent: ag, stamp: byAbs[abs]}
		}
	}
	out := append([]demo.Agent(nil), c.agents...)
	for _, p := range c.byPath {
		if !hasSource(out, p.agent.Source) {
			out = append(out, p.agent)
		}
	}
	return out
}

// listedFile is the agent of the directories' last listing whose file is at abs, when the
// file is as that listing read it: one stat, where found lists the directories again
// (every Send of a file agent resolves it).
func (c *Catalog) listedFile(abs string) (demo.Agent, bool) {
	c.mu.Lock()
	l, ok := c.listed[abs]
	c.mu.Unlock()
	if !ok || l.stamp == "" || fileStamp(abs) != l.stamp {
		return demo.Agent{}, false
	}
	return l.agent, true
}

// found is the agent of the directories' listing whose file is at abs.
func (c *Catalog) found(abs string) (demo.Agent, bool) {
	c.Files() // brings the listing up to date
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ag := range c.agents {
		if absPath(ag.Source) == abs {
			return ag, true
		}
	}
	return demo.Agent{}, false
}

// byFile is the agent of the file at abs (not in the directories), read again when its
// size or modification time changed since it was last read.
func (c *Catalog) byFile(abs string) (demo.Agent, error) {
	stamp := fileStamp(abs)
	c.mu.Lock()
	p, ok := c.byPath[abs]
	c.mu.Unlock()
	if ok && stamp != "" && p.stamp == stamp {
		return p.agent, nil
	}
	ag, err := LoadAgentFile(abs)
	if err != nil {
		return demo.Agent{}, err
	}
	c.mu.Lock()
	if c.byPath == nil {
		c.byPath = map[string]pathAgent{}
	}
	c.byPath[abs] = pathAgent{agent: ag, stamp: stamp}
	c.mu.Unlock()
	return ag, nil
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

// All are the built-in agents, then the agent files.
func (c *Catalog) All() []demo.Agent {
	return append(demo.Agents(), c.Files()...)
}

// Resolve finds an agent by built-in name, agent-file name (case-insensitive) or
// agent-file path.
func (c *Catalog) Resolve(ref string) (demo.Agent, error) {
	if isPath(ref) {
		// no built-in name is a path (Lookup builds every built-in agent: every Send of
		// a file agent resolves it)
		abs := absPath(ref)
		if ag, ok := c.listedFile(abs); ok {
			return ag, nil
		}
		if ag, ok := c.found(abs); ok {
			return ag, nil
		}
		return c.byFile(abs)
	}
	if ag, ok := demo.Lookup(ref); ok {
		return ag, nil
	}
	files := c.Files()
	for _, ag := range files {
		if strings.EqualFold(ag.Name, ref) {
			return ag, nil
		}
	}
	var names []string
	for _, ag := range append(demo.Agents(), files...) {
		names = append(names, ag.Name)
	}
	return demo.Agent{}, fmt.Errorf("no agent %q (agents: %s; agent files are read from %s; or give a path to an agent file)",
		ref, strings.Join(names, ", "), strings.Join(c.dirs, ", "))
}

// AgentRef is what a conversation stores to find its agent again: a built-in agent's
// name, or an agent file's absolute path (a name alone would depend on the directory
// the workbench or command is started from).
func AgentRef(ag demo.Agent) string {
	if ag.Source == "" || ag.Source == "built-in" {
		return ag.Name
	}
	return absPath(ag.Source)
}

// Name is the name to show for a stored agent reference.
func (c *Catalog) Name(ref string) string {
	if !isPath(ref) {
		return ref
	}
	if ag, err := c.Resolve(ref); err == nil {
		return ag.Name
	}
	return strings.TrimSuffix(filepath.Base(ref), filepath.Ext(ref))
}

// Agents lists the built-in demo agents, then the agent files (and files that stored
// conversations were started with).
func (a *Service) Agents() []AgentInfo {
	var out []AgentInfo
	for _, ag := range a.files.All() {
		out = append(out, agentInfo(ag))
	}
	return out
}
