package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/storage/export"
	"github.com/sessionbench/sessionbench/storage/otlp"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

func init() {
	Register(Command{
		Name: "export",
		Usage: []string{
			"export ID --format F [--branch B] [--path P] [--out FILE] [--no-calls]",
			"                             F: session-json (dspy-session v2) | examples (DSPy JSONL; --path for",
			"                             call level) | calls | openai-jsonl | markdown",
			"                             (session-json writes each request's messages once, shared; --no-calls",
			"                             leaves the call records out)",
			"export ID --format otlp --otlp-endpoint URL [--branch B]",
			"                             send every turn as an OpenTelemetry trace (GenAI conventions) to a collector",
		},
		Run:     runExport,
		Ordinal: 41,
	})
}

func runExport(ctx context.Context, env Env) int {
	fs := newFlags("export")
	var sf storeFlags
	sf.register(fs)
	fs.Lookup("json").Usage = "with --out: print what was written as JSON (the export itself is in its format)"
	var format, branch, path, out, field string
	fs.StringVar(&format, "format", "", "output format (required): "+strings.Join(export.Formats, ", ")+", otlp")
	fs.StringVar(&branch, "branch", storage.MainBranch, "branch to export")
	fs.StringVar(&path, "path", "", "predictor path: call-level examples, or only its calls for openai-jsonl")
	fs.StringVar(&out, "out", "", "write to FILE instead of standard output (replaced only when the export succeeds)")
	fs.StringVar(&field, "history-field", "history", "the session's history field name")
	noCalls := fs.Bool("no-calls", false, "with --format session-json: leave the call records out (a much smaller file)")
	var endpoint string
	fs.StringVar(&endpoint, "otlp-endpoint", "", "with --format otlp: the OTLP/HTTP collector, e.g. http://localhost:4318")
	pos, code, done := parseFlags(env, fs, env.Args, true)
	if done {
		return code
	}
	usage := func(format string, args ...any) int {
		fmt.Fprintf(env.Stderr, "sessionbench export: "+format+" (see 'sessionbench export --help')\n", args...)
		return storeUsage
	}
	if len(pos) != 1 {
		return usage("want one conversation ID, got %d argument(s) %s", len(pos), quoteArgs(pos))
	}
	if format == "otlp" {
		if endpoint == "" || path != "" || out != "" {
			return usage("--format otlp sends to a collector: give --otlp-endpoint URL (and no --path or --out)")
		}
		return exportOTLP(ctx, env, sf, pos[0], branch, endpoint)
	}
	if endpoint != "" {
		return usage("--otlp-endpoint goes with --format otlp")
	}
	if !slices.Contains(export.Formats, format) {
		return usage("--format must be one of %s, otlp (got %q)", strings.Join(export.Formats, ", "), format)
	}
	if path != "" && format != "examples" && format != "openai-jsonl" {
		return usage("--path applies to --format examples and openai-jsonl, not %s", format)
	}
	s, err := sf.open(ctx, false)
	if err != nil {
		fmt.Fprintf(env.Stderr, "sessionbench export: %v\n", err)
		return storeError
	}
	defer s.Close()
	noteReadOnly(env, s)
	src, err := export.Load(ctx, s, pos[0], branch)
	if err != nil {
		fmt.Fprintf(env.Stderr, "sessionbench export: %v\n", err)
		return storeError
	}
	if path != "" {
		if err := checkCallPath(src, path); err != nil {
			fmt.Fprintf(env.Stderr, "sessionbench export: %s/%s: %v\n", pos[0], branch, err)
			return storeError
		}
	}
	if *noCalls && format != "session-json" {
		return usage("--no-calls applies to --format session-json, not %s", format)
	}
	eo := export.Options{Path: path, HistoryField: field, NoCalls: *noCalls}
	if format == "examples" && src.Conv.Agent != "" {
		// Turn-level examples derive their histories with the conversation's own session
		// settings; an agent that no longer resolves leaves the stored ones.
		if ag, err := agentCatalog().Resolve(src.Conv.Agent); err == nil {
			if _, opts, err := ag.Build(); err == nil {
				eo.Session = opts
			}
		}
	}
	write := func(w io.Writer) error {
		return export.Write(w, format, src, eo)
	}
	if out == "" && env.Terminal && format != "markdown" {
		// JSON on a terminal: escapes, not pictures, so what shows is still the same JSON.
		jw := termtext.NewJSONWriter(env.Stdout)
		if err = write(jw); err == nil {
			err = jw.Flush()
		}
	} else if out == "" {
		err = write(env.Stdout)
	} else {
		err = writeFileAtomic(out, write)
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "sessionbench export: %s of %s/%s: %v\n", format, pos[0], branch, err)
		return storeError
	}
	switch {
	case out != "" && sf.json:
		writeJSONOut(env.Stdout, map[string]any{"out": out, "format": format, "conversation": pos[0], "branch": branch, "turns": src.Len()})
	case out != "":
		fmt.Fprintf(env.Stderr, "wrote %s (%s, %d turns)\n", out, format, src.Len())
	}
	return storeOK
}

