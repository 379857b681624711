package template

import (
	"fmt"
	"strings"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
)

// Policy is the nested-session policy a strategy needs (seed 000 §6): whose history the
// predictor's history field receives.
type Policy string

// Policies.
const (
	PolicyKeep      Policy = "keep"       // the predictor's own calls
	PolicyInherit   Policy = "inherit"    // the outer session's history
	PolicyKeepOuter Policy = "keep+outer" // own calls in the history field, outer history beside it
)

// Strategy is the adapter side of one of the five strategies; sessions are elsewhere.
type Strategy struct {
	Number  int
	Name    string
	Policy  Policy
	Adapter adapter.Adapter
}

// History picks the history the predictor's history field receives under the strategy's
// policy: its own calls, or the outer session's history under inherit.
func (st Strategy) History(own, outer sig.History) sig.History {
	if st.Policy == PolicyInherit {
		return outer
	}
	return own
}

// Render formats one call of a predictor (eff: its signature with the history field)
// under the strategy, given both histories; it returns the messages and the history put
// in the history field. Previews, dry runs and `wire strategies` all render through it.
func (st Strategy) Render(eff *sig.Signature, demos []*sig.Map, inputs *sig.Map, own, outer sig.History) ([]lm.Message, sig.History, error) {
	hist := st.History(own, outer)
	in := inputs.Clone()
	in.Set(eff.HistoryField(), hist)
	msgs, err := st.Adapter.Format(adapter.Request{Signature: eff, Demos: demos, Inputs: in, OuterHistory: &outer})
	return msgs, hist, err
}

// Mapping is strategy 4's choice of what an OUTER history entry shows as the user and
// the assistant turn: templates with plain {key} placeholders over the entry's keys.
type Mapping struct {
	User      string
	Assistant string
}

// PresetOptions tune the presets.
type PresetOptions struct {
	// Outer is the outer module's signature; strategy 4's default mapping is its inputs
	// as the user turn and its outputs as the assistant turn.
	Outer *sig.Signature
	// Mapping overrides strategy 4's mapping (per child, as the seed recommends).
	Mapping *Mapping
	// TemplateForKeep makes strategy 1 use the template form of the seed instead of
	// ChatAdapter.
	TemplateForKeep bool
}

// strategyTable is the table at the end of template-language.md, as data: the policy and
// the system-message tail each strategy adds after {instruction}; strategies 1 (template
// form), 4 and 5 also place a history directive.
var strategyTable = []struct {
	name       string
	policy     Policy
	chat       bool   // ChatAdapter rather than a template
	systemTail string // appended to "{instruction}"
	directive  bool   // a {"role":"history"} directive before the user message
	mapped     bool   // the directive carries strategy 4's mapping
}{
	{name: "per-predictor", policy: PolicyKeep, chat: true, directive: true},
	{name: "outer, signature-filtered", policy: PolicyInherit, chat: true},
	{name: "outer inline", policy: PolicyInherit, systemTail: "\n\nPrior conversation for context:\n{history(style='yaml')}"},
	{name: "outer field mapping", policy: PolicyInherit, directive: true, mapped: true},
	{name: "hybrid", policy: PolicyKeepOuter, systemTail: "\n\nFull conversation context:\n{outer_history(style='yaml')}", directive: true},
}

// StrategyName names strategy n (1-5).
func StrategyName(n int) string {
	if n < 1 || n > len(strategyTable) {
		return ""
	}
	return strategyTable[n-1].name
}

// Preset returns strategy n (1-5) for a predictor with the given signature. Templates
// follow the seed: system "{instruction}" (plus the strategy's context), the user message
// "{field}" for a single input or "{inputs(style='yaml')}" otherwise. One output field
// parses as full_text, so replies in history are the bare value as the seed draws them;
// several parse as json, and the system message then lists the fields.
func Preset(n int, predictor *sig.Signature, opts PresetOptions) (Strategy, error) {
	if n < 1 || n > len(strategyTable) {
		return Strategy{}, fmt.Errorf("strategy %d: want 1 to 5", n)
	}
	if predictor == nil {
		return Strategy{}, fmt.Errorf("strategy %d: no predictor signature", n)
	}
	row := strategyTable[n-1]
	st := Strategy{Number: n, Name: row.name, Policy: row.policy}
	if row.chat && !(n == 1 && opts.TemplateForKeep) {
		st.Adapter = adapter.Chat{}
		return st, nil
	}
	system := "{instruction}" + row.systemTail
	mode := ParseFullText
	if len(predictor.Outputs) != 1 {
		mode = ParseJSON
		system += "\n\nRespond with a JSON object with these keys:\n{outputs()}"
	}
	msgs := []MessageTemplate{{Role: "system", Content: system}}
	if row.directive {
		d := MessageTemplate{Role: RoleHistory}
		if row.mapped {
			m, err := strategyMapping(opts)
			if err != nil {
				return Strategy{}, fmt.Errorf("strategy 4: %w", err)
			}
			d.User, d.Assistant = Str(m.User), Str(m.Assistant)
		}
		msgs = append(msgs, d)
	}
	msgs = append(msgs, MessageTemplate{Role: "user", Content: userTemplate(predictor)})
	t, err := New(msgs, mode)
	if err != nil {
		return Strategy{}, fmt.Errorf("strategy %d: %w", n, err)
	}
	st.Adapter = t
	return st, nil
}

// Presets returns all five strategies for one predictor (strategy 4 is left out, with
// its error, when no mapping can be made).
func Presets(predictor *sig.Signature, opts PresetOptions) ([]Strategy, error) {
	out := make([]Strategy, 0, len(strategyTable))
	for n := 1; n <= len(strategyTable); n++ {
		st, err := Preset(n, predictor, opts)
		if err != nil {
			return out, err
		}
		out = append(out, st)
	}
	return out, nil
}

func strategyMapping(opts PresetOptions) (Mapping, error) {
	if opts.Mapping != nil {
		return *opts.Mapping, nil
	}
	if opts.Outer == nil {
		return Mapping{}, fmt.Errorf("needs the outer signature or an explicit user/assistant mapping")
	}
	return DefaultMapping(opts.Outer), nil
}

// DefaultMapping maps an outer history entry to a user turn made of the outer inputs and
// an assistant turn made of the outer outputs: "{field}" for one field, "name: {name}"
// lines for several. History fields are left out.
func DefaultMapping(outer *sig.Signature) Mapping {
	var ins []string
	for _, f := range outer.Inputs {
		if !f.Type.IsHistory() {
			ins = append(ins, f.Name)
		}
	}
	outs := make([]string, len(outer.Outputs))
	for i, f := range outer.Outputs {
		outs[i] = f.Name
	}
	return Mapping{User: placeholders(ins), Assistant: placeholders(outs)}
}

func placeholders(names []string) string {
	if len(names) == 1 {
		return "{" + names[0] + "}"
	}
	lines := make([]string, len(names))
	for i, n := range names {
		lines[i] = n + ": {" + n + "}"
	}
	return strings.Join(lines, "\n")
}

func userTemplate(s *sig.Signature) string {
	var ins []string
	for _, f := range s.Inputs {
		if !f.Type.IsHistory() {
			ins = append(ins, f.Name)
		}
	}
	if len(ins) == 1 {
		return "{" + ins[0] + "}"
	}
	return "{inputs(style='yaml')}"
}
