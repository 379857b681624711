package workflow

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// Workflow is an agent file compiled into a module: named predictors and a tree of
// steps reading and writing fields of a scope. It is a core.Composite, so a recursive
// session finds its predictors under their names.
type Workflow struct {
	name    string
	inputs  []string
	outputs []string
	params  *sig.Map
	preds   []namedPredict
	steps   []*step
	now     Clock
	subs    []core.Sub // the module tree, when built at compile time (moduleTree)
}

type namedPredict struct {
	name string
	p    *core.Predict
}

type stepKind int

const (
	kindPredict stepKind = iota
	kindTool
	kindSet
	kindCompound
)

// binding feeds a target field from a scope field or, for text, from a template.
type binding struct {
	to   string
	from string
	tmpl bool // from is a {field} template, not a field name
}

// step is one compiled workflow step (see the package documentation for the keys).
type step struct {
	name     string
	path     string // dotted step names from the top ("attempt", "review.check")
	kind     stepKind
	pred     *core.Predict
	predName string
	tool     string
	run      func(in *sig.Map, now time.Time) (*sig.Map, error) // the tool
	set      []binding
	inputs   []binding // predictor/tool inputs, or the child scope's initial fields
	outputs  []binding // scope field <- result field; nil: every result under its name
	mode     string    // isolated, shared, inherited (compound steps)
	parallel bool
	sub      []*step

	onError    string // fail, skip, retry
	maxRetries int    // attempts in total
	retryUntil string
	loopMax    int
	loopUntil  string
	best       string // score field for the best attempt
	counter    string
	bestTo     string
	statusTo   string
	summaryTo  string // "" when not summarising

	module  *stepModule // module steps: called through core.Call
	modType string
}

// TypeName is the agent's name, shown in traces.
func (w *Workflow) TypeName() string { return w.name }

// Submodules lists the predictors; dotted names ("researcher.summarizer") become
// nested groups so that paths match a Go agent built the same way.
func (w *Workflow) Submodules() []core.Sub {
	if w.subs != nil {
		return w.subs
	}
	root := &group{}
	for _, np := range w.preds {
		root.add(strings.Split(np.name, "."), np.p)
	}
	return root.Submodules()
}

// group is a node of dotted predictor names; it is only walked, never called.
type group struct {
	name string
	subs []core.Sub
}

func (g *group) add(path []string, p *core.Predict) {
	if len(path) == 1 {
		g.subs = append(g.subs, core.Sub{Name: path[0], Module: p})
		return
	}
	for _, s := range g.subs {
		if c, ok := s.Module.(*group); ok && s.Name == path[0] {
			c.add(path[1:], p)
			return
		}
	}
	c := &group{name: path[0]}
	c.add(path[1:], p)
	g.subs = append(g.subs, core.Sub{Name: path[0], Module: c})
}

func (g *group) Submodules() []core.Sub { return g.subs }
func (g *group) TypeName() string       { return "Group" }
func (g *group) Forward(context.Context, *sig.Map) (*core.Prediction, error) {
	return nil, fmt.Errorf("%s groups predictors and cannot be called", g.name)
}

// Forward runs the steps on a scope holding the parameters and the inputs and returns
// the declared outputs.
func (w *Workflow) Forward(ctx context.Context, in *sig.Map) (*core.Prediction, error) {
	sc := newScope(nil)
	w.params.Range(func(k string, v any) bool { sc.set(k, sig.Clone(v)); return true })
	for _, name := range w.inputs {
		v, ok := in.Get(name)
		if !ok && name == "history" {
			// Like a forward that declares history=: the session's history, which the
			// session keeps out of the inputs it passes on.
			v, ok = core.CurrentHistory(ctx)
		}
		if !ok {
			return nil, fmt.Errorf("%s: missing input %q", w.name, name)
		}
		sc.set(name, v)
	}
	if _, err := w.runSteps(ctx, sc, w.steps, nil); err != nil {
		return nil, fmt.Errorf("%s: %w", w.name, err)
	}
	out := sig.NewMap()
	for _, name := range w.outputs {
		v, ok := sc.get(name)
		if !ok {
			return nil, fmt.Errorf("%s: output %q was not produced (a skipped step?)", w.name, name)
		}
		out.Set(name, v)
	}
	return &core.Prediction{Fields: out}, nil
}

