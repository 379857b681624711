package sessions

import (
	"fmt"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/sig"
)

// applyStrategy makes an agent run under strategy n (a replay with another strategy):
// every nested session takes the strategy's policy, every predictor its adapter (the
// ChatAdapter for 1 and 2, the strategy's template for 3 to 5), as previews render it.
func applyStrategy(mod core.Module, opts *core.Options, n int, outer *sig.Signature) error {
	if n < 1 || n > len(core.Strategies) {
		return fmt.Errorf("want a strategy 1 to %d", len(core.Strategies))
	}
	nested := core.Strategies[n-1].Nested
	opts.NestedSessions = nested
	for k, cc := range opts.ChildConfigs {
		if cc.Nested != "" {
			cc.Nested = nested
			opts.ChildConfigs[k] = cc
		}
	}
	return eachPredictor(mod, func(p *core.Predict) error {
		st, err := core.Preset(n, core.WithHistoryField(p.Signature, "history"), core.PresetOptions{Outer: outer})
		if err != nil {
			return err
		}
		p.Adapter = st.Adapter
		return nil
	})
}

// eachPredictor calls f for every predictor of the module tree.
func eachPredictor(m core.Module, f func(*core.Predict) error) error {
	switch x := m.(type) {
	case *core.Predict:
		return f(x)
	case *core.Session:
		return eachPredictor(x.Module(), f)
	case core.Composite:
		for _, s := range x.Submodules() {
			if err := eachPredictor(s.Module, f); err != nil {
				return err
			}
		}
	}
	return nil
}
