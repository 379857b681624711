package workflow

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/sessionbench/sessionbench/core/tomlfile"
)

// steps compiles a list of sibling steps run in order; avail (the fields set so far)
// grows with what each step writes. mode is the innermost compound step's context
// mode ("" at the top level); stack holds the workflows being expanded (cycles).
func (c *compiler) steps(list []stepSpec, key string, avail map[string]bool, mode string, stack []string) []*step {
	var out []*step
	names := map[string]bool{}
	for i := range list {
		k := key + "." + strconv.Itoa(i)
		if n := list[i].Name; n != "" {
			if names[n] {
				c.errf(k+".name", "step name %q is used twice here", n)
			}
			names[n] = true
		}
		st, writes := c.step(&list[i], k, avail, mode, stack)
		for _, w := range writes {
			avail[w] = true
		}
		if st != nil {
			out = append(out, st)
		}
	}
	return out
}

// step compiles one step and returns the fields it writes into its own scope.
func (c *compiler) step(ss *stepSpec, key string, avail map[string]bool, mode string, stack []string) (*step, []string) {
	if ss.Name == "" {
		c.errf(key, "a step needs a name")
	}
	st := &step{name: ss.Name, path: joinDots(c.stepPath, ss.Name), onError: ss.OnError, maxRetries: ss.MaxRetries, retryUntil: ss.RetryUntil, best: ss.Best,
		counter: ss.Counter, bestTo: ss.BestAttempt, statusTo: ss.Status}
	kinds := 0
	for _, set := range []bool{ss.Predictor != "", ss.Tool != "", ss.Set != nil, ss.Workflow != "", ss.Steps != nil} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		c.errf(key, "step %q needs exactly one of predictor, tool, set, workflow or steps", ss.Name)
		return nil, nil
	}
	switch ss.OnError {
	case "", "fail", "skip", "retry":
	default:
		c.errf(key+".on_error", "%q is not one of fail, skip, retry", ss.OnError)
	}
	if ss.OnError == "retry" && ss.MaxRetries < 2 {
		c.errf(key+".max_retries", "on_error = \"retry\" needs max_retries of 2 or more (attempts in total)")
	}
	if ss.MaxRetries > 1 && ss.OnError != "retry" && ss.RetryUntil == "" {
		c.errf(key+".max_retries", "max_retries needs on_error = \"retry\" or retry_until")
	}
	if ss.MaxRetries < 0 {
		c.errf(key+".max_retries", "max_retries is negative")
	}
	if ss.Loop != nil {
		if ss.Loop.MaxIterations < 1 {
			c.errf(key+".loop.max_iterations", "a loop needs max_iterations of 1 or more")
		}
		if ss.MaxRetries > 1 || ss.RetryUntil != "" {
			c.errf(key+".loop", "a step either loops or retries, not both")
		}
		st.loopMax, st.loopUntil = ss.Loop.MaxIterations, ss.Loop.Until
	}
	compound := ss.Workflow != "" || ss.Steps != nil
	if !compound {
		for k, set := range map[string]bool{"context_mode": ss.ContextMode != "", "parallel": ss.Parallel, "summarize": ss.Summarize, "module": ss.Module != ""} {
			if set {
				c.errf(key+"."+k, "%s applies to compound steps (steps or workflow) only", k)
			}
		}
	}
	var writes []string
	switch {
	case ss.Predictor != "":
		writes = c.predictorStep(ss, st, key, avail, mode)
	case ss.Tool != "":
		writes = c.toolStep(ss, st, key, avail)
	case ss.Set != nil:
		st.kind = kindSet
		for _, to := range sortedKeys(ss.Set) {
			if !identRe.MatchString(to) {
				c.errf(key+".set", "%q is not a valid field name", to)
				continue
			}
			st.set = append(st.set, c.bind(to, ss.Set[to], key+".set", avail))
			writes = append(writes, to)
		}
	default:
		return st, c.compoundStep(ss, st, key, avail, mode, stack)
	}
	// A leaf loop or retry sees its own writes on later attempts; its checks and meta
	// fields live in the same scope.
	local := union(avail, writes)
	c.checkAttemptFields(ss, key, local)
	return st, append(writes, metaFields(ss)...)
}

// predictorStep binds a predictor's inputs and outputs.
func (c *compiler) predictorStep(ss *stepSpec, st *step, key string, avail map[string]bool, mode string) []string {
	st.kind, st.predName = kindPredict, ss.Predictor
	pi := c.preds[ss.Predictor]
	if pi == nil {
		c.errf(key+".predictor", "unknown predictor %q (defined: %s)", ss.Predictor, strings.Join(c.order, ", "))
		return nil
	}
	st.pred = pi.p
	c.uses = append(c.uses, predUse{pred: ss.Predictor, module: c.module, key: key})
	switch {
	case pi.mode == "-":
		pi.mode, pi.modeKey = mode, key
	case pi.mode != mode:
		c.errf(key+".predictor", "predictor %q runs under %s here but under %s at %s; a predictor has one history, so define a second one",
			ss.Predictor, modeName(mode), modeName(pi.mode), tomlfile.DisplayKey(pi.modeKey))
	}
	if pi.p.Signature == nil {
		return nil // its own error was reported
	}
	var ins, outs []string
	for _, f := range pi.p.Signature.Inputs {
		if !f.Type.IsHistory() {
			ins = append(ins, f.Name)
		}
	}
	for _, f := range pi.p.Signature.Outputs {
		outs = append(outs, f.Name)
	}
	return c.bindIO(ss, st, key, avail, "predictor "+strconv.Quote(ss.Predictor), ins, outs)
}