// scope holds the fields steps read and write. Reads fall through to parent (the
// inherited context mode); writes always stay local.
type scope struct {
	vals    *sig.Map
	parent  *scope
	written []string // local keys in first-write order (for summaries and joins)
}

func newScope(parent *scope) *scope { return &scope{vals: sig.NewMap(), parent: parent} }

func (s *scope) get(k string) (any, bool) {
	for c := s; c != nil; c = c.parent {
		if v, ok := c.vals.Get(k); ok {
			return v, true
		}
	}
	return nil, false
}

func (s *scope) set(k string, v any) {
	if !s.vals.Has(k) {
		s.written = append(s.written, k)
	}
	s.vals.Set(k, v)
}

// save and restore take the local state for retries and best attempts.
func (s *scope) save() (*sig.Map, []string) {
	return s.vals.Clone(), append([]string(nil), s.written...)
}

func (s *scope) restore(vals *sig.Map, written []string) {
	s.vals, s.written = vals.Clone(), append([]string(nil), written...)
}

// changed lists the local fields that are new or different since before (a save), in
// first-write order: what an attempt produced.
func (s *scope) changed(before *sig.Map) *sig.Map {
	out := sig.NewMap()
	for _, k := range s.written {
		v, _ := s.vals.Get(k)
		if old, ok := before.Get(k); !ok || !py.Same(old, v) {
			out.Set(k, v)
		}
	}
	return out
}

// runSteps runs steps in order. stop, when set, is checked after every step (a loop's
// until condition); it reports whether it stopped early.
func (w *Workflow) runSteps(ctx context.Context, sc *scope, steps []*step, stop func() bool) (bool, error) {
	for _, st := range steps {
		if err := w.runStep(ctx, sc, st); err != nil {
			return false, err
		}
		if stop != nil && stop() {
			return true, nil
		}
	}
	return false, nil
}

// runStep runs a step with its retries. Every attempt starts from the scope as it was
// before the step; when the acceptance condition is never met the best-scoring
// attempt's result is kept (seed 003).
func (w *Workflow) runStep(ctx context.Context, sc *scope, st *step) error {
	if st.maxRetries <= 1 && st.retryUntil == "" {
		err := w.runOnce(ctx, sc, st)
		if err != nil && st.onError == "skip" {
			return nil
		}
		return wrapStep(st, err)
	}
	before, beforeW := sc.save()
	log := &AttemptLog{Step: st.path, Max: max(st.maxRetries, 1)}
	var states []*sig.Map // the scope after each attempt (nil when it failed)
	var lastErr error
	accepted := false
	for log.CanRetry() {
		sc.restore(before, beforeW)
		lastErr = w.runOnce(log.Begin(ctx), sc, st)
		if ctx.Err() != nil {
			return wrapStep(st, ctx.Err())
		}
		if lastErr != nil {
			if st.onError != "retry" {
				break
			}
			log.Fail(lastErr)
			states = append(states, nil)
			continue
		}
		score, _ := sc.get(st.best)
		f, _ := Score(score)
		vals, _ := sc.save()
		log.Add(f, sc.changed(before))
		states = append(states, vals)
		if st.retryUntil == "" {
			accepted = true
			break
		}
		if v, _ := sc.get(st.retryUntil); Truthy(v) {
			accepted = true
			break
		}
	}
	log.Record(ctx)
	best := log.Best()
	switch {
	case accepted:
	case best != nil:
		sc.restore(before, beforeW)
		states[best.N-1].Range(func(k string, v any) bool { sc.set(k, v); return true })
	case lastErr != nil && st.onError == "skip":
		sc.restore(before, beforeW)
		return nil
	case lastErr != nil:
		return wrapStep(st, fmt.Errorf("%d attempts failed, last: %w", log.Count(), lastErr))
	}
	w.writeMeta(sc, st, log, accepted)
	return nil
}

