package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/wirediff"
	"github.com/sessionbench/sessionbench/llm"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

// StrategiesUsage are the `wire strategies` lines for the wire command's usage listing.
var StrategiesUsage = []string{
	"wire strategies [--json] [FILE]",
	"                             every predictor's messages under strategies 1-5, with tokens",
	"                             and lint (scenario JSON; --help shows its format)",
}

// Exit codes of `wire strategies` (the wire command's: 0 ok, 1 failed, 2 bad input).
const (
	strategiesOK       = 0
	strategiesFailed   = 1 // a strategy could not be rendered (its error is in the output)
	strategiesBadInput = 2
)

var strategiesHelp = `usage: sessionbench wire strategies [--json] [--model M] [--strategies 1,3,5] [--path P] [FILE]

Renders, without calling any model, the messages each predictor of an agent would send
for the next turn under each of the five history strategies (docs/wire/template-language.md):

` + strategyTable() + `
"keep" strategies give the predictor's history field its OWN earlier calls (inputs and
outputs of turns[].calls with its path); "inherit" ones give it the OUTER turns (each
turn's inputs then outputs). Each message gets its token count (tiktoken, offline:
cl100k_base for gpt-4/gpt-3.5 models, o200k_base otherwise); the request total is the
messages' sum plus 3 tokens that prime the reply. Wire lint warnings follow each request.

The scenario (FILE, or standard input when FILE is absent or "-") is one JSON object:

  {
    "model": "gpt-4o-mini",              optional: picks the tokenizer (--model overrides)
    "agent": {
      "signature": "question -> reply",  the outer module's signature (string or object form)
      "instructions": "...",             optional
      "max_turns": 3,                    optional window over the outer history
      "predictors": [
        {"path": "classify",             the predictor's name in the agent
         "signature": "question -> intent",
         "instructions": "Classify the customer's intent.",     optional
         "type": "Predict",              or "ChainOfThought" (adds the "reasoning" output)
         "max_turns": 2,                 optional window over its own history
         "mapping": {"user": "{question}", "assistant": "{reply}"},
                                         optional strategy 4 mapping over outer history keys;
                                         default: outer inputs -> user, outer outputs -> assistant
         "demos": [{...}]}               optional few-shot examples
      ]},
    "turns": [                           the completed outer turns, oldest first
      {"inputs": {"question": "..."}, "outputs": {"reply": "...", "intent": "..."},
       "calls": [{"path": "classify", "inputs": {...}, "outputs": {...}}, ...]}],
    "current": {                         the turn being rendered
      "inputs": {"question": "..."},     the outer inputs
      "calls": {"respond": {"question": "...", "intent": "technical"}}},
                                         optional per-predictor inputs; a predictor without
                                         an entry gets the outer inputs its signature names
    "strategies": [1, 2, 3, 4, 5],       optional subset (--strategies overrides)
    "template_for_keep": false           optional: strategy 1 as the seed's template
  }

Signatures are DSPy strings ("question, k: int -> ids: list[int]") or the object form of
'wire format' ({"instructions":..., "inputs":[{"name":..,"type":..,"desc":..}], "outputs":[...]}).
Values keep their JSON kinds (2.0 stays a float) and key order.

--json prints:
  {"model": "...", "encoding": "o200k_base",
   "predictors": [{"path": "classify", "type": "Predict", "signature": "question, history: History -> intent",
     "strategies": [{"number": 1, "name": "per-predictor", "policy": "keep", "adapter": "chat",
       "history": {"source": "own", "turns": 1, "truncated": 0},
       "messages": [{"role": "system", "content": "...", "tokens": 97}, ...],
       "tokens": 160,
       "lint": [{"message": 2, "field": "intent", "kind": "missing-output", "text": "..."}],
       "error": "..."}]}]}           (error only when the strategy could not be rendered;
                                     lint message is -1 when not tied to one message)

Exit codes: 0 rendered, 1 a strategy could not be rendered, 2 bad input (one line on
stderr saying what and where: a JSON path, or line and column for malformed JSON).
`

// strategyTable lists the five strategies (core.Strategies) for the help text.
func strategyTable() string {
	var b strings.Builder
	for _, st := range core.Strategies {
		fmt.Fprintf(&b, "  %d %-27s %-11s %s\n", st.Number, st.Name, st.Policy(), st.Desc)
	}
	return b.String()
}

