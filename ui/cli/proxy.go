package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/sessionbench/sessionbench/llm"
	"github.com/sessionbench/sessionbench/llm/config"
	"github.com/sessionbench/sessionbench/llm/proxy"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/storage/capture"
	"github.com/sessionbench/sessionbench/storage/otlp"
)

func init() {
	Register(Command{
		Name: "proxy",
		Usage: []string{
			"proxy [--port N] [--open] [--provider P | --base-url URL] [--otlp-endpoint URL]",
			"                             an OpenAI-compatible endpoint on 127.0.0.1 that forwards each request to",
			"                             the configured provider and records every call (point your program's",
			"                             base URL at it; --open also opens the workbench)",
		},
		Run:     runProxy,
		Ordinal: 37,
	})
}

// DefaultProxyPort is where `sessionbench proxy` listens unless told otherwise.
const DefaultProxyPort = 8321

// placeholderModel lets the provider resolution pick a provider without a model: the
// proxy forwards whatever model each request names.
const placeholderModel = "(each request's model)"

type proxyOptions struct {
	db, host, logFile, title string
	keyMode, otlpEndpoint    string
	port                     int
	idle                     time.Duration
	open                     bool
	model                    llm.Flags
}

func runProxy(ctx context.Context, env Env) int {
	fs := newFlags("proxy")
	var o proxyOptions
	fs.StringVar(&o.db, "db", "", "database file (default $XDG_DATA_HOME/sessionbench/sessionbench.db)")
	fs.IntVar(&o.port, "port", DefaultProxyPort, "port to listen on (0: any free port)")
	fs.StringVar(&o.host, "host", "127.0.0.1", "address to listen on; anything but loopback lets other machines use your key")
	fs.BoolVar(&o.open, "open", false, "open the workbench in this terminal while the proxy runs")
	fs.StringVar(&o.logFile, "log", "", "append the one-line-per-call log to FILE (default: standard error; none with --open)")
	fs.DurationVar(&o.idle, "idle-gap", capture.DefaultIdleGap, "a call this long after the previous one ended starts a new turn")
	fs.StringVar(&o.title, "title", "", `title of this run's conversation (default "proxy <time>")`)
	fs.StringVar(&o.keyMode, "key", "caller", `"caller": pass the program's own key on (the configured key when it sends none); "config": always the configured key`)
	fs.StringVar(&o.otlpEndpoint, "otlp-endpoint", "", "also send every turn as an OpenTelemetry trace to this OTLP/HTTP collector (e.g. http://localhost:4318)")
	fs.StringVar(&o.model.Provider, "provider", "", "configured provider to forward to")
	fs.StringVar(&o.model.BaseURL, "base-url", "", "ad-hoc OpenAI-compatible endpoint to forward to")
	fs.StringVar(&o.model.APIKeyEnv, "api-key-env", "", "variable holding the key for --base-url (default OPENAI_API_KEY)")
	fs.StringVar(&o.model.Model, "model", "", `pick the provider that serves this model (requests keep their own model); "demo": the offline demo model`)
	fs.StringVar(&o.model.ConfigPath, "config", "", "configuration file (default $XDG_CONFIG_HOME/sessionbench/config.toml)")
	pos, code, done := parseFlags(env, fs, env.Args, true)
	if done {
		return code
	}
	usage := func(format string, args ...any) int {
		fmt.Fprintf(env.Stderr, "sessionbench proxy: "+format+" (see 'sessionbench proxy --help')\n", args...)
		return storeUsage
	}
	switch {
	case len(pos) > 0:
		return usage("unexpected argument %q", pos[0])
	case o.port < 0 || o.port > 65535:
		return usage("--port %d: want 0 to 65535", o.port)
	case o.idle <= 0:
		return usage("--idle-gap %s: want a positive duration such as 3s", o.idle)
	case o.keyMode != "caller" && o.keyMode != "config":
		return usage(`--key %q: want "caller" or "config"`, o.keyMode)
	case o.open && env.Workbench == nil:
		return usage("--open: this build has no workbench")
	}
	// main cancels ctx on SIGINT, SIGTERM and SIGHUP: the proxy then stops taking
	// requests, lets those in flight finish, ends its open turns and exits 0.
	if err := serveProxy(ctx, env, o); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			return usage("%v", ue.error)
		}
		fmt.Fprintf(env.Stderr, "sessionbench proxy: %v\n", err)
		return storeError
	}
	return storeOK
}

