package workflow

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/tomlfile"
)

// Module steps: a compound step with module = "TypeName" runs its sub-steps as a
// sub-module of the workflow, the way a Go agent calls a nested module through
// core.Call. The session then records one module-level call (path = the step's name,
// under any enclosing module step's path; type = the module value) whose children are
// the calls made inside, and the module keeps a turn of its own per call. Predictors
// called inside a module step are named under its path ("research.query" inside step
// "research"), so that their paths match the Go agent's.

// stepModule is a module step as a core.Module: walked for its predictors, called by
// its step.
type stepModule struct {
	w    *Workflow
	st   *step
	path string
	typ  string
	subs []core.Sub
}

func (m *stepModule) TypeName() string       { return m.typ }
func (m *stepModule) Submodules() []core.Sub { return m.subs }

type scopeKey struct{}

// Forward runs the step's sub-steps in a child scope of the calling step's scope (the
// context mode decides which) seeded with in, and returns the step's outputs under the
// sub-steps' field names.
func (m *stepModule) Forward(ctx context.Context, in *sig.Map) (*core.Prediction, error) {
	parent, _ := ctx.Value(scopeKey{}).(*scope)
	if parent == nil {
		parent = newScope(nil) // called directly, not from its step
	}
	child, _, err := m.w.runChild(ctx, parent, m.st, in)
	if err != nil {
		return nil, err
	}
	out := sig.NewMap()
	for _, b := range m.st.outputs {
		v, ok := child.get(b.from)
		if !ok {
			return nil, fmt.Errorf("output %q: field %q was not produced (a skipped step?)", b.to, b.from)
		}
		out.Set(b.from, v)
	}
	return &core.Prediction{Fields: out}, nil
}

// runModule calls a module step's module with its resolved inputs and writes the
// returned fields to the parent scope.
func (w *Workflow) runModule(ctx context.Context, parent *scope, st *step, seed *sig.Map) error {
	p, err := core.Call(context.WithValue(ctx, scopeKey{}, parent), st.module, seed)
	if err != nil {
		return err
	}
	for _, b := range st.outputs {
		v, _ := p.Fields.Get(b.from)
		parent.set(b.to, v)
	}
	return nil
}

