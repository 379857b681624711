package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sessionbench/sessionbench/core/savefile"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/storage/export"
)

func init() {
	Register(Command{
		Name: "import",
		Usage: []string{
			"import FILE [--agent A] [--title T]   a dspy-session save file (version 1 or 2, e.g. from",
			"                             'export --format session-json' or Session.save) becomes a conversation",
		},
		Run:     runImportCommand,
		Ordinal: 42,
	})
}

// importSummary is what import --json prints.
type importSummary struct {
	Conversation string   `json:"conversation"`
	Title        string   `json:"title"`
	Agent        string   `json:"agent"`
	Branch       string   `json:"branch"`
	Version      int      `json:"version"`
	Turns        int      `json:"turns"`
	Calls        int      `json:"calls"`
	Status       string   `json:"status"`
	Notes        []string `json:"notes"`
}

func runImportCommand(ctx context.Context, env Env) int {
	fs := newFlags("import")
	var sf storeFlags
	sf.register(fs)
	var agent, title string
	fs.StringVar(&agent, "agent", "", "agent of the conversation when the file names none")
	fs.StringVar(&title, "title", "", "title (default: the title recorded in the file, else the file name)")
	pos, code, done := parseFlags(env, fs, env.Args, true)
	if done {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintf(env.Stderr, "sessionbench import: want one FILE, got %d argument(s) %s(see 'sessionbench import --help')\n", len(pos), quoteArgs(pos))
		return storeUsage
	}
	file := pos[0]
	data, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(env.Stderr, "sessionbench import: %v\n", err)
		return storeUsage
	}
	// Everything is parsed and checked before the database is touched.
	parsed, err := savefile.Decode(data)
	if err != nil {
		fmt.Fprintf(env.Stderr, "sessionbench import: %s: %v\n", file, err)
		return storeUsage
	}
	im, err := export.BuildImport(parsed)
	if err != nil {
		fmt.Fprintf(env.Stderr, "sessionbench import: %s: %v\n", file, err)
		return storeUsage
	}
	if agent != "" {
		ag, err := runFindAgent(agent)
		if err != nil {
			fmt.Fprintf(env.Stderr, "sessionbench import: %v\n", err)
			return storeUsage
		}
		ref := runAgentRef(ag)
		if im.Agent != "" && !strings.EqualFold(im.Agent, ref) {
			fmt.Fprintf(env.Stderr, "sessionbench import: %s was recorded with agent %q; --agent %q disagrees (leave it out)\n", file, im.Agent, agent)
			return storeUsage
		}
		im.Agent = ref
	}
	var status storage.Status
	if im.Status != "" {
		if status, err = storage.ParseStatus(im.Status); err != nil {
			fmt.Fprintf(env.Stderr, "sessionbench import: %s: $.x_sessionbench.status: %v\n", file, err)
			return storeUsage
		}
	}
	switch {
	case title != "":
		im.Title = title
	case im.Title == "":
		im.Title = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}

	s, err := sf.open(ctx, true)
	if err != nil {
		fmt.Fprintf(env.Stderr, "sessionbench import: %v\n", err)
		return storeError
	}
	defer s.Close()
	id, err := importWrite(ctx, s, im, status)
	if err != nil {
		fmt.Fprintf(env.Stderr, "sessionbench import: %s: %v (nothing was imported)\n", file, err)
		return storeError
	}
	calls := 0
	for _, t := range im.Turns {
		trace.WalkCalls(t.Calls, func(*trace.Call, int) { calls++ })
	}
	if status == "" {
		status = storage.StatusInProgress
	}
	sum := importSummary{Conversation: id, Title: im.Title, Agent: im.Agent, Branch: storage.MainBranch, Version: im.Version,
		Turns: len(im.Turns), Calls: calls, Status: string(status), Notes: im.Notes}
	if sum.Notes == nil {
		sum.Notes = []string{}
	}
	if sf.json {
		if err := writeJSONOut(env.Stdout, sum); err != nil {
			fmt.Fprintf(env.Stderr, "sessionbench import: %v\n", err)
			return storeError
		}
		return storeOK
	}
	fmt.Fprintln(env.Stdout, id)
	fmt.Fprintf(env.Stderr, "imported %s (dspy-session version %d): %d turn(s), %d call record(s) on branch main, agent %s, title %q\n",
		file, im.Version, len(im.Turns), calls, dash(im.Agent), im.Title)
	for _, n := range im.Notes {
		fmt.Fprintf(env.Stderr, "note: %s\n", n)
	}
	if im.Agent == "" {
		fmt.Fprintln(env.Stderr, "note: the file names no agent, so the conversation can be read and exported but not continued (import again with --agent A)")
	}
	return storeOK
}

// importStore is the part of the store an import writes through (tests inject failures).
type importStore interface {
	CreateConversation(ctx context.Context, nc storage.NewConversation) (*storage.Conversation, error)
	AppendTurn(ctx context.Context, convID, branch string, t *trace.Turn) (string, error)
	SetStatus(ctx context.Context, id string, to storage.Status) error
	DeleteConversation(ctx context.Context, id string) error
}

// importWrite creates the conversation and appends its turns in order. A failure part-way
// deletes the conversation, so an import either lands whole or not at all.
func importWrite(ctx context.Context, s importStore, im *export.Import, status storage.Status) (id string, err error) {
	c, err := s.CreateConversation(ctx, storage.NewConversation{Title: im.Title, Agent: im.Agent, AgentConfig: im.AgentConfig, Metadata: im.Metadata})
	if err != nil {
		return "", err
	}
	defer func() {
		if err == nil {
			return
		}
		// The caller's context may be the reason for the failure (Ctrl+C); clean up anyway.
		if derr := s.DeleteConversation(context.WithoutCancel(ctx), c.ID); derr != nil {
			err = errors.Join(err, fmt.Errorf("removing the partial conversation %s also failed: %w", c.ID, derr))
		}
	}()
	for i, t := range im.Turns {
		if _, err := s.AppendTurn(ctx, c.ID, storage.MainBranch, t); err != nil {
			return "", fmt.Errorf("turn %d: %w", i, err)
		}
	}
	if status != "" && status != c.Status {
		if err := s.SetStatus(ctx, c.ID, status); err != nil {
			return "", fmt.Errorf("status %s: %w", status, err)
		}
	}
	return c.ID, nil
}