// usageError is a mistake in the flags or the configuration (exit 2).
type usageError struct{ error }

// proxyUpstream resolves where requests go, with the same provider configuration as
// every other command. With nothing configured (or --model demo) it is the offline
// demo model, served on a loopback port of its own; stop stops that server.
func proxyUpstream(ctx context.Context, f llm.Flags) (up proxy.Upstream, desc string, stop func(), err error) {
	if f.Model == "" && (f.Provider != "" || f.BaseURL != "" || os.Getenv("OPENAI_BASE_URL") != "") {
		f.Model = placeholderModel
	}
	sel, err := llm.Resolve(ctx, f, os.Getenv)
	if err != nil {
		return up, "", nil, usageError{err}
	}
	stop = func() {}
	if sel.Demo {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return up, "", nil, fmt.Errorf("starting the demo model's server: %w", err)
		}
		srv := &http.Server{Handler: proxy.ModelServer(sel.LM), ReadHeaderTimeout: time.Minute}
		go srv.Serve(ln)
		why := ""
		if sel.Note != "" {
			why = ": " + sel.Note
		}
		return proxy.Upstream{BaseURL: "http://" + ln.Addr().String()}, "the offline demo model" + why + " (canned answers, not a real model)",
			func() { srv.Close() }, nil
	}
	m, ok := sel.LM.(*llm.OpenAI)
	if !ok {
		return up, "", nil, fmt.Errorf("the selected model %s is not an OpenAI-compatible provider", sel.LM.Name())
	}
	opts := m.Options()
	if opts.Azure {
		return up, "", nil, usageError{fmt.Errorf("provider %q is Azure OpenAI, whose deployment URLs the proxy does not forward to yet; use an OpenAI-compatible provider", opts.Provider)}
	}
	to := llm.DefaultTimeouts()
	if opts.Timeouts != nil {
		to = *opts.Timeouts
	}
	up = proxy.Upstream{BaseURL: opts.BaseURL, APIKey: opts.APIKey, Headers: opts.Headers, Connect: to.Connect,
		FirstByte: to.FirstToken, Stall: to.Stall, Total: to.Total}
	key := "no configured key"
	switch {
	case opts.APIKey != "" && opts.APIKeyEnv != "":
		key = "key from $" + opts.APIKeyEnv
	case opts.APIKey != "":
		key = "key from key_command"
	}
	return up, fmt.Sprintf("%s (provider %s, %s)", opts.BaseURL, opts.Provider, key), stop, nil
}

