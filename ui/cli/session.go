package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/sessionbench/sessionbench/core"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/llm/config"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

func init() {
	Register(Command{
		Name: "session",
		Usage: []string{
			"session ls                   list stored conversations (all session commands take --db PATH, --json)",
			"session show ID [--branch B] [--tree]   a conversation, its branches and the turns of a branch",
			"                             (--tree: each turn as the tree of its inner calls)",
			"session fork ID --at N --name B [--from SRC]   new branch sharing turns 0..N of SRC (main)",
			"session undo ID [--branch B] [--steps N]       move the tip back (redo keeps the turns)",
			"session redo ID [--branch B] [--steps N]       move the tip forward again",
			"session branches ID          the branch tree with sibling positions",
			"session rm-branch ID B [--recursive]           delete a branch (main is protected)",
			"session status ID STATUS     in_progress -> completed | needs_human | failed | cancelled",
			"session pending              turns not ended: running in a live process, or interrupted (resumable)",
			"session retry TURN [--input k=v ...] [--branch NEW] [--model M]   run a failed, cancelled or",
			"                             interrupted turn again from where it stopped; answered calls are",
			"                             replayed from storage, not paid again (--input edits, --branch forks)",
			"session discard TURN         give up an interrupted turn (kept, cancelled)",
			"session rm-turn TURN         delete a failed, cancelled or interrupted turn with its calls",
			"session rm ID                delete a conversation and everything in it",
		},
		Run:     runSession,
		Ordinal: 40,
	})
}

// Exit codes of session and export.
const (
	storeOK    = 0
	storeError = 1 // not found, refused, conflict, I/O
	storeUsage = 2 // bad arguments
)

// storeFlags are the flags every storage command has.
type storeFlags struct {
	db   string
	json bool
}

func (f *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.db, "db", "", "database file (default $XDG_DATA_HOME/sessionbench/sessionbench.db)")
	fs.BoolVar(&f.json, "json", false, "print JSON for machines")
}

// dbFlag is " --db PATH" for a command printed as a hint, when the database was named
// with --db (quoted for the shell, so the hint runs as printed); "" for the default.
func dbFlag(db string) string {
	if db == "" {
		return ""
	}
	return " --db " + shellQuote(db)
}

// shellQuote quotes s for a POSIX shell when it holds anything but plain path characters.
func shellQuote(s string) string {
	plain := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:@%+,", r)
	}
	if s != "" && strings.IndexFunc(s, func(r rune) bool { return !plain(r) }) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// errNoDatabase: a command that only reads or changes existing conversations was
// pointed at a database file that does not exist; it is not created.
var errNoDatabase = errors.New("no database")

// open opens the database; only commands that store something new (run, import) create
// a missing file, the others refuse it with errNoDatabase.
func (f *storeFlags) open(ctx context.Context, create bool) (*storage.Store, error) {
	path := f.db
	if path == "" {
		p, err := config.DatabaseFile(os.Getenv)
		if err != nil {
			return nil, err
		}
		path = p
	}
	if !create {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w at %s (nothing is stored there yet; check --db)", errNoDatabase, path)
		}
	}
	// A database that cannot be written opens read-only: reading commands work (and say
	// so, noteReadOnly), the others fail with storage.ErrReadOnly saying why.
	return storage.OpenRead(ctx, path)
}

// noteReadOnly tells a reading command's user that the database is read-only.
func noteReadOnly(env Env, s *storage.Store) {
	if s.ReadOnly() {
		fmt.Fprintf(env.Stderr, "sessionbench: %s is read-only (%s): reading it, nothing can be changed\n", s.Path(), s.ReadOnlyReason())
	}
}

// sessionArgs describes one subcommand: its positional arguments and flags.
type sessionArgs struct {
	names  []string // positional argument names, for messages
	branch string
	steps  int
	at     int
	name   string
	from   string
	recurs bool
	tree   bool
	dbFlag string // " --db PATH" for the commands a listing suggests (dbFlag)
}

