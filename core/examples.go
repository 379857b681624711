package core

import (
	"fmt"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// Example is DSPy's Example: field values plus which of them are inputs.
type Example struct {
	Fields    *sig.Map
	InputKeys []string
}

// Inputs returns the input part of the example.
func (e Example) Inputs() *sig.Map {
	keys := map[string]bool{}
	for _, k := range e.InputKeys {
		keys[k] = true
	}
	return e.Fields.Filter(func(k string) bool { return keys[k] })
}

// Labels returns the non-input part of the example.
func (e Example) Labels() *sig.Map {
	keys := map[string]bool{}
	for _, k := range e.InputKeys {
		keys[k] = true
	}
	return e.Fields.Filter(func(k string) bool { return !keys[k] })
}

// Metric scores a prediction against an example (DSPy's metric(example, pred, trace)).
// It may return an error; see Options.OnMetricError.
type Metric func(example Example, pred *Prediction) (float64, error)

// Score scores every stored turn with metric and stores the scores. A failing metric gives
// 0 (on_metric_error="zero") or stops with the error ("raise"). gold, when non-nil, is
// used as the example for every turn instead of the turn itself.
func (s *Session) Score(metric Metric, gold *Example) ([]float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	nodes := s.visible()
	scores := make([]float64, len(nodes))
	for i, nd := range nodes {
		t := nd.turn
		ex := Example{}
		if gold != nil {
			ex = *gold
		} else {
			ex = TurnExample(t, s.opts.HistoryField, true)
		}
		v, err := safeMetric(metric, ex, &Prediction{Fields: t.Outputs.Clone()})
		if err != nil {
			if s.opts.OnMetricError == "raise" {
				return nil, fmt.Errorf("session %s: metric on turn %d: %w", s.name, t.Index, err)
			}
			v = 0
		}
		scores[i] = v
		// Nodes are shared with forks, so scores live in this session's overlay.
		if s.scores == nil {
			s.scores = map[*trace.Turn]float64{}
		}
		s.scores[t] = v
	}
	return scores, nil
}

func safeMetric(m Metric, ex Example, p *Prediction) (v float64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("metric panicked: %v", r)
		}
	}()
	return m(ex, p)
}

// TurnExample builds dspy-session's Example(**inputs, history=snapshot, **outputs)
// .with_inputs(inputs keys, history) for a turn (without the history when withHistory is
// false).
func TurnExample(t *trace.Turn, historyField string, withHistory bool) Example {
	f := t.Inputs.Clone()
	keys := t.Inputs.Keys()
	if withHistory {
		f.Set(historyField, t.History.Clone())
		keys = append(keys, historyField)
	}
	t.Outputs.Range(func(k string, v any) bool {
		f.Set(k, sig.Clone(v))
		return true
	})
	return Example{Fields: f, InputKeys: keys}
}

// ExampleOptions filter to_examples.
type ExampleOptions struct {
	Metric           Metric   // when set, every turn is (re)scored first
	MinScore         *float64 // drop turns scoring below (unscored turns too)
	ExcludeHistory   bool     // include_history=False
	StrictTrajectory bool     // stop at the first turn that fails a filter
	AllowEmpty       bool     // require_outputs=False
}

// ToExamples linearises the turns into independent examples (dspy-session's to_examples).
func (s *Session) ToExamples(o ExampleOptions) ([]Example, error) {
	if o.Metric != nil {
		if _, err := s.Score(o.Metric, nil); err != nil {
			return nil, err
		}
	}
	var out []Example
	for _, t := range s.Turns() {
		ok := true
		if t.Outputs.Len() == 0 && !o.AllowEmpty {
			ok = false
		}
		if o.MinScore != nil && (t.Score == nil || *t.Score < *o.MinScore) {
			ok = false
		}
		if !ok {
			if o.StrictTrajectory {
				break
			}
			continue
		}
		out = append(out, TurnExample(t, s.opts.HistoryField, !o.ExcludeHistory))
	}
	return out, nil
}

// MergeExamples concatenates the examples of several sessions.
func MergeExamples(o ExampleOptions, sessions ...*Session) ([]Example, error) {
	var out []Example
	for _, s := range sessions {
		ex, err := s.ToExamples(o)
		if err != nil {
			return nil, err
		}
		out = append(out, ex...)
	}
	return out, nil
}

// CallExamples is to_examples(level="call"): one example per recorded inner call (nested
// calls included), each with the history that call saw. Failed calls are skipped.
func (s *Session) CallExamples() []Example {
	var out []Example
	for _, t := range s.Turns() {
		trace.WalkCalls(t.Calls, func(c *trace.Call, _ int) {
			if c.Error == "" && c.Outputs != nil && len(c.Children) == 0 {
				out = append(out, CallExample(c, s.opts.HistoryField))
			}
		})
	}
	return out
}

// CallExamplesByPath is to_examples(level="call", by="path").
func (s *Session) CallExamplesByPath() map[string][]Example {
	out := map[string][]Example{}
	for _, t := range s.Turns() {
		trace.WalkCalls(t.Calls, func(c *trace.Call, _ int) {
			if c.Error == "" && c.Outputs != nil && len(c.Children) == 0 {
				out[c.Path] = append(out[c.Path], CallExample(c, s.opts.HistoryField))
			}
		})
	}
	return out
}

// CallExample is a call as an example: its inputs, the history it saw, its outputs.
func CallExample(c *trace.Call, historyField string) Example {
	f := c.Inputs.Clone()
	keys := c.Inputs.Keys()
	f.Set(historyField, c.History.Clone())
	keys = append(keys, historyField)
	c.Outputs.Range(func(k string, v any) bool {
		f.Set(k, sig.Clone(v))
		return true
	})
	return Example{Fields: f, InputKeys: keys}
}
