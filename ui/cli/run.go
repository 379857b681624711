package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/limits"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/demo"
	"github.com/sessionbench/sessionbench/llm"
	"github.com/sessionbench/sessionbench/llm/config"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

func init() {
	Register(Command{
		Name: "run",
		Usage: []string{
			"run --agent A [--conversation ID] [--branch B] [--model M] (--input k=v ... | --script FILE.jsonl)",
			"                             run turns headless and store them; A is a built-in agent, an agent",
			"                             file's name or a path to one; without --conversation a new one is made",
		},
		Run:     runRunCommand,
		Ordinal: 35,
	})
}

// runTurnInput is one turn to run: its inputs and where they came from.
type runTurnInput struct {
	inputs *sig.Map
	where  string // "FILE.jsonl:3" or "--input"
}

// runInputFlag collects repeated --input k=v.
type runInputFlag struct{ pairs [][2]string }

func (f *runInputFlag) String() string { return "" }

func (f *runInputFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("%q: want NAME=VALUE", s)
	}
	if err := limits.CheckUTF8([]byte(s)); err != nil {
		return fmt.Errorf("%q: %w", s, err)
	}
	f.pairs = append(f.pairs, [2]string{strings.TrimSpace(k), v})
	return nil
}

type runOptions struct {
	sf                  storeFlags
	model               llm.Flags
	agent, conv, branch string
	title, script       string
	inputs              runInputFlag
	newConvo            bool
	// noAhead turns the first call made ahead off (sessions.Service.CallAhead)
	noAhead bool
}