func serveProxy(ctx context.Context, env Env, o proxyOptions) error {
	up, desc, stopUp, err := proxyUpstream(ctx, o.model)
	if err != nil {
		return err
	}
	defer stopUp()
	if o.keyMode == "config" {
		if up.APIKey == "" {
			return usageError{errors.New(`--key config: the provider has no configured key (set its api_key_env or key_command)`)}
		}
		up.ForceKey = true
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(o.host, strconv.Itoa(o.port)))
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("port %d on %s is taken (another proxy?); pass --port N, or --port 0 for any free port", o.port, o.host)
		}
		return fmt.Errorf("listen on %s:%d: %w", o.host, o.port, err)
	}
	defer ln.Close()
	if u, err := url.Parse(up.BaseURL); err == nil && sameEndpoint(u.Host, ln.Addr().String()) {
		return usageError{fmt.Errorf("the upstream %s is this proxy itself (is OPENAI_BASE_URL set to the proxy's URL in this shell?); pass --provider or --base-url", up.BaseURL)}
	}

	dbPath := o.db
	if dbPath == "" {
		if dbPath, err = config.DatabaseFile(os.Getenv); err != nil {
			return err
		}
	}
	store, err := storage.Open(ctx, dbPath)
	if err != nil {
		return err
	}
	defer store.Close()

	var logw io.Writer = env.Stderr
	switch {
	case o.logFile != "":
		f, err := os.OpenFile(o.logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return usageError{fmt.Errorf("--log: %w", err)}
		}
		defer f.Close()
		logw = f
	case o.open:
		logw = io.Discard // the workbench owns the terminal
	}
	logf := func(format string, a ...any) { fmt.Fprintf(logw, "sessionbench proxy: "+format+"\n", a...) }

	var exp *otlp.Exporter
	if o.otlpEndpoint != "" {
		if exp, err = otlp.New(ctx, otlp.Options{Endpoint: o.otlpEndpoint}); err != nil {
			return usageError{fmt.Errorf("--otlp-endpoint: %w", err)}
		}
		defer exp.Shutdown(context.WithoutCancel(ctx))
	}
	rec, err := capture.New(ctx, capture.Options{Store: store, IdleGap: o.idle, Title: o.title,
		Metadata: map[string]any{"upstream": up.BaseURL},
		OnError:  func(err error) { logf("%v", err) },
		OnTurn: func(ctx context.Context, conv, key string) {
			if exp == nil {
				return
			}
			t, err := otlp.Stored(ctx, store, conv, storage.MainBranch, key)
			if err == nil {
				err = exp.Export(ctx, t)
			}
			if err != nil {
				logf("%v", err)
			}
		}})
	if err != nil {
		return err
	}
	srv, err := proxy.New(proxy.Options{Upstream: up, Recorder: rec, Log: logw})
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: time.Minute}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	base := "http://" + ln.Addr().String() + "/v1"
	fmt.Fprintln(env.Stdout, base)
	fmt.Fprintf(env.Stderr, "sessionbench proxy: listening on %s, forwarding to %s\n", base, desc)
	fmt.Fprintf(env.Stderr, "  recording into %s (a new turn after %s without calls)\n", dbPath, o.idle)
	if !isLoopback(o.host) {
		fmt.Fprintf(env.Stderr, "  warning: %s is reachable from other machines, which can then use your provider's key\n", o.host)
	}
	if exp != nil {
		fmt.Fprintf(env.Stderr, "  sending every turn to %s\n", o.otlpEndpoint)
	}
	fmt.Fprintf(env.Stderr, "  DSPy: dspy.configure(lm=dspy.LM(\"openai/<model>\", api_base=%q, cache=False))\n", base)

	var runErr error
	if o.open {
		if _, err := rec.Conversation(); err != nil { // listed in the workbench from the start
			return err
		}
		runErr = env.Workbench(ctx, dbPath, o.model.ConfigPath)
	} else {
		select {
		case <-ctx.Done():
		case runErr = <-served:
		}
	}
	// Let calls in flight finish (and be recorded), then commit the open turns.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		logf("stopping: %v", err)
	}
	if err := rec.Close(sctx); err != nil && runErr == nil {
		runErr = err
	}
	if errors.Is(runErr, http.ErrServerClosed) {
		runErr = nil
	}
	return runErr
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sameEndpoint reports whether an upstream host:port is the address the proxy listens on.
func sameEndpoint(upstream, listen string) bool {
	uh, up, err1 := net.SplitHostPort(upstream)
	lh, lp, err2 := net.SplitHostPort(listen)
	if err1 != nil || err2 != nil || up != lp {
		return false
	}
	return uh == lh || (isLoopback(uh) && isLoopback(lh)) || (lh == "::" || lh == "0.0.0.0")
}
