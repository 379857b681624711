package demo

import (
	"context"
	"fmt"
	"sync"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/workflow"
	"github.com/sessionbench/sessionbench/llm"
	"github.com/sessionbench/sessionbench/llm/config"
)

// NamedModels is the ModelResolver an application gives agent files whose predictors
// name their own model (model = "gpt-4o" in a [[predictors]] table): each name is
// resolved once, as `--model NAME` would be with the same configuration (the file the
// program already read), and the offline demo model gets the demo agents' scripts as
// the workbench's own does.
func NamedModels(ctx context.Context, cfg *config.File, getenv config.Env) workflow.ModelResolver {
	var mu sync.Mutex
	cache := map[string]lm.LM{}
	return func(name string) (lm.LM, error) {
		mu.Lock()
		defer mu.Unlock()
		if m, ok := cache[name]; ok {
			return m, nil
		}
		sel, err := llm.ResolveWith(ctx, llm.Flags{Model: name}, getenv, cfg)
		if err != nil {
			return nil, fmt.Errorf("model %q named by the agent: %w", name, err)
		}
		if d, ok := sel.LM.(*llm.Demo); ok {
			d.Scripts = append(d.Scripts, Scripts()...)
		}
		cache[name] = sel.LM
		return sel.LM, nil
	}
}