func runRunCommand(ctx context.Context, env Env) int {
	fs := newFlags("run")
	var o runOptions
	o.sf.register(fs)
	fs.StringVar(&o.agent, "agent", "", "built-in agent name, agent file name, or path to an agent TOML file")
	fs.StringVar(&o.conv, "conversation", "", "continue this conversation (default: start a new one)")
	fs.StringVar(&o.branch, "branch", storage.MainBranch, "branch to run on")
	fs.StringVar(&o.title, "title", "", "title of a new conversation (default: the first input)")
	fs.Var(&o.inputs, "input", "input field as NAME=VALUE (repeat for each field); one turn")
	fs.StringVar(&o.script, "script", "", "JSONL file: one object of inputs per line, one turn per line")
	fs.BoolVar(&o.noAhead, "no-call-ahead", false, "continuing a conversation, send no model request before its session is loaded and checked (see the README)")
	modelFlags(fs, &o.model)
	pos, code, done := parseFlags(env, fs, env.Args, true)
	if done {
		return code
	}
	usage := func(format string, args ...any) int {
		fmt.Fprintf(env.Stderr, "sessionbench run: "+format+" (see 'sessionbench run --help')\n", args...)
		return storeUsage
	}
	switch {
	case len(pos) > 0:
		return usage("unexpected argument %q (inputs go in --input NAME=VALUE)", pos[0])
	case len(o.inputs.pairs) > 0 && o.script != "":
		return usage("give either --input or --script, not both")
	case len(o.inputs.pairs) == 0 && o.script == "":
		return usage("nothing to run: give --input NAME=VALUE (one turn) or --script FILE.jsonl (one turn per line)")
	case o.agent == "" && o.conv == "":
		return usage("--agent is required for a new conversation (see 'sessionbench agents ls')")
	}
	if err := storage.ValidateBranchName(o.branch); err != nil {
		return usage("--branch: %v", err)
	}

	// The model (and its configuration file), the agent and every input are checked
	// before the database is opened, so a mistake leaves no database or conversation
	// behind; continuing a conversation never creates a database.
	model, note, cfg, err := runModel(ctx, o.model)
	if err != nil {
		fmt.Fprintf(env.Stderr, "sessionbench run: %v\n", err)
		return storeUsage
	}
	var ag demo.Agent
	var turns []runTurnInput
	cat := agentCatalog()
	if o.conv == "" {
		if ag, turns, err = runPrepare(cat, o, nil); err != nil {
			fmt.Fprintf(env.Stderr, "sessionbench run: %v\n", err)
			return storeUsage
		}
	}
	s, err := o.sf.open(ctx, o.conv == "")
	if err != nil {
		fmt.Fprintf(env.Stderr, "sessionbench run: %v\n", err)
		return storeError
	}
	defer s.Close()

	a := sessions.New(s, model)
	defer a.KeepFirstCalls(ctx) // for the next run on its branches, before the store closes
	var conv *storage.Conversation
	// conv is read when the warm-up runs: a conversation made below is one with no usage
	a.SetCallWarmUp(tokenizerWarmUp(ctx, s, model, func() string {
		if conv == nil {
			return ""
		}
		return conv.ID
	}, o.branch))
	a.SetCatalog(cat) // runPrepare reads the agent with it
	a.SetModelResolver(demo.NamedModels(ctx, cfg, os.Getenv))
	if o.conv != "" {
		// the branch's session is restored while the conversation, the agent and the
		// inputs are read
		restored := a.RestoreAhead(ctx, o.conv, o.branch, !o.noAhead)
		defer restored() // before the store closes
		if conv, err = s.Conversation(ctx, o.conv); err != nil {
			fmt.Fprintf(env.Stderr, "sessionbench run: %v\n", err)
			return storeError
		}
		if ag, turns, err = runPrepare(cat, o, conv); err != nil {
			fmt.Fprintf(env.Stderr, "sessionbench run: %v\n", err)
			return storeUsage
		}
		// the first turn's first model call, made while the session is restored when
		// the branch's last turn left what it sends (checked against the turn's own)
		if !o.noAhead {
			a.CallAhead(ctx, o.conv, o.branch, turns[0].inputs)
		}
	}
	fmt.Fprintln(env.Stderr, note)

	if conv == nil {
		title := o.title
		if title == "" {
			title = runTitle(turns[0].inputs)
		}
		info, err := a.NewConversation(ctx, sessions.AgentRef(ag), title)
		if err != nil {
			fmt.Fprintf(env.Stderr, "sessionbench run: %v\n", err)
			return storeError
		}
		if conv, err = s.Conversation(ctx, info.ID); err != nil {
			fmt.Fprintf(env.Stderr, "sessionbench run: %v\n", err)
			return storeError
		}
		if o.branch != storage.MainBranch {
			if _, err := s.CreateBranch(ctx, conv.ID, o.branch); err != nil {
				fmt.Fprintf(env.Stderr, "sessionbench run: %v\n", err)
				return storeError
			}
		}
		o.newConvo = true
	} else if _, err := s.Branch(ctx, conv.ID, o.branch); err != nil {
		fmt.Fprintf(env.Stderr, "sessionbench run: %v (make it with 'sessionbench session fork %s --at N --name %s')\n", err, conv.ID, o.branch)
		return storeError
	} else {
		runNoteSuperseded(ctx, env, s, conv.ID, o.branch)
	}
	return runTurns(ctx, env, s, a, conv, ag.Name, o, turns)
}

// tokenizerWarmUp is what run and retry have their Service run a moment after its first
// model call begins (sessions.Service.SetCallWarmUp): it loads the token counter's tables
// for model (llm.PreloadEncodings), which counting a call its server reported no usage
// for (llm.EstimateUsage) would wait for, unless the branch shows that its server
// reports usage: a network model, and the calls on the branch's path all counted by
// their server, none estimated. Loading them costs about 170 ms of CPU and 25 MB
// resident beside the model's answer (on one core, a `run` on a server reporting usage
// took 0.24 s with them and 0.15 s without). conv names the conversation when the
// warm-up runs.
func tokenizerWarmUp(ctx context.Context, s *storage.Store, model lm.LM, conv func() string, branch string) func() {
	return func() {
		u, err := s.BranchUsageOf(ctx, conv(), branch)
		if needsTokenizer(model.Name(), u, err) {
			llm.PreloadEncodings(model.Name())
		}
	}
}