// Output of --json (documented in strategiesHelp).
type strategiesOut struct {
	Model      string         `json:"model"`
	Encoding   string         `json:"encoding"`
	Predictors []predictorOut `json:"predictors"`
}

type predictorOut struct {
	Path       string        `json:"path"`
	Type       string        `json:"type"`
	Signature  string        `json:"signature"`
	Strategies []strategyOut `json:"strategies"`
}

type strategyOut struct {
	Number   int          `json:"number"`
	Name     string       `json:"name"`
	Policy   string       `json:"policy"`
	Adapter  string       `json:"adapter"`
	History  historyOut   `json:"history"`
	Messages []messageOut `json:"messages"`
	Tokens   int          `json:"tokens"`
	Lint     []lintOut    `json:"lint"`
	Error    string       `json:"error,omitempty"`
}

type historyOut struct {
	Source    string `json:"source"` // own, outer or own+outer
	Turns     int    `json:"turns"`  // entries in the history field
	Truncated int    `json:"truncated"`
}

type messageOut struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	Tokens  int    `json:"tokens"`
}

type lintOut struct {
	Message int    `json:"message"`
	Field   string `json:"field"`
	Kind    string `json:"kind"`
	Text    string `json:"text"`
}

// MissingInput is this command's own lint kind: an input of the predictor's signature
// that the scenario does not give for the current turn (no section is sent for it).
const MissingInput = "missing-input"

// runWireStrategies is `wire strategies`; env.Args are the arguments after "strategies".
func runWireStrategies(ctx context.Context, env Env) int {
	bad := func(err error) int {
		fmt.Fprintf(env.Stderr, "wire strategies: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return strategiesBadInput
	}
	fs := newFlags("wire strategies")
	asJSON := fs.Bool("json", false, "print JSON for machines")
	model := fs.String("model", "", "model whose tokenizer counts tokens (default: the scenario's \"model\")")
	only := fs.String("strategies", "", "comma-separated strategy numbers to show (default: the scenario's, or 1-5)")
	path := fs.String("path", "", "show only the predictor at this path")
	for _, a := range env.Args {
		if a == "--" {
			break
		}
		if isHelp(a) {
			// The scenario format is the help, then the flags.
			fmt.Fprint(env.Stdout, strategiesHelp+"\nflags:\n")
			fs.SetOutput(env.Stdout)
			fs.PrintDefaults()
			return strategiesOK
		}
	}
	pos, code, done := parseFlags(env, fs, env.Args, true)
	if done {
		return code
	}
	if len(pos) > 1 {
		return bad(fmt.Errorf("want at most one scenario file, got %d arguments %s", len(pos), strings.TrimSpace(quoteArgs(pos))))
	}
	var (
		data  []byte
		err   error
		where string
	)
	if len(pos) == 0 || pos[0] == "-" {
		if data, err = readInput(env.Stdin, "standard input", maxRequest); err != nil {
			return bad(err)
		}
	} else {
		if data, err = readFile(pos[0], maxRequest); err != nil {
			return bad(fmt.Errorf("reading the scenario: %w", err))
		}
		where = pos[0] + ": "
	}
	sc, err := decodeScenario(data)
	if err != nil {
		return bad(fmt.Errorf("%s%w", where, err))
	}
	if *model != "" {
		sc.Model = *model
	}
	if *only != "" {
		if sc.Strategies, err = parseStrategyList(*only); err != nil {
			return bad(err)
		}
	}
	if *path != "" {
		p := sc.predictor(*path)
		if p == nil {
			return bad(sc.unknownPath("--path", *path))
		}
		sc.Predictors = []*scenarioPredictor{p}
	}
	out, failed, err := renderScenario(ctx, sc)
	if err != nil {
		fmt.Fprintf(env.Stderr, "wire strategies: %v\n", err)
		return strategiesFailed
	}
	if *asJSON {
		if err := writeJSONOut(env.Stdout, out); err != nil {
			fmt.Fprintf(env.Stderr, "wire strategies: %v\n", err)
			return strategiesFailed
		}
	} else {
		printStrategies(env.Stdout, out)
	}
	for _, f := range failed {
		fmt.Fprintf(env.Stderr, "wire strategies: %s\n", f)
	}
	if len(failed) > 0 {
		return strategiesFailed
	}
	return strategiesOK
}

func parseStrategyList(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 || n > 5 {
			return nil, fmt.Errorf("--strategies: want numbers 1 to 5 separated by commas, got %q", part)
		}
		out = append(out, n)
	}
	return out, nil
}