// checkCallPath refuses a --path that no recorded call of the branch has, naming the
// paths there are (an empty export would otherwise look like success).
func checkCallPath(src *export.Source, path string) error {
	var paths []string
	found := false
	err := src.EachWith(storage.LoadOptions{NoRequests: true}, func(t *trace.Turn) error {
		trace.WalkCalls(t.Calls, func(c *trace.Call, _ int) {
			found = found || c.Path == path
			if !slices.Contains(paths, c.Path) {
				paths = append(paths, c.Path)
			}
		})
		return nil
	})
	if err != nil {
		return err
	}
	if found {
		return nil
	}
	if len(paths) == 0 {
		return fmt.Errorf("--path %q: the branch has no recorded calls", path)
	}
	return fmt.Errorf("--path %q: no call has that path (paths on this branch: %s)", path, strings.Join(paths, ", "))
}

// writeFileAtomic writes a file through a temporary file in the same directory renamed
// over it at the end, so a failed export leaves an existing file as it was.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("--out %s is not a regular file (a directory?); name the file to write", path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("--out %s: %w", path, err)
	}
	// 0600 (CreateTemp's mode): exports hold the same private conversation data as the database.
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

// exportOTLP sends every turn of a branch to an OTLP/HTTP collector, one trace per turn.
func exportOTLP(ctx context.Context, env Env, sf storeFlags, conv, branch, endpoint string) int {
	exp, err := otlp.New(ctx, otlp.Options{Endpoint: endpoint})
	if err != nil {
		fmt.Fprintf(env.Stderr, "sessionbench export: --otlp-endpoint: %v\n", err)
		return storeUsage
	}
	defer exp.Shutdown(context.WithoutCancel(ctx))
	s, err := sf.open(ctx, false)
	if err != nil {
		fmt.Fprintf(env.Stderr, "sessionbench export: %v\n", err)
		return storeError
	}
	defer s.Close()
	turns, err := otlp.Branch(ctx, s, conv, branch)
	if err == nil {
		err = exp.Export(ctx, turns...)
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "sessionbench export: %s/%s: %v\n", conv, branch, err)
		return storeError
	}
	calls := 0
	for _, t := range turns {
		trace.WalkCalls(t.Turn.Calls, func(*trace.Call, int) { calls++ })
	}
	if sf.json {
		writeJSONOut(env.Stdout, map[string]any{"format": "otlp", "endpoint": endpoint, "conversation": conv, "branch": branch,
			"traces": len(turns), "spans": len(turns) + calls})
	} else {
		fmt.Fprintf(env.Stderr, "sent %s as traces (%s) to %s\n", termtext.Count(len(turns), "turn"), termtext.Count(len(turns)+calls, "span"), endpoint)
	}
	return storeOK
}
