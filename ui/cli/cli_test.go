package cli

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/storage"
	_ "modernc.org/sqlite"
)

// cliCase is one command line and what it must give: the exit code, text that stdout
// and stderr must contain, and whether stdout must stay empty.
type cliCase struct {
	args      []string
	code      int
	stdout    []string
	stderr    []string
	quietOut  bool // stdout must be empty (errors print nothing there, even with --json)
	quietErrs bool // stderr must be empty
}

func checkCLI(t *testing.T, cases []cliCase) {
	t.Helper()
	for _, tc := range cases {
		code, out, errs := runStoreCmd(t, tc.args...)
		bad := code != tc.code || (tc.quietOut && out != "") || (tc.quietErrs && errs != "")
		for _, s := range tc.stdout {
			bad = bad || !strings.Contains(out, s)
		}
		for _, s := range tc.stderr {
			bad = bad || !strings.Contains(errs, s)
		}
		if bad {
			t.Errorf("%q: exit %d (want %d)\nstdout: %s\nstderr: %s\nwant stdout %q, stderr %q",
				tc.args, code, tc.code, out, errs, tc.stdout, tc.stderr)
		}
	}
}

func TestHelpAndFlagErrors(t *testing.T) {
	isolate(t)
	db := seedDB(t)
	checkCLI(t, []cliCase{
		// help: usage and every flag, on stdout, exit 0
		{args: []string{"help"}, stdout: []string{"session fork", "export ID"}, quietErrs: true},
		{args: []string{"session", "show", "--help"}, stdout: []string{"usage:\n  sessionbench session show", "session show ID", "-branch", "-db", "-json"}, quietErrs: true},
		{args: []string{"session", "fork", "-h"}, stdout: []string{"-at", "-name", "-from"}, quietErrs: true},
		{args: []string{"help", "session", "rm-branch"}, stdout: []string{"session rm-branch ID B", "-recursive"}, quietErrs: true},
		{args: []string{"session", "--help"}, stdout: []string{"session ls", "session discard TURN", "SUBCOMMAND --help"}, quietErrs: true},
		{args: []string{"help", "session"}, stdout: []string{"session rm ID"}, quietErrs: true},
		{args: []string{"help", "wire"}, stdout: []string{"wire format", "wire parse"}, quietErrs: true},
		{args: []string{"export", "--help"}, stdout: []string{"export ID --format F", "-format", "-out", "-path", "-history-field", "-json"}, quietErrs: true},
		// wrong flags name the flag and the command, with a hint; exit 2, nothing on stdout
		{args: []string{"session", "ls", "--bogus", "--db", db}, code: 2, quietOut: true,
			stderr: []string{"sessionbench session ls: flag provided but not defined: -bogus (see 'sessionbench session ls --help')"}},
		{args: []string{"session", "fork", "conv1", "--at", "abc", "--name", "x", "--db", db}, code: 2, quietOut: true,
			stderr: []string{"sessionbench session fork: invalid value \"abc\" for flag -at"}},
		{args: []string{"export", "conv1", "--db", db, "--format"}, code: 2, quietOut: true,
			stderr: []string{"sessionbench export: flag needs an argument: -format"}},
		{args: []string{"session", "ls", "--json", "--bogus"}, code: 2, quietOut: true, stderr: []string{"-bogus"}},
		{args: []string{"session", "fork", "conv1", "--at", "0", "--name", " ", "--db", db}, code: 2, stderr: []string{"sessionbench session fork: --name: branch name is empty"}},
		{args: []string{"session", "fork", "conv1", "--at", "0", "--name", "a\tb", "--db", db}, code: 2, stderr: []string{"--name: branch name \"a\\tb\" contains a control character"}},
		// missing and unknown subcommands list the known ones
		{args: []string{"session"}, code: 2, stderr: []string{"missing subcommand; want one of: ls, show, fork, undo, redo, branches, rm-branch, status, pending, retry, discard, rm-turn, rm"}},
		{args: []string{"session", "nope"}, code: 2, stderr: []string{`unknown subcommand "nope"; want one of: ls, show`}},
		{args: []string{"nope"}, code: 2, stderr: []string{`unknown command "nope"; commands: wire, models, ask`}},
		{args: []string{"help", "nope"}, code: 2, stderr: []string{`unknown command "nope"`}},
		// argument counts
		{args: []string{"session", "show", "a", "b", "--db", db}, code: 2, stderr: []string{`want 1 argument(s) (ID), got 2 ("a" "b")`}},
		{args: []string{"session", "ls", "extra", "--db", db}, code: 2, stderr: []string{`want no arguments, got 1 ("extra")`}},
		{args: []string{"export", "a", "b", "--format", "calls", "--db", db}, code: 2, stderr: []string{`want one conversation ID, got 2 argument(s) ("a" "b")`}},
		{args: []string{"run", "--help"}, stdout: []string{"usage:\n  sessionbench run", "-agent", "-input", "-script", "-conversation", "-json"}, quietErrs: true},
		{args: []string{"help", "import"}, stdout: []string{"usage:\n  sessionbench import", "import FILE", "-agent", "-title", "-db"}, quietErrs: true},
		{args: []string{"run", "--bogus"}, code: 2, quietOut: true, stderr: []string{"sessionbench run: flag provided but not defined: -bogus (see 'sessionbench run --help')"}},
		{args: []string{"run", "--input", "nonsense"}, code: 2, stderr: []string{`sessionbench run: invalid value "nonsense" for flag -input: "nonsense": want NAME=VALUE`}},
		{args: []string{"import", "a", "b"}, code: 2, stderr: []string{`want one FILE, got 2 argument(s) ("a" "b")`}},
		// every headless command takes --db and --json
		{args: []string{"models", "--db", db, "--json"}, stdout: []string{`"providers": [`}},
		{args: []string{"agents", "show", "RAGAgent", "--db", db, "--json"}, stdout: []string{`"name": "RAGAgent"`}},
		{args: []string{"agents", "ls", "--help"}, stdout: []string{"-db", "uses no database", "-json"}},
		{args: []string{"ask", "--help"}, stdout: []string{"-db", "-json"}},
		// after "--" everything is an argument, even what looks like a flag
		{args: []string{"session", "show", "--db", db, "--", "--weird"}, code: 1, stderr: []string{`conversation "--weird": not found`}},
		{args: []string{"session", "show", "--db", db, "--", "conv1"}, stdout: []string{"Login help"}},
	})
}