// histories of one predictor for the current turn.
type histories struct {
	own, outer       sig.History
	ownCut, outerCut int
}

// window keeps the last n entries (n < 0: all) and says how many it cut.
func window(msgs []*sig.Map, n int) (sig.History, int) {
	if n < 0 || len(msgs) <= n {
		return sig.History{Messages: msgs}, 0
	}
	return sig.History{Messages: msgs[len(msgs)-n:]}, len(msgs) - n
}

// entry merges inputs then outputs, as a session's history message does.
func entry(inputs, outputs *sig.Map) *sig.Map {
	m := inputs.Clone()
	outputs.Range(func(k string, v any) bool { m.Set(k, v); return true })
	return m
}

func (sc *scenario) histories(p *scenarioPredictor) histories {
	var own, outer []*sig.Map
	for _, t := range sc.Turns {
		outer = append(outer, entry(t.Inputs, t.Outputs))
		for _, c := range t.Calls {
			if c.Path == p.Path {
				own = append(own, entry(c.Inputs, c.Outputs))
			}
		}
	}
	var h histories
	h.own, h.ownCut = window(own, p.MaxTurns)
	h.outer, h.outerCut = window(outer, sc.OuterMaxTurns)
	return h
}

// inputs are the predictor's inputs for the current turn: its current.calls entry, or
// else the outer inputs its signature names. missing lists the inputs not given.
func (sc *scenario) inputs(p *scenarioPredictor) (in *sig.Map, missing []string) {
	in, explicit := sc.CallInputs[p.Path]
	if explicit {
		in = in.Clone()
	} else {
		in = sig.NewMap()
	}
	for _, f := range p.Signature.Inputs {
		if f.Type.IsHistory() {
			continue
		}
		if !explicit {
			if v, ok := sc.Current.Get(f.Name); ok {
				in.Set(f.Name, v)
			}
		}
		if !in.Has(f.Name) {
			missing = append(missing, f.Name)
		}
	}
	return in, missing
}

// renderScenario renders every predictor under the scenario's strategies. failed lists
// the strategies that could not be rendered; err is a failure of the whole run.
func renderScenario(ctx context.Context, sc *scenario) (out strategiesOut, failed []string, err error) {
	out = strategiesOut{Model: sc.Model, Encoding: llm.EncodingFor(sc.Model), Predictors: []predictorOut{}}
	for _, p := range sc.Predictors {
		if err := ctx.Err(); err != nil {
			return out, nil, err
		}
		eff := withHistory(p.Signature)
		po := predictorOut{Path: p.Path, Type: p.Type, Signature: eff.String(), Strategies: []strategyOut{}}
		h := sc.histories(p)
		in, missing := sc.inputs(p)
		for _, n := range sc.Strategies {
			so, err := renderStrategy(sc, p, n, eff, h, in, missing)
			if err != nil {
				so.Error = err.Error()
				failed = append(failed, fmt.Sprintf("%s, strategy %d: %v", p.Path, n, err))
			}
			po.Strategies = append(po.Strategies, so)
		}
		out.Predictors = append(out.Predictors, po)
	}
	return out, failed, nil
}