// moduleTree lists the workflow's parts: predictors under their dotted names, with the
// module steps' modules at their paths and plain groups elsewhere.
func moduleTree(preds []namedPredict, mods map[string]*stepModule) []core.Sub {
	root := &group{}
	kids := func(m core.Module) *[]core.Sub {
		switch x := m.(type) {
		case *group:
			return &x.subs
		case *stepModule:
			return &x.subs
		}
		return nil
	}
	var place func(list *[]core.Sub, prefix string, segs []string, leaf core.Module)
	place = func(list *[]core.Sub, prefix string, segs []string, leaf core.Module) {
		if len(segs) == 1 && leaf != nil {
			*list = append(*list, core.Sub{Name: segs[0], Module: leaf})
			return
		}
		path := joinDots(prefix, segs[0])
		var next core.Module
		for _, s := range *list {
			if s.Name == segs[0] && kids(s.Module) != nil {
				next = s.Module
				break
			}
		}
		if next == nil {
			if m := mods[path]; m != nil {
				next = m
			} else {
				next = &group{name: path}
			}
			*list = append(*list, core.Sub{Name: segs[0], Module: next})
		}
		if len(segs) > 1 {
			place(kids(next), path, segs[1:], leaf)
		}
	}
	for _, np := range preds {
		place(&root.subs, "", strings.Split(np.name, "."), np.p)
	}
	paths := make([]string, 0, len(mods))
	for p := range mods {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths { // modules without predictors of their own
		place(&root.subs, "", strings.Split(p, "."), nil)
	}
	return root.subs
}

func joinDots(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// predUse is where a predictor is called: inside which module step (path, "" at the
// top) and at which key.
type predUse struct {
	pred, module, key string
}

// moduleStep checks a compound step's module key and returns its path ("" when the
// step is not a module step). The enclosing context mode decides the module's own
// history, as for a predictor step.
func (c *compiler) moduleStep(ss *stepSpec, st *step, key, mode string) string {
	if ss.Module == "" {
		return ""
	}
	ok := true
	if !identRe.MatchString(ss.Module) {
		c.errf(key+".module", "module type %q must be a name (it labels the module's call record)", ss.Module)
		ok = false
	}
	if !identRe.MatchString(ss.Name) {
		c.errf(key+".name", "module step name %q must be a field-like name: it is the module's call path", ss.Name)
		ok = false
	}
	if c.parallelDepth > 0 {
		c.errf(key+".module", "a module step cannot run inside a parallel step: its record's place would depend on timing")
		ok = false
	}
	if ss.Summarize {
		c.errf(key+".summarize", "summarize does not apply to module steps (the module returns its outputs)")
		ok = false
	}
	if !ok {
		return ""
	}
	path := joinDots(c.module, ss.Name)
	if prev, dup := c.modules[path]; dup {
		c.errf(key+".name", "module step path %q is used twice (also at %s; a workflow holding a module step can be used once)", path, tomlfile.DisplayKey(prev.key))
		return path // still the sub-steps' module, so their predictors are not reported too
	}
	st.modType = ss.Module
	c.modules[path] = &moduleInfo{key: key, mode: mode, st: st}
	return path
}

// moduleInfo is a module step found while compiling.
type moduleInfo struct {
	key  string
	mode string // the context mode the step runs under
	st   *step
}

// checkModules checks that every predictor is called inside the module step its name
// places it under, and none is named like a module.
func (c *compiler) checkModules() {
	if len(c.modules) == 0 {
		return
	}
	owner := func(pred string) string {
		best := ""
		for p := range c.modules {
			if strings.HasPrefix(pred, p+".") && len(p) > len(best) {
				best = p
			}
		}
		return best
	}
	for _, u := range c.uses {
		if _, clash := c.modules[u.pred]; clash {
			c.errf(u.key+".predictor", "predictor %q has the path of a module step; name it under the module (%s.<name>)", u.pred, u.pred)
			continue
		}
		switch o := owner(u.pred); {
		case o == u.module:
		case u.module == "":
			c.errf(u.key+".predictor", "predictor %q belongs to module step %q by its name; call it inside that step", u.pred, o)
		default:
			c.errf(u.key+".predictor", "predictor %q is called inside module step %q, so its name must start with %q", u.pred, u.module, u.module+".")
		}
	}
}

// modeConfig maps a context mode to a child's nested policy and scope (see the package
// documentation).
func modeConfig(mode string) core.ChildConfig {
	var cc core.ChildConfig
	switch mode {
	case "isolated":
		cc.Nested, cc.Scope = core.NestedKeep, core.PerTurn
	case "shared":
		cc.Nested = core.NestedInherit
	case "inherited":
		cc.Nested, cc.Scope = core.NestedKeep, core.CrossTurn
	}
	return cc
}

// moduleOptions turns on recursion over modules when the file has module steps, gives
// each module its enclosing mode's history and leaves plain name groups unwrapped.
func (c *compiler) moduleOptions(o *core.Options) {
	if len(c.modules) == 0 {
		return
	}
	o.Recursive = core.Modules
	o.Where = func(_ string, m core.Module) bool { _, g := m.(*group); return !g }
	for path, mi := range c.modules {
		if cc := modeConfig(mi.mode); cc.Nested != "" {
			if o.ChildConfigs == nil {
				o.ChildConfigs = map[string]core.ChildConfig{}
			}
			o.ChildConfigs[path] = cc
		}
	}
}

// attachModules builds each module step's module for the workflow and the workflow's
// module tree.
func (c *compiler) attachModules(w *Workflow) {
	mods := map[string]*stepModule{}
	for path, mi := range c.modules {
		m := &stepModule{w: w, st: mi.st, path: path, typ: mi.st.modType}
		mi.st.module = m
		mods[path] = m
	}
	w.subs = moduleTree(w.preds, mods)
}
