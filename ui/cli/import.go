package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/sessionbench/sessionbench/core/savefile"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/storage/export"
	"github.com/sessionbench/sessionbench/ui/sessions"
	"github.com/sessionbench/sessionbench/ui/termtext"
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
	data, err := readFile(file, maxSaveFile)
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
		ag, err := agentCatalog().Resolve(agent)
		if err != nil {
			fmt.Fprintf(env.Stderr, "sessionbench import: %v\n", err)
			return storeUsage
		}
		ref := sessions.AgentRef(ag)
		if im.Agent != "" && !strings.EqualFold(im.Agent, ref) {
			fmt.Fprintf(env.Stderr, "sessionbench import: %s was recorded with agent %q; --agent %q disagrees (leave it out)\n", file, im.Agent, agent)
			return storeUsage
		}
		im.Agent = ref
	}
	var status trace.Status
	if im.Status != "" {
		if status, err = trace.ParseConversationStatus(im.Status); err != nil {
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
	c, err := s.ImportConversation(ctx, storage.NewConversation{Title: im.Title, Agent: im.Agent, AgentConfig: im.AgentConfig,
		Metadata: im.Metadata}, im.Turns, status)
	if err != nil {
		fmt.Fprintf(env.Stderr, "sessionbench import: %s: %v (nothing was imported)\n", file, err)
		return storeError
	}
	calls := 0
	for _, t := range im.Turns {
		trace.WalkCalls(t.Calls, func(*trace.Call, int) { calls++ })
	}
	id := c.ID
	sum := importSummary{Conversation: id, Title: im.Title, Agent: im.Agent, Branch: storage.MainBranch, Version: im.Version,
		Turns: len(im.Turns), Calls: calls, Status: string(c.Status), Notes: im.Notes}
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
	fmt.Fprintf(env.Stderr, "imported %s (dspy-session version %d): %s, %s on branch main, agent %s, title %q\n",
		file, im.Version, termtext.Count(len(im.Turns), "turn"), termtext.Count(calls, "call record"), dash(im.Agent), im.Title)
	for _, n := range im.Notes {
		fmt.Fprintf(env.Stderr, "note: %s\n", n)
	}
	if im.Agent == "" {
		fmt.Fprintln(env.Stderr, "note: the file names no agent, so the conversation can be read and exported but not continued (import again with --agent A)")
	}
	return storeOK
}