// renderStrategy formats one predictor call under strategy n (core.Strategy.Render, as
// ui/sessions' preview does for a recorded call), then counts tokens and lints the result.
func renderStrategy(sc *scenario, p *scenarioPredictor, n int, eff *sig.Signature, h histories, inputs *sig.Map, missing []string) (strategyOut, error) {
	so := strategyOut{Number: n, Name: core.StrategyName(n), Messages: []messageOut{}, Lint: []lintOut{}}
	st, err := core.Preset(n, eff, core.PresetOptions{Outer: sc.Outer, Mapping: p.Mapping, TemplateForKeep: sc.TemplateForKeep})
	if err != nil {
		return so, err
	}
	so.Policy, so.Adapter = st.Policy(), st.Adapter.Name()
	hist, cut, maxTurns := h.own, h.ownCut, p.MaxTurns
	so.History.Source = "own"
	switch {
	case st.Nested == core.NestedInherit:
		hist, cut, maxTurns = h.outer, h.outerCut, sc.OuterMaxTurns
		so.History.Source = "outer"
	case st.Outer:
		so.History.Source = "own+outer"
	}
	so.History.Turns, so.History.Truncated = len(hist.Messages), cut
	msgs, _, err := st.Render(eff, p.Demos, inputs, h.own, h.outer)
	if err != nil {
		return so, fmt.Errorf("rendering: %w", err)
	}
	per, total, err := llm.CountTokens(sc.Model, msgs)
	if err != nil {
		return so, err
	}
	for i, m := range msgs {
		so.Messages = append(so.Messages, messageOut{Role: m.Role, Content: m.Content, Tokens: per[i]})
	}
	so.Tokens = total
	warns := wirediff.Lint(wirediff.Facts{Signature: eff, Adapter: st.Adapter, History: &hist, Messages: msgs, Truncated: cut, MaxTurns: maxTurns})
	if st.Outer && h.outerCut > 0 {
		warns = append(warns, wirediff.Warning{Kind: wirediff.Truncated, Message: -1,
			Text: fmt.Sprintf("outer context: %s not shown: agent max_turns=%d keeps the last %d", termtext.Count(h.outerCut, "earlier turn"), sc.OuterMaxTurns, sc.OuterMaxTurns)})
	}
	last := lastUser(msgs)
	for _, f := range missing {
		warns = append(warns, wirediff.Warning{Kind: MissingInput, Message: last, Field: f,
			Text: fmt.Sprintf("input %q has no value this turn (give it in current.calls.%s or current.inputs), so it is not sent", f, p.Path)})
	}
	for _, w := range warns {
		so.Lint = append(so.Lint, lintOut{Message: w.Message, Field: w.Field, Kind: w.Kind, Text: w.Text})
	}
	return so, nil
}

func lastUser(msgs []lm.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return i
		}
	}
	return -1
}

// printStrategies writes the readable form: per predictor and strategy a header, each
// message with its token count and its content indented, the request total, the warnings.
func printStrategies(w io.Writer, out strategiesOut) {
	model := out.Model
	if model == "" {
		model = "no model given"
	}
	fmt.Fprintf(w, "tokens: %s (%s)\n", out.Encoding, model)
	for _, p := range out.Predictors {
		fmt.Fprintf(w, "\n=== %s (%s) %s\n", p.Path, p.Type, p.Signature)
		for _, s := range p.Strategies {
			fmt.Fprintf(w, "\n--- strategy %d: %s | policy %s | %s adapter | history: %s\n", s.Number, s.Name, s.Policy, s.Adapter, describeHistory(s.History))
			if s.Error != "" {
				fmt.Fprintf(w, "error: %s\n", s.Error)
				continue
			}
			sum := 0
			for i, m := range s.Messages {
				sum += m.Tokens
				fmt.Fprintf(w, "[%d] %s (%d tokens)\n", i, m.Role, m.Tokens)
				for _, line := range strings.Split(m.Content, "\n") {
					if line == "" {
						fmt.Fprintln(w)
					} else {
						fmt.Fprintln(w, "    "+line)
					}
				}
			}
			fmt.Fprintf(w, "request: %d tokens (%d in %d messages + %d to prime the reply)\n", s.Tokens, sum, len(s.Messages), s.Tokens-sum)
			for _, l := range s.Lint {
				fmt.Fprintln(w, "warning: "+lintLine(l))
			}
		}
	}
}

func describeHistory(h historyOut) string {
	turns := func(n int) string {
		if n == 1 {
			return "1 turn"
		}
		return strconv.Itoa(n) + " turns"
	}
	s := h.Source + ", " + turns(h.Turns)
	if h.Truncated > 0 {
		s += " (" + turns(h.Truncated) + " cut by max_turns)"
	}
	return s
}

func lintLine(l lintOut) string {
	var where string
	switch {
	case l.Message >= 0 && l.Field != "":
		where = fmt.Sprintf("message %d field %s: ", l.Message, l.Field)
	case l.Message >= 0:
		where = fmt.Sprintf("message %d: ", l.Message)
	case l.Field != "":
		where = fmt.Sprintf("field %s: ", l.Field)
	}
	return where + l.Text + " [" + l.Kind + "]"
}