// needsTokenizer says whether a process running model on a branch whose path has usage
// u (err: unknown) should load the token counter's tables: unless the model is a
// network one and every call on the path had its server's counts. The offline demo
// model counts every call itself.
func needsTokenizer(model string, u lm.Usage, err error) bool {
	return model == llm.DemoName || err != nil || u.TotalTokens == 0 || u.Estimated
}

// runPrepare resolves the agent (checking that it builds) and reads every turn's inputs.
func runPrepare(cat *sessions.Catalog, o runOptions, conv *storage.Conversation) (demo.Agent, []runTurnInput, error) {
	ag, err := runPickAgent(cat, o.agent, conv)
	if err != nil {
		return demo.Agent{}, nil, err
	}
	if _, _, err := ag.Build(); err != nil {
		return demo.Agent{}, nil, fmt.Errorf("agent %s: %w", ag.Name, err)
	}
	turns, err := runCollectInputs(ag, o)
	return ag, turns, err
}

// runNoteSuperseded says when the first new turn will supersede a turn an interrupted
// run or workbench left on the branch: it is kept, cancelled, and no longer offered for
// resuming. (A turn still running in a live process makes the run fail instead.)
func runNoteSuperseded(ctx context.Context, env Env, s *storage.Store, conv, branch string) {
	ps, err := s.PendingTurns(ctx)
	if err != nil {
		return // only a note; the run itself reports storage problems
	}
	for _, p := range ps {
		if p.ConvID == conv && p.Branch == branch && p.Status == trace.StatusInterrupted {
			fmt.Fprintf(env.Stderr, "note: turn %s on %s (started %s, %s recorded) was interrupted; "+
				"this run supersedes it (it stays stored, cancelled; to resume it instead, stop now and run 'sessionbench session retry %s')\n",
				p.Key, branch, when(p.Started), termtext.Count(len(p.Calls), "call"), p.Key)
		}
	}
}

// runPickAgent resolves --agent: a built-in agent, an agent file found in the agent
// directories, or a path to an agent file (agentCatalog: the workbench's lookup). With a
// conversation it must match the conversation's agent (turns of one conversation come
// from one agent), which is stored as a built-in name or an agent file's absolute path.
func runPickAgent(cat *sessions.Catalog, spec string, conv *storage.Conversation) (demo.Agent, error) {
	if conv == nil {
		return cat.Resolve(spec)
	}
	if conv.Agent == "" {
		return demo.Agent{}, fmt.Errorf("conversation %s has no agent (imported without --agent?); it cannot be continued here", conv.ID)
	}
	own, err := cat.Resolve(conv.Agent)
	if err != nil {
		return demo.Agent{}, fmt.Errorf("conversation %s: %w", conv.ID, err)
	}
	if spec == "" {
		return own, nil
	}
	ag, err := cat.Resolve(spec)
	if err != nil {
		return demo.Agent{}, err
	}
	if sessions.AgentRef(ag) != sessions.AgentRef(own) {
		return demo.Agent{}, fmt.Errorf("conversation %s belongs to agent %q, not %q (leave out --agent to continue it)", conv.ID, conv.Agent, ag.Name)
	}
	return own, nil
}

