package workflow

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/template"
	"github.com/sessionbench/sessionbench/core/tomlfile"
)

// compiler validates an agent file and builds its workflow; every problem is collected
// with its line and key rather than stopping at the first.
type compiler struct {
	file  string
	dir   string
	ix    *tomlfile.TOML
	spec  *fileSpec
	env   Env
	errs  tomlfile.FileErrors
	seen  map[string]bool
	preds map[string]*predInfo
	order []string

	stepPath string // dotted names of the compound steps being compiled

	// module steps (module_step.go)
	module        string                 // path of the module step being compiled ("" at the top)
	modules       map[string]*moduleInfo // by path
	uses          []predUse
	parallelDepth int
}

type predInfo struct {
	spec    *predictorSpec
	p       *core.Predict
	mode    string // context mode it runs under ("" = top level)
	modeKey string // where that was decided
}

var (
	identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	predRe  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)
)

// errf records a problem at an index key ("steps.0.predictor").
func (c *compiler) errf(key, format string, args ...any) {
	c.errAt(c.ix.Line(key), key, fmt.Sprintf(format, args...))
}

func (c *compiler) errAt(line int, key, msg string) {
	id := strconv.Itoa(line) + "\x00" + msg
	if c.seen[id] {
		return // a workflow used twice reports its problems once
	}
	c.seen[id] = true
	c.errs = append(c.errs, &tomlfile.FileError{File: c.file, Line: line, Key: tomlfile.DisplayKey(key), Msg: msg})
}

// compile checks the file and builds a fresh workflow and its session options.
func (c *compiler) compile(now Clock) (*Workflow, core.Options, tomlfile.FileErrors) {
	c.seen, c.preds, c.modules = map[string]bool{}, map[string]*predInfo{}, map[string]*moduleInfo{}
	s := c.spec
	avail := map[string]bool{}
	params := sig.NewMap()
	for _, k := range sortedKeys(s.Params) {
		if !identRe.MatchString(k) {
			c.errf("params."+k, "parameter %q is not a valid field name", k)
		}
		params.Set(k, sig.Normalize(s.Params[k]))
		avail[k] = true
	}
	if len(s.Inputs) == 0 {
		c.errf("inputs", "the agent needs at least one input field")
	}
	for _, in := range s.Inputs {
		switch {
		case !identRe.MatchString(in):
			c.errf("inputs", "input %q is not a valid field name", in)
		case avail[in]:
			c.errf("inputs", "input %q is given twice (or is also a parameter)", in)
		}
		avail[in] = true
	}
	if s.DemoScript != "" {
		if !containsFold(c.env.DemoScripts, s.DemoScript) {
			c.errf("demo_script", "unknown demo script %q (built-in agents: %s)", s.DemoScript, strings.Join(c.env.DemoScripts, ", "))
		}
	}
	for i := range s.Predictors {
		c.predictor(&s.Predictors[i], "predictors."+strconv.Itoa(i))
	}
	if len(s.Steps) == 0 {
		c.errf("steps", "the agent has no steps")
	}
	steps := c.steps(s.Steps, "steps", avail, "", nil)
	c.checkModules()
	for _, out := range s.Outputs {
		if !avail[out] {
			c.errf("outputs", "output %q is not produced by any step (available: %s)", out, fieldList(avail))
		}
	}
	if len(s.Outputs) == 0 {
		c.errf("outputs", "the agent needs at least one output field")
	}
	opts := c.options()
	if len(c.errs) > 0 {
		c.errs.Sort()
		return nil, core.Options{}, c.errs
	}
	w := &Workflow{name: s.Name, inputs: s.Inputs, outputs: s.Outputs, params: params, steps: steps, now: now}
	if w.name == "" {
		w.name = strings.TrimSuffix(filepath.Base(c.file), filepath.Ext(c.file))
	}
	for _, n := range c.order {
		w.preds = append(w.preds, namedPredict{n, c.preds[n].p})
	}
	c.attachModules(w)
	return w, opts, nil
}