func modeName(mode string) string {
	if mode == "" {
		return "the top level"
	}
	return "context_mode " + mode
}

func (c *compiler) toolStep(ss *stepSpec, st *step, key string, avail map[string]bool) []string {
	st.kind, st.tool = kindTool, ss.Tool
	t, ok := c.env.Tools[ss.Tool]
	if !ok {
		c.errf(key+".tool", "unknown tool %q (built-in tools: %s)", ss.Tool, c.env.toolNames())
		return nil
	}
	st.run = t.Run
	return c.bindIO(ss, st, key, avail, "tool "+strconv.Quote(ss.Tool), t.Inputs, t.Outputs)
}

// bindIO maps a leaf's inputs from the scope (same-named fields unless mapped) and its
// results back (all under their names unless outputs is given).
func (c *compiler) bindIO(ss *stepSpec, st *step, key string, avail map[string]bool, what string, ins, outs []string) []string {
	for _, k := range sortedKeys(ss.Inputs) {
		if !contains(ins, k) {
			c.errf(key+".inputs", "%s has no input %q (inputs: %s)", what, k, strings.Join(ins, ", "))
		}
	}
	for _, in := range ins {
		from, mapped := ss.Inputs[in]
		if !mapped {
			from = "{" + in + "}"
		}
		where := key + ".inputs"
		if !mapped {
			where = key
		}
		st.inputs = append(st.inputs, c.bind(in, from, where, avail))
	}
	if ss.Outputs == nil {
		return outs
	}
	var writes []string
	for _, to := range sortedKeys(ss.Outputs) {
		from := ss.Outputs[to]
		if !contains(outs, from) {
			c.errf(key+".outputs", "%s has no output %q (outputs: %s)", what, from, strings.Join(outs, ", "))
			continue
		}
		st.outputs = append(st.outputs, binding{to: to, from: from})
		writes = append(writes, to)
	}
	if st.outputs == nil {
		st.outputs = []binding{}
	}
	return writes
}

// bind makes a binding from a value expression: exactly "{field}" reads that field
// with its type; any other text is a template ("{a} and {b}", or plain literal text).
// Every field it reads must be set by then.
func (c *compiler) bind(to, from, key string, avail map[string]bool) binding {
	if m := fieldRefRe.FindStringSubmatch(from); m != nil {
		if !avail[m[1]] {
			c.errf(key, "%q reads field %q, which is not produced by any earlier step (available: %s)", to, m[1], fieldList(avail))
		}
		return binding{to: to, from: m[1]}
	}
	names, err := templateFields(from)
	if err != nil {
		c.errf(key, "bad template for %q: %v", to, err)
	}
	for _, n := range names {
		if !avail[n] {
			c.errf(key, "template for %q reads field %q, which is not produced by any earlier step (available: %s)", to, n, fieldList(avail))
		}
	}
	return binding{to: to, from: from, tmpl: true}
}

var fieldRefRe = regexp.MustCompile(`^\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}$`)

