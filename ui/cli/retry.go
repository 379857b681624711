package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/demo"
	"github.com/sessionbench/sessionbench/llm"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/ui/sessions"
)

// modelFlags are the model flags of the commands that run turns (run, session retry).
func modelFlags(fs *flag.FlagSet, f *llm.Flags) {
	fs.StringVar(&f.Model, "model", "", `model name, "<provider>/<model>" or "demo"`)
	fs.StringVar(&f.Provider, "provider", "", "configured provider to use")
	fs.StringVar(&f.BaseURL, "base-url", "", "ad-hoc OpenAI-compatible endpoint")
	fs.StringVar(&f.APIKeyEnv, "api-key-env", "", "variable holding the key for --base-url (default OPENAI_API_KEY)")
	fs.StringVar(&f.ConfigPath, "config", "", "configuration file (default $XDG_CONFIG_HOME/sessionbench/config.toml)")
}

// runRetry is 'session retry TURN': it runs a failed, cancelled or interrupted turn again
// from where it stopped. Calls the turn already got answers for are served from storage;
// the failed call and those after it go to the model. --input changes inputs (edit and
// retry: answered calls whose request does not depend on the change are still reused);
// --branch retries on a new branch forked at the turn's parent.
func runRetry(ctx context.Context, env Env) int {
	fs := newFlags("session retry")
	var sf storeFlags
	sf.register(fs)
	var mf llm.Flags
	modelFlags(fs, &mf)
	var edits runInputFlag
	var branch string
	fs.Var(&edits, "input", "change an input field as NAME=VALUE (repeat for each field)")
	fs.StringVar(&branch, "branch", "", "retry on this new branch, forked at the turn's parent")
	pos, code, done := parseFlags(env, fs, env.Args[1:], true)
	if done {
		return code
	}
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(env.Stderr, "sessionbench session retry: "+format+"\n", args...)
		return code
	}
	if len(pos) != 1 {
		return fail(storeUsage, "want one argument (TURN), got %d %s(see 'sessionbench session retry --help')", len(pos), quoteArgs(pos))
	}
	if branch != "" {
		if err := storage.ValidateBranchName(branch); err != nil {
			return fail(storeUsage, "--branch: %v", err)
		}
	}
	model, note, cfg, err := runModel(ctx, mf)
	if err != nil {
		return fail(storeUsage, "%v", err)
	}
	s, err := sf.open(ctx, false)
	if err != nil {
		return fail(storeError, "%v", err)
	}
	defer s.Close()
	key := pos[0]
	n, err := s.TurnInfo(ctx, key)
	if err != nil {
		return fail(storeError, "%v", err)
	}
	if !n.Status.Retryable() {
		why := "it completed; only failed, cancelled and interrupted turns are retried"
		if n.Status == trace.StatusRunning {
			why = fmt.Sprintf("it is running in %s", n.Owner)
		}
		return fail(storeError, "turn %s: %s", key, why)
	}
	conv, err := s.Conversation(ctx, n.Conv)
	if err != nil {
		return fail(storeError, "%v", err)
	}
	cat := agentCatalog()
	ag, err := runPickAgent(cat, "", conv)
	if err != nil {
		return fail(storeUsage, "%v", err)
	}
	var inputs *sig.Map
	if len(edits.pairs) > 0 {
		t, err := s.LoadTurn(ctx, key)
		if err != nil {
			return fail(storeError, "%v", err)
		}
		if inputs, err = retryInputs(ag, t.Inputs, edits); err != nil {
			return fail(storeUsage, "%v", err)
		}
	}
	fmt.Fprintln(env.Stderr, note)
	on := n.Branch
	if branch != "" {
		on = branch
	}
	fmt.Fprintf(env.Stderr, "retrying %s turn %s (index %d) of conversation %s on branch %s\n", n.Status, key, n.Index, n.Conv, dash(on))

	a := sessions.New(s, model)
	defer a.KeepFirstCalls(ctx) // for the next run on its branches, before the store closes
	a.SetCallWarmUp(tokenizerWarmUp(ctx, s, model, func() string { return n.Conv }, on))
	a.SetCatalog(cat) // runPickAgent read the agent with it
	a.SetModelResolver(demo.NamedModels(ctx, cfg, os.Getenv))
	start := time.Now()
	_, t, err := a.Retry(ctx, sessions.RetryRequest{Key: key, Inputs: inputs, Branch: branch}, nil)
	out := turnPrinter{env: env, json: sf.json, conv: n.Conv, branch: on}
	if err != nil && branch == "" && errors.Is(err, storage.ErrConflict) && !errors.Is(err, storage.ErrBusy) {
		// The branch went on past the turn (it was retried, or others were sent).
		return fail(storeError, "%v\nto retry it on a new branch: sessionbench session retry %s --branch NAME%s", err, key, dbFlag(sf.db))
	}
	if err != nil {
		return out.failed(ctx, "turn "+key, 0, err, sf.db)
	}
	if code := out.completed(ctx, s, "turn "+key, t, start); code != storeOK {
		return code
	}
	fmt.Fprintf(env.Stderr, "turn %s retried: it is now on branch %s; the %s turn stays beside it\n", key, on, n.Status)
	return storeOK
}

// retryInputs applies --input edits to a turn's inputs, checked against the agent's
// input fields like run's.
func retryInputs(ag demo.Agent, old *sig.Map, edits runInputFlag) (*sig.Map, error) {
	fields := ag.UserInputs()
	m := old.Clone()
	if m == nil {
		m = sig.NewMap()
	}
	seen := map[string]bool{}
	for _, p := range edits.pairs {
		f, err := runField(ag, fields, p[0])
		if err != nil {
			return nil, fmt.Errorf("--input %s: %w", p[0], err)
		}
		if seen[p[0]] {
			return nil, fmt.Errorf("--input %s given twice", p[0])
		}
		seen[p[0]] = true
		m.Set(p[0], runFlagValue(f.Type, p[1]))
	}
	return runOrder(fields, m), nil
}