// runCollectInputs reads every turn's inputs before anything runs, so a mistake on line 9
// of a script is reported before line 1 costs a model call.
func runCollectInputs(ag demo.Agent, o runOptions) ([]runTurnInput, error) {
	fields := ag.UserInputs()
	if o.script == "" {
		m := sig.NewMap()
		for _, p := range o.inputs.pairs {
			f, err := runField(ag, fields, p[0])
			if err != nil {
				return nil, fmt.Errorf("--input %s: %w", p[0], err)
			}
			if m.Has(p[0]) {
				return nil, fmt.Errorf("--input %s given twice", p[0])
			}
			m.Set(p[0], runFlagValue(f.Type, p[1]))
		}
		if err := runRequire(ag, fields, m); err != nil {
			return nil, fmt.Errorf("--input: %w", err)
		}
		return []runTurnInput{{inputs: runOrder(fields, m), where: "--input"}}, nil
	}
	data, err := readFile(o.script, maxScript)
	if err != nil {
		return nil, fmt.Errorf("--script: %w", err)
	}
	var turns []runTurnInput
	for i, line := range strings.Split(string(data), "\n") {
		where := fmt.Sprintf("%s:%d", o.script, i+1)
		if strings.TrimSpace(line) == "" {
			continue
		}
		m, err := runScriptLine(ag, fields, line)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		turns = append(turns, runTurnInput{inputs: m, where: where})
	}
	if len(turns) == 0 {
		return nil, fmt.Errorf("--script %s has no lines to run", o.script)
	}
	return turns, nil
}

