// Command sessionbench is a terminal workbench for multi-step LLM programs. With no
// command it opens the workbench; `sessionbench help` lists the headless commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/demo"
	"github.com/sessionbench/sessionbench/llm"
	"github.com/sessionbench/sessionbench/llm/config"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/storage/capture"
	"github.com/sessionbench/sessionbench/storage/otlp"
	"github.com/sessionbench/sessionbench/ui"
	"github.com/sessionbench/sessionbench/ui/cli"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		// The first signal cancels with a cause that leaves the running turn interrupted
		// (resumable) rather than cancelled; the command records it, says so and exits
		// with 128 + the signal's number. A second signal does not wait for that.
		first := cli.Interrupt{Signal: <-sigs}
		cancel(first)
		second := cli.Interrupt{Signal: <-sigs}
		fmt.Fprintf(os.Stderr, "sessionbench: %v again: exiting now (a running turn is left interrupted)\n", second.Signal)
		os.Exit(second.Code())
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	signal.Stop(sigs)
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return cli.Main(ctx, cli.Env{Args: args, Stdin: os.Stdin, Stdout: stdout, Stderr: stderr,
			Workbench: func(ctx context.Context, db, config string) error { return workbench(ctx, db, "", "", config, "") }})
	}
	// Errors quote files, servers and models: they reach the terminal sanitised.
	safeErr := termtext.NewWriter(stderr)
	defer safeErr.Flush()
	stderr = safeErr
	config.OnWarning = func(msg string) { fmt.Fprintf(stderr, "sessionbench: warning: %s\n", msg) }
	fs := flag.NewFlagSet("sessionbench", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors and help are reported below, once, in our words
	fs.Usage = func() {}
	db := fs.String("db", "", "database file (default $XDG_DATA_HOME/sessionbench/sessionbench.db)")
	model := fs.String("model", "", `model: "demo", a model name, or "<provider>/<model>"`)
	theme := fs.String("theme", "", "theme: dark, light, high-contrast or a user theme name")
	config := fs.String("config", "", "configuration file (default $XDG_CONFIG_HOME/sessionbench/config.toml)")
	version := fs.Bool("version", false, "print the module version and VCS revision, then exit")
	otlpEndpoint := fs.String("otlp-endpoint", "", "also send every turn recorded here as an OpenTelemetry trace to this OTLP/HTTP collector")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, cli.Usage())
			fmt.Fprintln(stdout, "\nworkbench flags (sessionbench [flags]):")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintf(stderr, "sessionbench: %v (see 'sessionbench --help')\n", err)
		return 2
	}
	if *version {
		fmt.Fprint(stdout, cli.Version())
		return 0
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sessionbench: unexpected argument %q (commands come first, see 'sessionbench help')\n", fs.Arg(0))
		return 2
	}
	err := workbench(ctx, *db, *model, *theme, *config, *otlpEndpoint)
	var bad badFlagError
	var sig cli.Interrupt
	switch {
	case errors.Is(err, ui.ErrTurnInterrupted) && errors.As(context.Cause(ctx), &sig):
		fmt.Fprintf(stderr, "sessionbench: %v: %v\n", sig, err)
		return sig.Code()
	case err == nil && errors.As(context.Cause(ctx), &sig):
		fmt.Fprintf(stderr, "sessionbench: %v\n", sig)
		return sig.Code()
	case errors.As(err, &bad):
		fmt.Fprintf(stderr, "sessionbench: %v\n", err)
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "sessionbench: %v\n", err)
		return 1
	}
	return 0
}

// badFlagError is a wrong --theme, --model or --config: refused (exit 2) before the
// database is opened or the terminal taken over.
type badFlagError struct{ err error }

func (e badFlagError) Error() string { return e.err.Error() }
func (e badFlagError) Unwrap() error { return e.err }