func TestStoreCommandsLeaveAMissingDatabaseUncreated(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "sub", "none.db")
	checkCLI(t, []cliCase{
		{args: []string{"session", "ls", "--db", db}, stdout: []string{"no conversations"}, stderr: []string{"no database at " + db}},
		{args: []string{"session", "ls", "--json", "--db", db}, stdout: []string{"[]"}},
		{args: []string{"session", "pending", "--db", db}, stdout: []string{"no in-flight turns"}},
		{args: []string{"session", "show", "c1", "--db", db}, code: 1, quietOut: true, stderr: []string{"no database at " + db}},
		{args: []string{"session", "fork", "c1", "--at", "0", "--name", "b", "--db", db}, code: 1, stderr: []string{"no database at"}},
		{args: []string{"session", "undo", "c1", "--db", db}, code: 1, stderr: []string{"no database at"}},
		{args: []string{"session", "status", "c1", "failed", "--db", db}, code: 1, stderr: []string{"no database at"}},
		{args: []string{"session", "rm", "c1", "--db", db}, code: 1, stderr: []string{"no database at"}},
		{args: []string{"export", "c1", "--format", "markdown", "--db", db}, code: 1, stderr: []string{"no database at"}},
		{args: []string{"run", "--conversation", "c1", "--input", "question=x", "--db", db}, code: 1, stderr: []string{"no database at"}},
	})
	if _, err := os.Stat(filepath.Join(dir, "sub")); !os.IsNotExist(err) {
		t.Errorf("a read-only command created %s (stat: %v)", filepath.Join(dir, "sub"), err)
	}
}