// options maps the session settings and each predictor's context mode to core options
// (the mapping is explained in the package documentation).
func (c *compiler) options() core.Options {
	ss := c.spec.Session
	o := core.Options{Recursive: core.Predictors, Record: core.RecordAll, MaxTurns: ss.MaxTurns, ExcludeFields: ss.ExcludeFields,
		NestedSessions: core.NestedPolicy(ss.NestedSessions), InnerScope: core.Scope(ss.InnerScope)}
	check := func(key, val string, ok ...string) {
		if val != "" && !contains(ok, val) {
			c.errf(key, "%q is not one of %s", val, strings.Join(ok, ", "))
		}
	}
	check("session.nested_sessions", ss.NestedSessions, "keep", "inherit", "unwrap", "error")
	check("session.inner_scope", ss.InnerScope, "cross_turn", "per_turn", "stateless")
	for _, n := range c.order {
		pi := c.preds[n]
		cc := modeConfig(pi.mode)
		if v := pi.spec.NestedSessions; v != "" {
			cc.Nested = core.NestedPolicy(v)
		}
		if v := pi.spec.InnerScope; v != "" {
			cc.Scope = core.Scope(v)
		}
		cc.ExcludeFields = pi.spec.ExcludeFields
		if pi.spec.History != nil && !*pi.spec.History {
			o.Exclude = append(o.Exclude, n)
		}
		if cc.Nested != "" || cc.Scope != "" || cc.ExcludeFields != nil {
			if o.ChildConfigs == nil {
				o.ChildConfigs = map[string]core.ChildConfig{}
			}
			o.ChildConfigs[n] = cc
		}
	}
	c.moduleOptions(&o)
	return o
}

// predictor checks one [[predictors]] entry and builds its Predict.
func (c *compiler) predictor(ps *predictorSpec, key string) {
	switch {
	case ps.Name == "":
		c.errf(key, "a predictor needs a name")
		return
	case !predRe.MatchString(ps.Name):
		c.errf(key+".name", "predictor name %q must be a name or a dotted path of names", ps.Name)
		return
	case c.preds[ps.Name] != nil:
		c.errf(key+".name", "predictor %q is defined twice", ps.Name)
		return
	}
	s := c.signature(ps, key)
	p := &core.Predict{Signature: s}
	switch ps.Type {
	case "", "Predict":
	case "ChainOfThought":
		if s != nil {
			p = core.ChainOfThought(s)
		}
	default:
		c.errf(key+".type", "type %q is not Predict or ChainOfThought", ps.Type)
	}
	p.Adapter = c.adapter(ps, key)
	if ps.JSONFallback != nil {
		if ps.Adapter != "" && ps.Adapter != "chat" {
			c.errf(key+".json_fallback", "json_fallback applies to the chat adapter only, not %q", ps.Adapter)
		}
		p.NoJSONFallback = !*ps.JSONFallback
	}
	if ps.Model != "" {
		p.LM = modelRef{ps.Model}
	}
	check := func(k, val string, ok ...string) {
		if val != "" && !contains(ok, val) {
			c.errf(key+"."+k, "%q is not one of %s", val, strings.Join(ok, ", "))
		}
	}
	check("nested_sessions", ps.NestedSessions, "keep", "inherit", "unwrap", "error")
	check("inner_scope", ps.InnerScope, "cross_turn", "per_turn", "stateless")
	c.preds[ps.Name] = &predInfo{spec: ps, p: p, mode: "-"}
	c.order = append(c.order, ps.Name)
}