func runSession(ctx context.Context, env Env) int {
	if len(env.Args) == 0 {
		return unknownSubcommand(env, "session", "")
	}
	sub := env.Args[0]
	fs := newFlags("session " + sub)
	var sf storeFlags
	sf.register(fs)
	var a sessionArgs
	switch sub {
	case "ls", "pending":
	case "show":
		a.names = []string{"ID"}
		fs.StringVar(&a.branch, "branch", storage.MainBranch, "branch whose turns to list")
		fs.BoolVar(&a.tree, "tree", false, "print each turn as the tree of its inner calls (text output)")
	case "fork":
		a.names = []string{"ID"}
		fs.IntVar(&a.at, "at", -1, "index of the last shared turn (required)")
		fs.StringVar(&a.name, "name", "", "name of the new branch (required)")
		fs.StringVar(&a.from, "from", storage.MainBranch, "branch to fork")
	case "undo", "redo":
		a.names = []string{"ID"}
		fs.StringVar(&a.branch, "branch", storage.MainBranch, "branch to move")
		fs.IntVar(&a.steps, "steps", 1, "number of turns")
	case "branches", "rm":
		a.names = []string{"ID"}
	case "rm-branch":
		a.names = []string{"ID", "BRANCH"}
		fs.BoolVar(&a.recurs, "recursive", false, "also delete the branch's child branches")
	case "status":
		a.names = []string{"ID", "STATUS"}
	case "discard", "rm-turn":
		a.names = []string{"TURN"}
	case "retry":
		return runRetry(ctx, env)
	default:
		if isHelp(sub) {
			fmt.Fprint(env.Stdout, commandHelp("session"))
			return storeOK
		}
		return unknownSubcommand(env, "session", sub)
	}
	pos, code, done := parseFlags(env, fs, env.Args[1:], true)
	if done {
		return code
	}
	if len(pos) != len(a.names) {
		what := "no arguments"
		if len(a.names) > 0 {
			what = fmt.Sprintf("%d argument(s) (%s)", len(a.names), strings.Join(a.names, " "))
		}
		fmt.Fprintf(env.Stderr, "sessionbench session %s: want %s, got %d %s(see 'sessionbench session %s --help')\n",
			sub, what, len(pos), quoteArgs(pos), sub)
		return storeUsage
	}
	switch {
	case sub == "fork" && (a.at < 0 || a.name == ""):
		fmt.Fprintln(env.Stderr, "sessionbench session fork: --at N (N >= 0) and --name B are required")
		return storeUsage
	case sub == "fork" && storage.ValidateBranchName(a.name) != nil:
		fmt.Fprintf(env.Stderr, "sessionbench session fork: --name: %v\n", storage.ValidateBranchName(a.name))
		return storeUsage
	case (sub == "undo" || sub == "redo") && a.steps < 1:
		fmt.Fprintf(env.Stderr, "sessionbench session %s: --steps must be at least 1\n", sub)
		return storeUsage
	}
	var status trace.Status
	var err error
	if sub == "status" {
		if status, err = trace.ParseConversationStatus(pos[1]); err != nil {
			fmt.Fprintf(env.Stderr, "sessionbench session status: %v\n", err)
			return storeUsage
		}
	}
	s, err := sf.open(ctx, false)
	if errors.Is(err, errNoDatabase) && (sub == "ls" || sub == "pending") {
		// Nothing stored yet is an empty list, not an error; the file is not created.
		fmt.Fprintf(env.Stderr, "sessionbench session %s: %v\n", sub, err)
		if sf.json {
			fmt.Fprintln(env.Stdout, "[]")
		} else if sub == "ls" {
			printConversations(env.Stdout, nil)
		} else {
			printPending(env.Stdout, nil, "")
		}
		return storeOK
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "sessionbench session %s: %v\n", sub, err)
		return storeError
	}
	defer s.Close()
	if sub == "ls" || sub == "show" || sub == "branches" || sub == "pending" {
		noteReadOnly(env, s)
	}
	a.dbFlag = dbFlag(sf.db)
	out, err := sessionDo(ctx, s, sub, pos, a, status, sf.json, env.Stdout)
	if err != nil {
		fmt.Fprintf(env.Stderr, "sessionbench session %s: %v\n", sub, err)
		return storeError
	}
	if out != nil {
		if err := writeJSONOut(env.Stdout, out); err != nil {
			fmt.Fprintf(env.Stderr, "sessionbench session %s: %v\n", sub, err)
			return storeError
		}
	}
	return storeOK
}

// quoteArgs shows the positional arguments a command got, for a count mismatch.
func quoteArgs(pos []string) string {
	if len(pos) == 0 {
		return ""
	}
	q := make([]string, len(pos))
	for i, p := range pos {
		q[i] = strconv.Quote(p)
	}
	return "(" + strings.Join(q, " ") + ") "
}