// TestRunChecksTheModelBeforeCreatingTheDatabase: a wrong --model or configuration file
// is reported without leaving a new, empty database behind.
func TestRunChecksTheModelBeforeCreatingTheDatabase(t *testing.T) {
	dir := isolate(t)
	db := filepath.Join(t.TempDir(), "new.db")
	checkCLI(t, []cliCase{
		{args: []string{"run", "--agent", "SupportAgent", "--input", "question=hi", "--model", "nope", "--db", db}, code: storeUsage, stderr: []string{`model "nope"`}},
	})
	path := writeConfig(t, dir, "[default]\nprovider = \"x\"\n")
	checkCLI(t, []cliCase{
		{args: []string{"run", "--agent", "SupportAgent", "--input", "question=hi", "--db", db}, code: storeUsage, stderr: []string{path + ":2: default.provider"}},
	})
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("run created %s before refusing the model (stat: %v)", db, err)
	}
}

func TestRmBranchWithChildren(t *testing.T) {
	db := seedDB(t)
	checkCLI(t, []cliCase{
		{args: []string{"session", "fork", "conv1", "--at", "1", "--name", "alt", "--db", db}},
		{args: []string{"session", "fork", "conv1", "--at", "0", "--name", "alt2", "--from", "alt", "--db", db}},
		{args: []string{"session", "rm-branch", "conv1", "alt", "--db", db}, code: 1, quietOut: true,
			stderr: []string{"delete children first: alt2", "(or pass --recursive to delete them with it)"}},
		{args: []string{"session", "rm-branch", "conv1", "nope", "--db", db}, code: 1, stderr: []string{`branch "nope" not found in conversation "conv1"`}},
		{args: []string{"session", "rm-branch", "conv1", "main", "--recursive", "--db", db}, code: 1, stderr: []string{"cannot delete the 'main' branch"}},
		{args: []string{"session", "rm-branch", "conv1", "alt", "--recursive", "--json", "--db", db}, stdout: []string{`"deleted": [`, `"alt2"`}},
	})
}

