package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/storage/export"
)

func init() {
	Register(Command{
		Name: "export",
		Usage: []string{
			"export ID --format F [--branch B] [--path P] [--out FILE]",
			"                             F: session-json (dspy-session v2) | examples (DSPy JSONL; --path for",
			"                             call level) | calls | openai-jsonl | markdown",
		},
		Run:     runExport,
		Ordinal: 41,
	})
}

func runExport(ctx context.Context, env Env) int {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var sf storeFlags
	sf.register(fs)
	var format, branch, path, out, field string
	fs.StringVar(&format, "format", "", "output format: "+strings.Join(export.Formats, ", "))
	fs.StringVar(&branch, "branch", storage.MainBranch, "branch to export")
	fs.StringVar(&path, "path", "", "predictor path: call-level examples, or only its calls for openai-jsonl")
	fs.StringVar(&out, "out", "", "write to FILE instead of standard output")
	fs.StringVar(&field, "history-field", "history", "the session's history field name")
	pos, err := parseInterleaved(fs, env.Args)
	if err != nil {
		return storeUsage
	}
	if len(pos) != 1 {
		fmt.Fprintf(env.Stderr, "sessionbench export: want one conversation ID, got %d argument(s)\n", len(pos))
		return storeUsage
	}
	known := false
	for _, f := range export.Formats {
		known = known || f == format
	}
	if !known {
		fmt.Fprintf(env.Stderr, "sessionbench export: --format must be one of %s (got %q)\n", strings.Join(export.Formats, ", "), format)
		return storeUsage
	}
	s, err := sf.open(ctx)
	if err != nil {
		fmt.Fprintf(env.Stderr, "sessionbench export: %v\n", err)
		return storeError
	}
	defer s.Close()
	src, err := export.Load(ctx, s, pos[0], branch)
	if err != nil {
		fmt.Fprintf(env.Stderr, "sessionbench export: %v\n", err)
		return storeError
	}
	w := env.Stdout
	var f *os.File
	if out != "" {
		// 0600: exports hold the same private conversation data as the database.
		if f, err = os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600); err != nil {
			fmt.Fprintf(env.Stderr, "sessionbench export: %v\n", err)
			return storeError
		}
		w = f
	}
	err = export.Write(w, format, src, export.Options{Path: path, HistoryField: field})
	if f != nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "sessionbench export: %s of %s/%s: %v\n", format, pos[0], branch, err)
		return storeError
	}
	switch {
	case out != "" && sf.json:
		writeJSONOut(env.Stdout, map[string]any{"out": out, "format": format, "conversation": pos[0], "branch": branch, "turns": len(src.Turns)})
	case out != "":
		fmt.Fprintf(env.Stderr, "wrote %s (%s, %d turns)\n", out, format, len(src.Turns))
	}
	return storeOK
}