// compoundStep compiles sub-steps in a child scope according to the context mode.
func (c *compiler) compoundStep(ss *stepSpec, st *step, key string, avail map[string]bool, mode string, stack []string) []string {
	st.kind = kindCompound
	outerStep := c.stepPath
	c.stepPath = st.path
	defer func() { c.stepPath = outerStep }()
	if path := c.moduleStep(ss, st, key, mode); path != "" {
		outer := c.module
		c.module = path
		defer func() { c.module = outer }()
	}
	st.parallel = ss.Parallel
	st.mode = ss.ContextMode
	if st.mode == "" {
		st.mode = "isolated" // seed 002's default
	}
	if !contains([]string{"isolated", "shared", "inherited"}, st.mode) {
		c.errf(key+".context_mode", "%q is not one of isolated, shared, inherited", ss.ContextMode)
		st.mode = "isolated"
	}
	sub, subKey := ss.Steps, key+".steps"
	if ss.Workflow != "" {
		wf, ok := c.spec.Workflows[ss.Workflow]
		switch {
		case !ok:
			c.errf(key+".workflow", "unknown workflow %q (defined: %s)", ss.Workflow, strings.Join(sortedKeys(c.spec.Workflows), ", "))
			return nil
		case contains(stack, ss.Workflow):
			c.errf(key+".workflow", "workflow cycle: %s -> %s", strings.Join(stack, " -> "), ss.Workflow)
			return nil
		}
		sub, subKey, stack = wf.Steps, "workflows."+ss.Workflow+".steps", append(append([]string(nil), stack...), ss.Workflow)
	}
	if len(sub) == 0 {
		c.errf(key, "compound step %q has no sub-steps", ss.Name)
	}
	child := map[string]bool{}
	if st.mode != "isolated" {
		child = union(avail, nil)
	}
	for _, to := range sortedKeys(ss.Inputs) {
		if !identRe.MatchString(to) {
			c.errf(key+".inputs", "%q is not a valid field name", to)
			continue
		}
		st.inputs = append(st.inputs, c.bind(to, ss.Inputs[to], key+".inputs", avail))
		child[to] = true
	}
	if st.parallel {
		c.parallel(sub, subKey, child, st.mode, stack, st)
	} else {
		st.sub = c.steps(sub, subKey, child, st.mode, stack)
	}
	if ss.Loop != nil {
		c.checkAttemptFields(ss, key, child)
		for _, m := range metaFields(ss) {
			child[m] = true
		}
	}
	var writes []string
	if st.mode == "shared" {
		for f := range child {
			if !avail[f] {
				writes = append(writes, f)
			}
		}
	}
	for _, to := range sortedKeys(ss.Outputs) {
		from := ss.Outputs[to]
		if !child[from] {
			c.errf(key+".outputs", "output %q: field %q is not produced by the sub-steps (available: %s)", to, from, fieldList(child))
			continue
		}
		st.outputs = append(st.outputs, binding{to: to, from: from})
		writes = append(writes, to)
	}
	if ss.Summarize {
		st.summaryTo = ss.SummaryTo
		if st.summaryTo == "" {
			st.summaryTo = ss.Name + "_summary"
		}
		if !identRe.MatchString(st.summaryTo) {
			c.errf(key+".summary_to", "summary field %q is not a valid field name (set summary_to)", st.summaryTo)
		}
		writes = append(writes, st.summaryTo)
	} else if ss.SummaryTo != "" {
		c.errf(key+".summary_to", "summary_to needs summarize = true")
	}
	if ss.Loop == nil {
		c.checkAttemptFields(ss, key, union(avail, writes))
		writes = append(writes, metaFields(ss)...)
	}
	sortStrings(writes)
	return writes
}

// parallel compiles branches that all start from the same fields; two branches may
// not write the same field or share a predictor (its history would depend on timing).
func (c *compiler) parallel(sub []stepSpec, key string, child map[string]bool, mode string, stack []string, st *step) {
	c.parallelDepth++
	defer func() { c.parallelDepth-- }()
	writer := map[string]string{}
	user := map[string]string{}
	var all []string
	for i := range sub {
		k := key + "." + strconv.Itoa(i)
		b, writes := c.step(&sub[i], k, union(child, nil), mode, stack)
		if b == nil {
			continue
		}
		st.sub = append(st.sub, b)
		for _, w := range writes {
			if prev, dup := writer[w]; dup && prev != b.name {
				c.errf(k, "parallel steps %q and %q both write field %q", prev, b.name, w)
			}
			writer[w] = b.name
		}
		for _, p := range predictorsOf(b) {
			if prev, dup := user[p]; dup && prev != b.name {
				c.errf(k, "parallel steps %q and %q both call predictor %q; its history would depend on timing", prev, b.name, p)
			}
			user[p] = b.name
		}
		all = append(all, writes...)
	}
	for _, w := range all {
		child[w] = true
	}
}

func predictorsOf(st *step) []string {
	var out []string
	if st.kind == kindPredict {
		out = append(out, st.predName)
	}
	for _, s := range st.sub {
		out = append(out, predictorsOf(s)...)
	}
	return out
}

// checkAttemptFields checks the until, retry_until and best fields against the fields
// set in the scope the attempts run in.
func (c *compiler) checkAttemptFields(ss *stepSpec, key string, scope map[string]bool) {
	check := func(k, field string) {
		if field != "" && !scope[field] {
			c.errf(key+"."+k, "field %q is not produced by this step (available: %s)", field, fieldList(scope))
		}
	}
	if ss.Loop != nil {
		check("loop.until", ss.Loop.Until)
	}
	check("retry_until", ss.RetryUntil)
	check("best", ss.Best)
	if ss.Loop == nil && ss.MaxRetries <= 1 && ss.RetryUntil == "" {
		for k, v := range map[string]string{"best": ss.Best, "counter": ss.Counter, "best_attempt": ss.BestAttempt, "status": ss.Status} {
			if v != "" {
				c.errf(key+"."+k, "%s applies to loops and retries only", k)
			}
		}
	}
	for k, v := range map[string]string{"counter": ss.Counter, "best_attempt": ss.BestAttempt, "status": ss.Status} {
		if v != "" && !identRe.MatchString(v) {
			c.errf(key+"."+k, "%q is not a valid field name", v)
		}
	}
}

func metaFields(ss *stepSpec) []string {
	var out []string
	for _, f := range []string{ss.Counter, ss.BestAttempt, ss.Status} {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

func union(a map[string]bool, extra []string) map[string]bool {
	out := make(map[string]bool, len(a)+len(extra))
	for k := range a {
		out[k] = true
	}
	for _, k := range extra {
		out[k] = true
	}
	return out
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