// TestJSONListsAreNeverNull: list and object keys keep their JSON type when empty.
func TestJSONListsAreNeverNull(t *testing.T) {
	db := filepath.Join(t.TempDir(), "j.db")
	s, err := storage.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateConversation(context.Background(), storage.NewConversation{ID: "c1", Title: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sink("c1", storage.MainBranch).BeginTurn(context.Background(), sig.NewMap("q", "x")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	checkCLI(t, []cliCase{
		{args: []string{"session", "ls", "--json", "--db", db}, stdout: []string{`"metadata": {}`}},
		{args: []string{"session", "pending", "--json", "--db", db}, stdout: []string{`"calls": []`}},
	})
	for _, args := range [][]string{{"session", "ls"}, {"session", "pending"}, {"session", "show", "c1"}, {"session", "branches", "c1"}} {
		if _, out, _ := runStoreCmd(t, append(args, "--json", "--db", db)...); strings.Contains(out, "null") {
			t.Errorf("%v --json has a null:\n%s", args, out)
		}
	}
}

func TestUndoRedoBounds(t *testing.T) {
	db := seedDB(t) // conv1: three turns on main
	checkCLI(t, []cliCase{
		{args: []string{"session", "undo", "conv1", "--steps", "10", "--db", db}, stdout: []string{`undid 3 of the 10 turns requested on "main": now 0 turns, 3 to redo`}},
		{args: []string{"session", "undo", "conv1", "--db", db}, code: 1, quietOut: true, stderr: []string{`nothing to undo on branch "main" of conv1: it has no turns`}},
		{args: []string{"session", "redo", "conv1", "--steps", "5", "--db", db}, stdout: []string{`redid 3 of the 5 turns requested on "main": now 3 turns, 0 to redo`}},
		{args: []string{"session", "redo", "conv1", "--json", "--db", db}, code: 1, quietOut: true, stderr: []string{`nothing to redo on branch "main" of conv1: no undone turns (3 turns)`}},
		{args: []string{"session", "undo", "conv1", "--json", "--db", db}, stdout: []string{`"requested": 1`, `"turns": [`}},
	})
}

func TestExportPathAndOutFile(t *testing.T) {
	db := seedDB(t) // calls have path "reply"
	dir := t.TempDir()
	kept := filepath.Join(dir, "kept.jsonl")
	if err := os.WriteFile(kept, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(dir, "t.md")
	checkCLI(t, []cliCase{
		{args: []string{"export", "conv1", "--format", "examples", "--path", "nope", "--out", kept, "--db", db}, code: 1,
			stderr: []string{`--path "nope": no call has that path (paths on this branch: reply)`}},
		{args: []string{"export", "conv1", "--format", "openai-jsonl", "--path", "nope", "--db", db}, code: 1, quietOut: true, stderr: []string{"paths on this branch: reply"}},
		{args: []string{"export", "conv1", "--format", "markdown", "--path", "reply", "--db", db}, code: 2, stderr: []string{"--path applies to --format examples and openai-jsonl, not markdown"}},
		{args: []string{"export", "conv1", "--format", "openai-jsonl", "--path", "reply", "--db", db}, stdout: []string{`"content":"password expired"`}},
		{args: []string{"export", "conv1", "--format", "markdown", "--out", filepath.Join(dir, "no", "t.md"), "--db", db}, code: 1, stderr: []string{"--out " + filepath.Join(dir, "no", "t.md")}},
		{args: []string{"export", "conv1", "--format", "markdown", "--out", md, "--json", "--db", db}, stdout: []string{`"out": "` + md + `"`}},
		{args: []string{"export", "conv1", "--format", "markdown", "--out", dir, "--db", db}, code: 1, stderr: []string{"--out " + dir + " is not a regular file"}},
	})
	if b, _ := os.ReadFile(kept); string(b) != "precious\n" {
		t.Errorf("a failed export changed --out: %q", b)
	}
	if b, _ := os.ReadFile(md); !strings.HasPrefix(string(b), "# Login help") {
		t.Errorf("markdown export: %q", b)
	}
	if st, err := os.Stat(md); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("export file: %v %v", st, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("temporary files left behind: %v", ents)
	}
}

// TestBadDatabasesAreRefusedUntouched: every storage command refuses a file that is not
// a sessionbench database, a damaged one and a newer one, naming the file, and leaves it
// byte for byte as it was.
func TestBadDatabasesAreRefusedUntouched(t *testing.T) {
	dir := t.TempDir()
	good := seedDB(t)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	write := func(name string, b []byte) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		files[name] = p
	}
	write("text.db", []byte("just some notes, not a database\n"))
	write("truncated.db", data[:len(data)/2])
	newer := filepath.Join(dir, "newer.db")
	foreign := filepath.Join(dir, "foreign.db")
	for p, stmt := range map[string]string{newer: "PRAGMA user_version = 99", foreign: "CREATE TABLE notes(x)"} {
		if p == newer {
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		d, err := sql.Open("sqlite", p)
		if err == nil {
			_, err = d.Exec(stmt)
			d.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	files["newer.db"], files["foreign.db"] = newer, foreign
	want := map[string]string{"text.db": "is not a SQLite file", "truncated.db": "malformed",
		"newer.db": "has schema version 99", "foreign.db": "of another program"}
	for name, p := range files {
		before := sha256.Sum256(mustRead(t, p))
		for _, args := range [][]string{
			{"session", "ls"}, {"session", "show", "conv1"}, {"session", "undo", "conv1"}, {"session", "rm", "conv1"},
			{"export", "conv1", "--format", "markdown"}, {"run", "--agent", "SupportAgent", "--input", "question=hi"},
		} {
			code, out, errs := runStoreCmd(t, append(args, "--db", p)...)
			if code != storeError || out != "" || !strings.Contains(errs, p) || !strings.Contains(errs, want[name]) {
				t.Errorf("%s %v: exit %d\nstdout: %s\nstderr: %s", name, args, code, out, errs)
			}
		}
		if sha256.Sum256(mustRead(t, p)) != before {
			t.Errorf("%s was changed", name)
		}
		for _, side := range []string{"-wal", "-shm", "-journal"} {
			if _, err := os.Stat(p + side); err == nil {
				t.Errorf("%s%s was created", name, side)
			}
		}
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
