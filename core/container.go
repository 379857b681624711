package core

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// Container is seed 000's SessionContainer: named sessions with unified operations. It is a
// Module (its Flow runs when it is called) and a Composite, so an orchestrator that holds
// it can itself be sessionified and the sessions inside are found as nested sessions.
type Container struct {
	mu       sync.Mutex
	names    []string
	sessions map[string]*Session
	// Flow is what calling the container does; nil means calling it is an error.
	Flow func(ctx context.Context, c *Container, inputs *sig.Map) (*Prediction, error)
}

// NewContainer holds the sessions under their names, in the given order.
func NewContainer(names []string, sessions []*Session) (*Container, error) {
	if len(names) != len(sessions) {
		return nil, fmt.Errorf("container: %d names for %d sessions", len(names), len(sessions))
	}
	c := &Container{sessions: map[string]*Session{}}
	for i, n := range names {
		if _, dup := c.sessions[n]; dup {
			return nil, fmt.Errorf("container: name %q used twice", n)
		}
		if sessions[i] == nil {
			return nil, fmt.Errorf("container: session %q is nil", n)
		}
		c.names = append(c.names, n)
		c.sessions[n] = sessions[i]
	}
	return c, nil
}

// Get is attribute-like lookup (container.planner in Python); nil when absent.
func (c *Container) Get(name string) *Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions[name]
}

// Names lists the sessions in order.
func (c *Container) Names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.names...)
}

// NamedSessions returns the sessions by name.
func (c *Container) NamedSessions() map[string]*Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]*Session, len(c.sessions))
	for k, v := range c.sessions {
		out[k] = v
	}
	return out
}

// Len is the total number of turns across all sessions.
func (c *Container) Len() int {
	n := 0
	for _, s := range c.NamedSessions() {
		n += s.Len()
	}
	return n
}

// Forward runs the container's Flow.
func (c *Container) Forward(ctx context.Context, inputs *sig.Map) (*Prediction, error) {
	if c.Flow == nil {
		return nil, fmt.Errorf("container: no Flow set, call its sessions by name")
	}
	return c.Flow(ctx, c, inputs)
}

// Submodules exposes the sessions for walking.
func (c *Container) Submodules() []Sub {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Sub, len(c.names))
	for i, n := range c.names {
		out[i] = Sub{Name: n, Module: c.sessions[n]}
	}
	return out
}

// TypeName labels the container in traces.
func (c *Container) TypeName() string { return "SessionContainer" }

// Reset resets one session by name, or all when name is "".
func (c *Container) Reset(name string) error {
	if name != "" {
		s := c.Get(name)
		if s == nil {
			return fmt.Errorf("container: no session %q", name)
		}
		s.Reset(true)
		return nil
	}
	for _, s := range c.NamedSessions() {
		s.Reset(true)
	}
	return nil
}

// Save hands each session's save file to store under the session's name; store opens
// and closes where it goes (the CLI: dir/<name>.json) and calls write with it.
func (c *Container) Save(store func(name string, write func(w io.Writer) error) error) error {
	for _, n := range c.Names() {
		if err := store(n, c.Get(n).Save); err != nil {
			return fmt.Errorf("container save %q: %w", n, err)
		}
	}
	return nil
}

// Fork forks every session (cascading).
func (c *Container) Fork() *Container {
	names := c.Names()
	ss := make([]*Session, len(names))
	for i, n := range names {
		ss[i] = c.Get(n).Fork(true)
	}
	f, _ := NewContainer(names, ss)
	f.Flow = c.Flow
	return f
}

// ToExamples returns each session's examples by name.
func (c *Container) ToExamples(o ExampleOptions) (map[string][]Example, error) {
	out := map[string][]Example{}
	for _, n := range c.Names() {
		ex, err := c.Get(n).ToExamples(o)
		if err != nil {
			return nil, fmt.Errorf("container %q: %w", n, err)
		}
		out[n] = ex
	}
	return out, nil
}

// ScoreAll scores every session's turns.
func (c *Container) ScoreAll(metric Metric) (map[string][]float64, error) {
	out := map[string][]float64{}
	for _, n := range c.Names() {
		sc, err := c.Get(n).Score(metric, nil)
		if err != nil {
			return nil, fmt.Errorf("container %q: %w", n, err)
		}
		out[n] = sc
	}
	return out, nil
}

// Update replaces a session, or hot-swaps its module when given a Module (turns kept).
func (c *Container) Update(name string, sessionOrModule Module) error {
	c.mu.Lock()
	cur, ok := c.sessions[name]
	c.mu.Unlock()
	if !ok {
		return fmt.Errorf("container: no session %q", name)
	}
	if s, isSession := sessionOrModule.(*Session); isSession {
		c.mu.Lock()
		c.sessions[name] = s
		c.mu.Unlock()
		return nil
	}
	return cur.UpdateModule(sessionOrModule)
}

// ShareHistory makes the named sessions one conversation: a turn recorded by any of them
// is added to the others (through AddTurn, filtered by each one's own history settings).
func (c *Container) ShareHistory(names ...string) error {
	group := make([]*Session, len(names))
	for i, n := range names {
		if group[i] = c.Get(n); group[i] == nil {
			return fmt.Errorf("container: no session %q", n)
		}
	}
	for _, s := range group {
		s := s
		s.mu.Lock()
		prev := s.opts.OnTurn
		s.opts.OnTurn = func(from *Session, t *trace.Turn) {
			if prev != nil {
				prev(from, t)
			}
			for _, o := range group {
				if o != s {
					o.AddTurn(t.Inputs, t.Outputs)
				}
			}
		}
		s.mu.Unlock()
	}
	return nil
}

// Replay re-runs this session's turn inputs with another module into a new session with
// the same options (compare runs).
func (s *Session) Replay(ctx context.Context, module Module) (*Session, error) {
	ns, err := Sessionify(module, s.opts)
	if err != nil {
		return nil, err
	}
	ns.seed = s.seed.Clone()
	for _, t := range s.Turns() {
		if _, err := ns.Forward(ctx, t.Inputs); err != nil {
			return ns, fmt.Errorf("replay turn %d: %w", t.Index, err)
		}
	}
	return ns, nil
}