func (c *compiler) signature(ps *predictorSpec, key string) *sig.Signature {
	if ps.Signature != "" {
		if len(ps.Inputs)+len(ps.Outputs) > 0 {
			c.errf(key+".signature", "give either signature or inputs/outputs fields, not both")
			return nil
		}
		s, err := sig.ParseWith(ps.Signature, ps.Instructions)
		if err != nil {
			c.errf(key+".signature", "bad signature: %v", err)
			return nil
		}
		return s
	}
	fields := func(list []fieldSpec, kind string) []sig.Field {
		var out []sig.Field
		for j, f := range list {
			fk := fmt.Sprintf("%s.%s.%d", key, kind, j)
			if !identRe.MatchString(f.Name) {
				c.errf(fk+".name", "field name %q is not valid", f.Name)
				continue
			}
			t := sig.TStr
			if f.Type != "" {
				var err error
				if t, err = sig.ParseType(f.Type); err != nil {
					c.errf(fk+".type", "bad type: %v", err)
					continue
				}
			}
			out = append(out, sig.Field{Name: f.Name, Desc: f.Desc, Type: t})
		}
		return out
	}
	in, out := fields(ps.Inputs, "inputs"), fields(ps.Outputs, "outputs")
	if len(ps.Inputs) == 0 || len(ps.Outputs) == 0 {
		c.errf(key, "predictor %q needs a signature (\"question -> answer\") or [[predictors.inputs]] and [[predictors.outputs]]", ps.Name)
		return nil
	}
	return sig.New(ps.Name, ps.Instructions, in, out)
}

func (c *compiler) adapter(ps *predictorSpec, key string) adapter.Adapter {
	if ps.Adapter != "template" && (ps.Template != nil || ps.TemplateFile != "") {
		k := key + ".template"
		if ps.TemplateFile != "" {
			k += "_file"
		}
		c.errf(k, "a template needs adapter = \"template\"")
		return nil
	}
	switch ps.Adapter {
	case "", "chat":
		return nil // ChatAdapter, as a Go predictor with no adapter
	case "json":
		return adapter.JSON{}
	case "template":
	default:
		c.errf(key+".adapter", "unknown adapter %q (chat, json or template)", ps.Adapter)
		return nil
	}
	switch {
	case ps.Template != nil && ps.TemplateFile != "":
		c.errf(key+".template_file", "give either template or template_file, not both")
	case ps.TemplateFile != "":
		path := templatePath(c.dir, ps.TemplateFile)
		if c.env.ReadFile == nil {
			c.errf(key+".template_file", "template files cannot be read here (use [predictors.template])")
			return nil
		}
		data, err := c.env.ReadFile(path)
		if err != nil {
			c.errf(key+".template_file", "%v", err)
			return nil
		}
		t, err := template.Load(data)
		if err != nil {
			c.errf(key+".template_file", "bad template %s: %v", ps.TemplateFile, err)
			return nil
		}
		return t
	case ps.Template != nil:
		msgs := make([]template.MessageTemplate, len(ps.Template.Messages))
		for i, m := range ps.Template.Messages {
			msgs[i] = template.MessageTemplate{Role: m.Role, Content: m.Content, User: m.User, Assistant: m.Assistant}
		}
		t, err := template.New(msgs, ps.Template.ParseMode)
		if err != nil {
			var te *template.TemplateError
			if errors.As(err, &te) {
				k := fmt.Sprintf("%s.template.messages.%d.%s", key, te.Message, te.Key)
				line := c.ix.Line(k)
				if line > 0 && te.Line > 0 {
					line += te.Line - 1 + c.openingNewline(line)
				}
				c.errAt(line, k, "bad template: "+te.Msg)
				return nil
			}
			c.errf(key+".template", "bad template: %v", err)
			return nil
		}
		return t
	default:
		c.errf(key+".adapter", "adapter \"template\" needs [predictors.template] or template_file")
	}
	return nil
}

// openingNewline is 1 when the value on line starts a multi-line string right at the
// end of the line (TOML drops that newline, so the text begins on the next line).
func (c *compiler) openingNewline(line int) int {
	t := strings.TrimSpace(c.ix.Text(line))
	if strings.HasSuffix(t, `"""`) || strings.HasSuffix(t, `'''`) {
		return 1
	}
	return 0
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func fieldList(avail map[string]bool) string {
	ks := sortedKeys(avail)
	if len(ks) == 0 {
		return "none"
	}
	return strings.Join(ks, ", ")
}

// containsFold reports whether list holds s, ignoring case (built-in agent names).
func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