func wrapStep(st *step, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("step %q: %w", st.name, err)
}

// writeMeta writes the attempt count, the best attempt and the status where asked.
func (w *Workflow) writeMeta(sc *scope, st *step, log *AttemptLog, accepted bool) {
	if st.counter != "" {
		sc.set(st.counter, int64(log.Count()))
	}
	if st.bestTo != "" {
		sc.set(st.bestTo, int64(log.BestAttempt))
	}
	if st.statusTo != "" {
		// seed 003's statuses: completed when the acceptance condition was met, needs_human
		// when the attempts ran out without meeting it
		status := trace.StatusNeedsHuman
		if accepted {
			status = trace.StatusCompleted
		}
		sc.set(st.statusTo, string(status))
	}
}

// runOnce runs one attempt of a step (all iterations when it loops).
func (w *Workflow) runOnce(ctx context.Context, sc *scope, st *step) error {
	if st.kind == kindCompound {
		return w.runCompound(ctx, sc, st)
	}
	if st.loopMax == 0 {
		return w.runLeaf(ctx, sc, st)
	}
	return w.loop(ctx, sc, st, func(ctx context.Context, stop func() bool) (bool, error) {
		if err := w.runLeaf(ctx, sc, st); err != nil {
			return false, err
		}
		return stop(), nil
	})
}

// loop repeats body until the until field is true or the iterations run out, tracking
// the best iteration by score; body reports whether it stopped. With a score field
// (best) the iterations are attempts (seed 003) and are recorded as such.
func (w *Workflow) loop(ctx context.Context, sc *scope, st *step, body func(ctx context.Context, stop func() bool) (bool, error)) error {
	log := &AttemptLog{Step: st.path, Max: st.loopMax}
	var states []*sig.Map // the scope after each iteration
	stop := func() bool {
		if st.loopUntil == "" {
			return false
		}
		v, _ := sc.get(st.loopUntil)
		return Truthy(v)
	}
	accepted := false
	for log.CanRetry() {
		bctx := ctx
		if st.best != "" {
			bctx = log.Begin(ctx)
		}
		prev, _ := sc.save()
		stopped, err := body(bctx, stop)
		if err != nil {
			return fmt.Errorf("iteration %d: %w", log.Count()+1, err)
		}
		f := 0.0
		if st.best != "" {
			v, _ := sc.get(st.best)
			f, _ = Score(v)
		}
		vals, _ := sc.save()
		log.Add(f, sc.changed(prev))
		states = append(states, vals)
		if stopped {
			accepted = true
			break
		}
	}
	if st.best != "" {
		log.Record(ctx)
	}
	if !accepted && st.best != "" {
		if b := log.Best(); b != nil {
			states[b.N-1].Range(func(k string, v any) bool { sc.set(k, v); return true })
		}
	}
	w.writeMeta(sc, st, log, accepted)
	return nil
}

// runCompound runs sub-steps in a child scope chosen by the context mode, then hands
// the mapped outputs and the summary to the parent.
func (w *Workflow) runCompound(ctx context.Context, parent *scope, st *step) error {
	seed := sig.NewMap()
	for _, b := range st.inputs {
		v, err := resolve(parent, b)
		if err != nil {
			return err
		}
		seed.Set(b.to, v)
	}
	if st.module != nil {
		return w.runModule(ctx, parent, st, seed)
	}
	child, start, err := w.runChild(ctx, parent, st, seed)
	if err != nil {
		return err
	}
	for _, b := range st.outputs {
		v, ok := child.get(b.from)
		if !ok {
			return fmt.Errorf("output %q: field %q was not produced (a skipped step?)", b.to, b.from)
		}
		parent.set(b.to, v)
	}
	if st.summaryTo != "" {
		parent.set(st.summaryTo, summarize(st.name, child, start))
	}
	return nil
}