// sessionDo runs a subcommand; it returns the value to print as JSON when asJSON, or
// writes the human form itself and returns nil.
func sessionDo(ctx context.Context, s *storage.Store, sub string, pos []string, a sessionArgs, status trace.Status, asJSON bool, w io.Writer) (any, error) {
	pick := func(v any, human func()) any {
		if asJSON {
			return v
		}
		human()
		return nil
	}
	switch sub {
	case "ls":
		list, err := s.ListConversations(ctx)
		if err != nil {
			return nil, err
		}
		if list == nil {
			list = []storage.ConversationSummary{}
		}
		for i := range list {
			// {} as in 'session show', so the key has one type for a reader of the JSON.
			if list[i].Metadata == nil {
				list[i].Metadata = map[string]any{}
			}
		}
		return pick(list, func() { printConversations(w, list) }), nil
	case "show":
		c, err := s.Conversation(ctx, pos[0])
		if err != nil {
			return nil, err
		}
		bs, err := s.Branches(ctx, pos[0])
		if err != nil {
			return nil, err
		}
		turns, err := s.BranchPath(ctx, pos[0], a.branch)
		if err != nil {
			return nil, err
		}
		if turns == nil {
			turns = []*storage.TurnNode{}
		}
		kept, err := keptTurns(ctx, s, pos[0], a.branch)
		if err != nil {
			return nil, err
		}
		attempts, err := turnAttempts(ctx, s, pos[0], turns, kept)
		if err != nil {
			return nil, err
		}
		v := map[string]any{"conversation": c, "branches": bs, "branch": a.branch, "turns": turns, "kept": kept, "attempts": attempts}
		var trees []*trace.Turn
		if a.tree && !asJSON {
			if trees, err = s.LoadBranch(ctx, pos[0], a.branch); err != nil {
				return nil, err
			}
		}
		return pick(v, func() {
			printShow(w, c, bs, a.branch, turns, kept, attempts, a.dbFlag)
			for _, t := range trees {
				fmt.Fprintln(w)
				core.PrintTraceTree(w, t, c.Agent)
			}
		}), nil
	case "fork":
		b, err := s.Fork(ctx, pos[0], a.from, a.name, a.at)
		if err != nil {
			return nil, err
		}
		return pick(b, func() {
			fmt.Fprintf(w, "forked %q from %q at turn %d: %d shared turns, nothing copied\n", b.Name, a.from, a.at, b.Length)
		}), nil
	case "undo", "redo":
		var keys []string
		var err error
		if sub == "undo" {
			keys, err = s.Undo(ctx, pos[0], a.branch, a.steps)
		} else {
			keys, err = s.Redo(ctx, pos[0], a.branch, a.steps)
		}
		if err != nil {
			return nil, err
		}
		b, err := s.Branch(ctx, pos[0], a.branch)
		if err != nil {
			return nil, err
		}
		if len(keys) == 0 {
			// Moving nothing is refused rather than reported as success, so a script notices.
			if sub == "undo" {
				return nil, fmt.Errorf("nothing to undo on branch %q of %s: it has no turns", a.branch, pos[0])
			}
			return nil, fmt.Errorf("nothing to redo on branch %q of %s: no undone turns (%d turns)", a.branch, pos[0], b.Length)
		}
		v := map[string]any{"turns": keys, "requested": a.steps, "branch": b}
		return pick(v, func() {
			verb := map[string]string{"undo": "undid", "redo": "redid"}[sub]
			n := termtext.Count(len(keys), "turn")
			if len(keys) < a.steps {
				n = fmt.Sprintf("%d of the %d turns requested", len(keys), a.steps) // as dspy-session: up to steps
			}
			fmt.Fprintf(w, "%s %s on %q: now %s, %d to redo\n", verb, n, a.branch, termtext.Count(b.Length, "turn"), b.Redo)
		}), nil
	case "branches":
		bs, err := s.Branches(ctx, pos[0])
		if err != nil {
			return nil, err
		}
		return pick(bs, func() { printBranches(w, bs) }), nil
	case "rm-branch":
		del, err := s.DeleteBranch(ctx, pos[0], pos[1], a.recurs)
		if errors.Is(err, storage.ErrConflict) && !a.recurs {
			return nil, fmt.Errorf("%w (or pass --recursive to delete them with it)", err)
		}
		if err != nil {
			return nil, err
		}
		return pick(map[string]any{"deleted": del}, func() { fmt.Fprintf(w, "deleted branch(es): %s\n", strings.Join(del, ", ")) }), nil
	case "status":
		if err := s.SetStatus(ctx, pos[0], status); err != nil {
			return nil, err
		}
		c, err := s.Conversation(ctx, pos[0])
		if err != nil {
			return nil, err
		}
		return pick(c, func() { fmt.Fprintf(w, "%s is now %s\n", c.ID, c.Status) }), nil
	case "pending":
		ps, err := s.PendingTurns(ctx)
		if err != nil {
			return nil, err
		}
		if ps == nil {
			ps = []*storage.PendingTurn{}
		}
		for _, p := range ps {
			if p.Calls == nil {
				p.Calls = []*trace.Call{}
			}
		}
		return pick(ps, func() { printPending(w, ps, a.dbFlag) }), nil
	case "discard":
		if err := s.DiscardTurn(ctx, pos[0], "discarded from the command line"); err != nil {
			return nil, err
		}
		return pick(map[string]any{"discarded": pos[0]}, func() {
			fmt.Fprintf(w, "discarded turn %s (kept as cancelled; 'session rm-turn %s' deletes it)\n", pos[0], pos[0])
		}), nil
	case "rm-turn":
		if err := s.DeleteTurn(ctx, pos[0]); err != nil {
			return nil, err
		}
		return pick(map[string]any{"deleted": pos[0]}, func() { fmt.Fprintf(w, "deleted turn %s and its calls\n", pos[0]) }), nil
	case "rm":
		if err := s.DeleteConversation(ctx, pos[0]); err != nil {
			return nil, err
		}
		return pick(map[string]any{"deleted": pos[0]}, func() { fmt.Fprintf(w, "deleted conversation %s\n", pos[0]) }), nil
	}
	return nil, errors.New("unreachable subcommand " + sub)
}