// workbench wires storage, the model and the demo agents into the TUI; with an OTLP
// endpoint every turn it records is also sent there.
func workbench(ctx context.Context, dbPath, model, theme, configPath, otlpEndpoint string) (err error) {
	if dbPath == "" {
		p, err := config.DatabaseFile(os.Getenv)
		if err != nil {
			return badFlagError{err}
		}
		dbPath = p
	}
	// The configuration file is read once, for every part; it, the theme, the key
	// bindings and the model are all checked before anything is created or the terminal
	// is taken over.
	flags := llm.Flags{Model: model, ConfigPath: configPath}
	cfg, err := llm.LoadConfig(flags, os.Getenv)
	if err != nil {
		return badFlagError{err}
	}
	uiOpts := ui.Options{Theme: theme, Config: cfg}
	if _, _, err := ui.Setup(uiOpts); err != nil {
		return badFlagError{err}
	}
	sel, err := llm.ResolveWith(ctx, flags, os.Getenv, cfg)
	if err != nil {
		return badFlagError{err}
	}
	var exp *otlp.Exporter
	if otlpEndpoint != "" {
		if exp, err = otlp.New(ctx, otlp.Options{Endpoint: otlpEndpoint}); err != nil {
			return badFlagError{fmt.Errorf("--otlp-endpoint: %w", err)}
		}
		defer exp.Shutdown(context.WithoutCancel(ctx))
	}
	if err := os.MkdirAll(filepath.Dir(dbPath), 0o700); err != nil {
		return fmt.Errorf("database folder: %w", err)
	}
	// A database that cannot be written (a read-only mount, folder or file) opens
	// read-only, and the workbench says so.
	store, err := storage.OpenRead(ctx, dbPath)
	if err != nil {
		return err
	}
	defer func() {
		// a turn's transaction that failed after the workbench had shown it is said
		// here when it was the last thing the workbench did (storage/commitlater.go)
		err = errors.Join(err, store.Close())
	}()
	uiOpts.ReadOnly = store.ReadOnlyReason()
	if d, ok := sel.LM.(*llm.Demo); ok {
		// The offline demo model follows the demo agents' scripts (its configured rate kept).
		d.Scripts = append(d.Scripts, demo.Scripts()...)
	}
	// Turns a killed recording proxy left open are committed, so their calls show.
	if _, err := capture.Recover(ctx, store, nil); err != nil && !store.ReadOnly() {
		return err
	}
	// The first turn's statements are prepared while the user reads and types (Close
	// stops this; a failure only leaves that turn to prepare them itself).
	go store.Warm(ctx)
	llm.PreloadEncodings(sel.LM.Name())
	var backendModel lm.LM = sel.LM
	if len(sel.Choices) > 1 {
		// No model named and the server offers several: the workbench opens on its
		// model picker, and the one picked takes over from the one Resolve took.
		sw := llm.NewSwitch(sel.LM)
		backendModel = sw
		uiOpts.Models = &ui.ModelChoice{Models: sel.Choices, Current: sel.Model, Server: sel.BaseURL, Choose: func(name string) error {
			next, err := sel.Choose(name)
			if err != nil {
				return err
			}
			llm.PreloadEncodings(name)
			sw.Set(next.LM)
			return nil
		}}
	}
	a := sessions.New(store, backendModel)
	defer a.KeepFirstCalls(ctx) // for the next run on its branches, before the store closes
	a.SetModelResolver(demo.NamedModels(ctx, cfg, os.Getenv))
	if exp == nil {
		return ui.Run(ctx, a, uiOpts)
	}
	b := &exportingBackend{Service: a, store: store, exp: exp}
	err = ui.Run(ctx, b, uiOpts)
	if n, last := b.wait(); n > 0 {
		err = errors.Join(err, fmt.Errorf("%d turn(s) could not be sent to %s; the last error: %w", n, otlpEndpoint, last))
	}
	return err
}

// exportingBackend is the workbench's backend sending every turn it records (sent,
// edited, replayed, resumed) to an OTLP collector, in the background; failures are
// reported when the workbench closes (the terminal is the workbench's until then).
type exportingBackend struct {
	*sessions.Service
	store  *storage.Store
	exp    *otlp.Exporter
	wg     sync.WaitGroup
	mu     sync.Mutex
	failed int
	last   error
}

// export sends the turns of branch from index from on (-1: only the tip).
func (b *exportingBackend) export(ctx context.Context, conv, branch string, from int) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		ctx := context.WithoutCancel(ctx)
		var turns []otlp.Turn
		br, err := b.store.Branch(ctx, conv, branch)
		switch {
		case err != nil:
		case from < 0 && br.Tip != "":
			var t otlp.Turn
			if t, err = otlp.Stored(ctx, b.store, conv, branch, br.Tip); err == nil {
				turns = []otlp.Turn{t}
			}
		case from >= 0:
			if turns, err = otlp.Branch(ctx, b.store, conv, branch); err == nil {
				turns = turns[min(from, len(turns)):]
			}
		}
		if err == nil {
			err = b.exp.Export(ctx, turns...)
		}
		if err != nil {
			b.mu.Lock()
			b.failed, b.last = b.failed+1, err
			b.mu.Unlock()
		}
	}()
}

func (b *exportingBackend) wait() (int, error) {
	b.wg.Wait()
	return b.failed, b.last
}

func (b *exportingBackend) Send(ctx context.Context, req sessions.SendRequest, events chan<- sessions.Event) (*trace.Turn, error) {
	t, err := b.Service.Send(ctx, req, events)
	if err == nil && t != nil {
		b.export(ctx, req.Conv, req.Branch, -1)
	}
	return t, err
}

func (b *exportingBackend) EditAndResubmit(ctx context.Context, req sessions.EditRequest, events chan<- sessions.Event) (string, *trace.Turn, error) {
	name, t, err := b.Service.EditAndResubmit(ctx, req, events)
	if err == nil && t != nil {
		b.export(ctx, req.Conv, name, -1)
	}
	return name, t, err
}

func (b *exportingBackend) Replay(ctx context.Context, req sessions.ReplayRequest, events chan<- sessions.Event) (string, error) {
	name, err := b.Service.Replay(ctx, req, events)
	if err == nil {
		from := 0
		if br, berr := b.store.Branch(ctx, req.Conv, name); berr == nil && br.ForkIndex != nil {
			from = *br.ForkIndex + 1
		}
		b.export(ctx, req.Conv, name, from)
	}
	return name, err
}

func (b *exportingBackend) Retry(ctx context.Context, req sessions.RetryRequest, events chan<- sessions.Event) (string, *trace.Turn, error) {
	n, nerr := b.store.TurnInfo(ctx, req.Key)
	branch, t, err := b.Service.Retry(ctx, req, events)
	if err == nil && t != nil && nerr == nil {
		b.export(ctx, n.Conv, branch, -1)
	}
	return branch, t, err
}

func (b *exportingBackend) Resume(ctx context.Context, key string, events chan<- sessions.Event) (*trace.Turn, error) {
	p, perr := b.store.PendingTurn(ctx, key)
	t, err := b.Service.Resume(ctx, key, events)
	if err == nil && t != nil && perr == nil {
		b.export(ctx, p.ConvID, p.Branch, -1)
	}
	return t, err
}
