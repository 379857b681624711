package core

import (
	"fmt"
	"strings"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/template"
)

// StrategyInfo is one of seed 000 §6's five history strategies: its number, its one name
// (what every list, table and tab shows), the nested policy that decides whose history the
// predictor's history field receives, whether the outer history is shown beside it
// (strategy 5), and a one-line description.
type StrategyInfo struct {
	Number int
	Name   string
	Nested NestedPolicy
	// Outer: the outer history is shown as well, beside the predictor's own (hybrid).
	Outer bool
	Desc  string
}

// Policy names the strategy's history source as the strategies table writes it: the
// nested policy, "+outer" when the outer history is shown beside the own one.
func (si StrategyInfo) Policy() string {
	if si.Outer {
		return string(si.Nested) + "+outer"
	}
	return string(si.Nested)
}

// Strategy is one strategy made concrete for a predictor: the adapter that renders its
// calls.
type Strategy struct {
	StrategyInfo
	Adapter adapter.Adapter
}

// History picks the history the predictor's history field receives under the strategy's
// policy: its own calls, or the outer session's history under inherit.
func (st Strategy) History(own, outer sig.History) sig.History {
	if st.Nested == NestedInherit {
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

// Strategies are the five strategies, in order: the one source of their names.
var Strategies = []StrategyInfo{
	{1, "per-predictor", NestedKeep, false, "ChatAdapter over the predictor's own calls"},
	{2, "outer, signature-filtered", NestedInherit, false, "ChatAdapter over the outer turns"},
	{3, "outer inline", NestedInherit, false, "template: outer turns as YAML in the system message"},
	{4, "outer field mapping", NestedInherit, false, "template: outer turns as user/assistant via a mapping"},
	{5, "hybrid", NestedKeep, true, "template: outer turns as YAML + own calls as turns"},
}

// strategyTable is the table at the end of template-language.md, as data: the
// system-message tail each strategy adds after {instruction}; strategies 1 (template
// form), 4 and 5 also place a history directive.
var strategyTable = []struct {
	chat       bool   // ChatAdapter rather than a template
	systemTail string // appended to "{instruction}"
	directive  bool   // a {"role":"history"} directive before the user message
	mapped     bool   // the directive carries strategy 4's mapping
}{
	{chat: true, directive: true},
	{chat: true},
	{systemTail: "\n\nPrior conversation for context:\n{history(style='yaml')}"},
	{directive: true, mapped: true},
	{systemTail: "\n\nFull conversation context:\n{outer_history(style='yaml')}", directive: true},
}

// StrategyName names strategy n (1-5).
func StrategyName(n int) string {
	if n < 1 || n > len(Strategies) {
		return ""
	}
	return Strategies[n-1].Name
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
	st := Strategy{StrategyInfo: Strategies[n-1]}
	if row.chat && !(n == 1 && opts.TemplateForKeep) {
		st.Adapter = adapter.Chat{}
		return st, nil
	}
	system := "{instruction}" + row.systemTail
	mode := template.ParseFullText
	if len(predictor.Outputs) != 1 {
		mode = template.ParseJSON
		system += "\n\nRespond with a JSON object with these keys:\n{outputs()}"
	}
	msgs := []template.MessageTemplate{{Role: "system", Content: system}}
	if row.directive {
		d := template.MessageTemplate{Role: template.RoleHistory}
		if row.mapped {
			m, err := strategyMapping(opts)
			if err != nil {
				return Strategy{}, fmt.Errorf("strategy 4: %w", err)
			}
			d.User, d.Assistant = template.Str(m.User), template.Str(m.Assistant)
		}
		msgs = append(msgs, d)
	}
	msgs = append(msgs, template.MessageTemplate{Role: "user", Content: userTemplate(predictor)})
	t, err := template.New(msgs, mode)
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