// runChild runs a compound step's sub-steps (all iterations when it loops) in a child
// scope chosen by the context mode and seeded with seed; it returns the child and how
// many fields it had written before the sub-steps ran (for summaries).
func (w *Workflow) runChild(ctx context.Context, parent *scope, st *step, seed *sig.Map) (*scope, int, error) {
	var child *scope
	switch st.mode {
	case "shared":
		child = parent
	case "inherited":
		child = newScope(parent)
	default: // isolated
		child = newScope(nil)
	}
	seed.Range(func(k string, v any) bool { child.set(k, v); return true })
	start := len(child.written)
	run := func(ctx context.Context, stop func() bool) (bool, error) {
		if st.parallel && gateFrom(ctx) == nil {
			return false, w.runParallel(ctx, child, st.sub)
		}
		return w.runSteps(ctx, child, st.sub, stop)
	}
	var err error
	if st.loopMax > 0 {
		err = w.loop(ctx, child, st, run)
	} else {
		_, err = run(ctx, nil)
	}
	return child, start, err
}

// summarize is seed 002's string feedback: what the child wrote, one line.
func summarize(name string, child *scope, start int) string {
	var parts []string
	for _, k := range child.written[min(start, len(child.written)):] {
		v, _ := child.vals.Get(k)
		s := strings.Join(strings.Fields(py.Text(v)), " ")
		if r := []rune(s); len(r) > 120 {
			s = string(r[:117]) + "..."
		}
		parts = append(parts, k+"="+s)
	}
	if len(parts) == 0 {
		return name + ": nothing produced"
	}
	return name + ": " + strings.Join(parts, "; ")
}

// runParallel forks one inherited scope per sub-step, runs them concurrently and joins
// their writes in declaration order. Calls start in a fixed round-robin order (see
// gate), so the turn's call records come out in the same order on every run.
func (w *Workflow) runParallel(ctx context.Context, sc *scope, subs []*step) error {
	g := newGate(len(subs))
	scopes := make([]*scope, len(subs))
	errs := make([]error, len(subs))
	var wg sync.WaitGroup
	for i, st := range subs {
		scopes[i] = newScope(sc)
		wg.Add(1)
		go func(i int, st *step) {
			defer wg.Done()
			defer g.finish(i)
			errs[i] = w.runStep(withGate(ctx, g, i), scopes[i], st)
		}(i, st)
	}
	wg.Wait()
	for i := range subs {
		if errs[i] != nil {
			return errs[i]
		}
	}
	for _, bs := range scopes {
		for _, k := range bs.written {
			v, _ := bs.vals.Get(k)
			sc.set(k, v)
		}
	}
	return nil
}

// runLeaf runs a predictor, tool or set step once.
func (w *Workflow) runLeaf(ctx context.Context, sc *scope, st *step) error {
	in := sig.NewMap()
	for _, b := range st.inputs {
		v, err := resolve(sc, b)
		if err != nil {
			return err
		}
		in.Set(b.to, v)
	}
	var res *sig.Map
	switch st.kind {
	case kindSet:
		for _, b := range st.set {
			v, err := resolve(sc, b)
			if err != nil {
				return err
			}
			sc.set(b.to, v)
		}
		return nil
	case kindTool:
		r, err := st.run(in, w.clock()())
		if err != nil {
			return err
		}
		res = r
	case kindPredict:
		p, err := callPredictor(ctx, st.pred, in)
		if err != nil {
			return err
		}
		res = p.Fields
	}
	if st.outputs == nil {
		res.Range(func(k string, v any) bool { sc.set(k, v); return true })
		return nil
	}
	for _, b := range st.outputs {
		v, ok := res.Get(b.from)
		if !ok {
			return fmt.Errorf("result has no field %q", b.from)
		}
		sc.set(b.to, v)
	}
	return nil
}

func (w *Workflow) clock() Clock {
	if w.now == nil {
		return timeNow
	}
	return w.now
}

// resolve reads a binding's value: a field (any type) or a rendered template (text).
func resolve(sc *scope, b binding) (any, error) {
	if !b.tmpl {
		v, ok := sc.get(b.from)
		if !ok {
			return nil, fmt.Errorf("field %q is not set (a skipped step?)", b.from)
		}
		return v, nil
	}
	return renderTemplate(b.from, func(name string) (string, bool) {
		v, ok := sc.get(name)
		return py.Text(v), ok
	})
}