func runScriptLine(ag demo.Agent, fields []sig.Field, line string) (*sig.Map, error) {
	v, err := sig.DecodeJSON([]byte(line))
	if de := (*limits.DepthError)(nil); errors.As(err, &de) {
		return nil, fmt.Errorf("column %d: nested deeper than %d levels (the limit for any input)", de.Column, limits.Depth)
	}
	if err != nil {
		var se *json.SyntaxError
		var probe any
		if jerr := json.Unmarshal([]byte(line), &probe); errors.As(jerr, &se) {
			return nil, fmt.Errorf("column %d: not valid JSON: %v", max(se.Offset, 1), se)
		}
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	in, ok := v.(*sig.Map)
	if !ok {
		return nil, fmt.Errorf("is %s, want a JSON object of inputs", sig.KindName(v))
	}
	out := sig.NewMap()
	var ferr error
	in.Range(func(k string, v any) bool {
		f, err := runField(ag, fields, k)
		if err != nil {
			ferr = err
			return false
		}
		val, err := adapter.Validate(f.Type, v)
		if f.Type.IsStr() {
			if _, ok := v.(string); !ok {
				err = fmt.Errorf("is %s, want a string", sig.KindName(v))
			}
		}
		if err != nil {
			ferr = fmt.Errorf("input %q (%s): %v", k, f.Type.Name(), err)
			return false
		}
		out.Set(k, val)
		return true
	})
	if ferr != nil {
		return nil, ferr
	}
	if err := runRequire(ag, fields, out); err != nil {
		return nil, err
	}
	return runOrder(fields, out), nil
}

func runField(ag demo.Agent, fields []sig.Field, name string) (sig.Field, error) {
	for _, f := range fields {
		if f.Name == name {
			if f.Type == nil {
				f.Type = sig.TStr
			}
			return f, nil
		}
	}
	return sig.Field{}, fmt.Errorf("unknown input field %q (%s takes: %s)", name, ag.Name, runFieldList(fields))
}

func runRequire(ag demo.Agent, fields []sig.Field, m *sig.Map) error {
	for _, f := range fields {
		if !m.Has(f.Name) {
			return fmt.Errorf("missing input field %q (%s takes: %s)", f.Name, ag.Name, runFieldList(fields))
		}
	}
	return nil
}

func runFieldList(fields []sig.Field) string {
	names := make([]string, len(fields))
	for i, f := range fields {
		t := sig.TStr
		if f.Type != nil {
			t = f.Type
		}
		names[i] = f.Name + " (" + t.Name() + ")"
	}
	return strings.Join(names, ", ")
}

// runOrder puts inputs in the signature's field order.
func runOrder(fields []sig.Field, m *sig.Map) *sig.Map {
	out := sig.NewMap()
	for _, f := range fields {
		if v, ok := m.Get(f.Name); ok {
			out.Set(f.Name, v)
		}
	}
	return out
}

// runFlagValue reads NAME=VALUE: a str field takes the text as is; another type takes the
// text as JSON when it is valid JSON of that type, else the text.
func runFlagValue(t *sig.Type, text string) any {
	if t.IsStr() {
		return text
	}
	if v, err := sig.DecodeJSON([]byte(text)); err == nil {
		if out, err := adapter.Validate(t, v); err == nil {
			return out
		}
	}
	return text
}

func runTitle(in *sig.Map) string {
	keys := in.Keys()
	if len(keys) == 0 {
		return ""
	}
	return clip(in.String(keys[0]), 60)
}

// runModel resolves the model as the workbench does; the offline demo model gets the demo
// agents' scripts and, unless the configuration sets a rate, answers at once (nobody
// watches a headless stream).
func runModel(ctx context.Context, f llm.Flags) (lm.LM, string, *config.File, error) {
	sel, err := llm.Resolve(ctx, f, os.Getenv)
	if err != nil {
		return nil, "", nil, err
	}
	if sel.Demo {
		opts := llm.DemoOptions{Scripts: demo.Scripts()}
		if sel.Config != nil && sel.Config.Demo.TokenRate != nil {
			opts.TokenRate = *sel.Config.Demo.TokenRate
		}
		why := ""
		if sel.Note != "" {
			why = ": " + sel.Note
		}
		return llm.NewDemo(opts), "using the offline demo model" + why + "; its answers are canned, not real", sel.Config, nil
	}
	if sel.Note != "" {
		return sel.LM, "using " + sel.Description + "\n(" + sel.Note + ")", sel.Config, nil
	}
	return sel.LM, "using " + sel.Description, sel.Config, nil
}

func runTurns(ctx context.Context, env Env, s *storage.Store, a *sessions.Service, conv *storage.Conversation, agent string, o runOptions, turns []runTurnInput) int {
	state := "continuing"
	if o.newConvo {
		state = "new"
	}
	header := fmt.Sprintf("conversation %s (%s) · agent %s · branch %s", conv.ID, state, agent, o.branch)
	if o.sf.json {
		fmt.Fprintln(env.Stderr, header)
	} else {
		fmt.Fprintln(env.Stdout, header)
	}
	out := turnPrinter{env: env, json: o.sf.json, conv: conv.ID, branch: o.branch}
	done := 0
	for _, in := range turns {
		start := time.Now()
		t, err := a.Send(ctx, sessions.SendRequest{Conv: conv.ID, Branch: o.branch, Inputs: in.inputs}, nil)
		if err != nil {
			if done == 0 && o.newConvo {
				runDropEmpty(ctx, s, conv.ID)
			}
			return out.failed(ctx, in.where, done, err, o.sf.db)
		}
		done++
		if code := out.completed(ctx, s, in.where, t, start); code != storeOK {
			return code
		}
	}
	fmt.Fprintf(env.Stderr, "%s stored in conversation %s, branch %s; continue with: sessionbench run --conversation %s", termtext.Count(done, "turn"), conv.ID, o.branch, conv.ID)
	if o.branch != storage.MainBranch {
		fmt.Fprintf(env.Stderr, " --branch %s", o.branch)
	}
	fmt.Fprint(env.Stderr, dbFlag(o.sf.db))
	hint := "NAME"
	if keys := turns[0].inputs.Keys(); len(keys) > 0 {
		hint = keys[0]
	}
	fmt.Fprintf(env.Stderr, " --input %s=...\n", hint)
	return storeOK
}

// runDropEmpty deletes a conversation this run created when its first turn failed before
// anything was stored (the agent could not even start): no conversation claims to be
// something it is not. A first turn that began is kept (failed), and so is the
// conversation.
func runDropEmpty(ctx context.Context, s *storage.Store, conv string) {
	tree, err := s.TurnOutline(context.WithoutCancel(ctx), conv)
	if err == nil && len(tree) == 0 {
		_ = s.DeleteConversation(context.WithoutCancel(ctx), conv)
	}
}
