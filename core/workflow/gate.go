package workflow

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
)

var timeNow Clock = time.Now

// gate orders the predictor calls of parallel branches. The session engine numbers
// calls when they start, so concurrent branches would otherwise be recorded in
// whatever order the scheduler picked. Branches take turns round-robin: branch i may
// start its next call only when it holds the turn, and passes the turn on as soon as
// its model call has started (the engine has numbered it by then). The model calls
// themselves still overlap; a branch that is busy between calls makes the others wait
// for its next call or its end, which is the price of a deterministic record.
type gate struct {
	mu   sync.Mutex
	cond *sync.Cond
	turn int
	done []bool
}

func newGate(n int) *gate {
	g := &gate{done: make([]bool, n)}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *gate) acquire(ctx context.Context, i int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.turn != i {
		if err := ctx.Err(); err != nil {
			return err
		}
		g.cond.Wait()
	}
	return nil
}

// pass hands the turn on from i (no-op when i does not hold it).
func (g *gate) pass(i int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.turn == i {
		g.advance()
	}
}

func (g *gate) finish(i int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.done[i] = true
	if g.turn == i {
		g.advance()
	}
}

// advance moves the turn to the next unfinished branch (caller holds mu).
func (g *gate) advance() {
	n := len(g.done)
	for k := 1; k <= n; k++ {
		if j := (g.turn + k) % n; !g.done[j] {
			g.turn = j
			g.cond.Broadcast()
			return
		}
	}
	g.turn = -1
	g.cond.Broadcast()
}

type gateKey struct{}

type gateSlot struct {
	g *gate
	i int
}

func withGate(ctx context.Context, g *gate, i int) context.Context {
	return context.WithValue(ctx, gateKey{}, gateSlot{g, i})
}

func gateFrom(ctx context.Context) *gateSlot {
	s, ok := ctx.Value(gateKey{}).(gateSlot)
	if !ok {
		return nil
	}
	return &s
}

type startKey struct{}

// started tells the gate that the call under ctx has begun talking to its model.
func started(ctx context.Context) {
	if f, ok := ctx.Value(startKey{}).(func()); ok {
		f()
	}
}

// callPredictor runs a predictor inside the current turn, taking its place in the
// parallel order when inside a parallel branch.
func callPredictor(ctx context.Context, p *core.Predict, in *sig.Map) (*core.Prediction, error) {
	slot := gateFrom(ctx)
	if slot == nil {
		return p.Forward(ctx, in)
	}
	if err := slot.g.acquire(ctx, slot.i); err != nil {
		return nil, err
	}
	var once sync.Once
	pass := func() { once.Do(func() { slot.g.pass(slot.i) }) }
	defer pass() // the call failed before reaching a model
	ctx = context.WithValue(ctx, startKey{}, pass)
	if m := core.LMFrom(ctx); m != nil {
		ctx = core.WithLM(ctx, startLM{m})
	}
	return p.Forward(ctx, in)
}

// startLM reports the start of a call, then delegates.
type startLM struct{ inner lm.LM }

func (s startLM) Name() string { return s.inner.Name() }
func (s startLM) Call(ctx context.Context, req lm.Request) (lm.Response, error) {
	started(ctx)
	return s.inner.Call(ctx, req)
}

// ModelResolver turns a model name from an agent file ("gpt-4o-mini",
// "openai/gpt-4o") into a model; the application supplies it (see WithModelResolver).
type ModelResolver func(name string) (lm.LM, error)

type resolverKey struct{}

// WithModelResolver lets predictors that name their own model (model = "..." in an
// agent file) find it. Without a resolver such a predictor fails with a clear error.
func WithModelResolver(ctx context.Context, r ModelResolver) context.Context {
	return context.WithValue(ctx, resolverKey{}, r)
}

// modelRef is a predictor's model override, resolved when the call is made.
type modelRef struct{ name string }

func (m modelRef) Name() string { return m.name }
func (m modelRef) Call(ctx context.Context, req lm.Request) (lm.Response, error) {
	started(ctx)
	r, _ := ctx.Value(resolverKey{}).(ModelResolver)
	if r == nil {
		return lm.Response{}, fmt.Errorf("model %q: this agent names its own model but no model resolver is configured", m.name)
	}
	l, err := r(m.name)
	if err != nil {
		return lm.Response{}, fmt.Errorf("model %q: %w", m.name, err)
	}
	return l.Call(ctx, req)
}

// renderTemplate fills {field} references; {{ and }} stand for literal braces.
func renderTemplate(t string, lookup func(string) (string, bool)) (string, error) {
	var b strings.Builder
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c == '{' && i+1 < len(t) && t[i+1] == '{':
			b.WriteByte('{')
			i++
		case c == '}' && i+1 < len(t) && t[i+1] == '}':
			b.WriteByte('}')
			i++
		case c == '{':
			end := strings.IndexByte(t[i:], '}')
			if end < 0 {
				return "", fmt.Errorf("template %q: unclosed '{' at column %d", t, i+1)
			}
			name := strings.TrimSpace(t[i+1 : i+end])
			v, ok := lookup(name)
			if !ok {
				return "", fmt.Errorf("template %q: field %q is not set", t, name)
			}
			b.WriteString(v)
			i += end
		case c == '}':
			return "", fmt.Errorf("template %q: unmatched '}' at column %d", t, i+1)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// templateFields lists the fields a template refers to, or the first syntax error.
func templateFields(t string) ([]string, error) {
	var names []string
	_, err := renderTemplate(t, func(n string) (string, bool) { names = append(names, n); return "", true })
	return names, err
}
