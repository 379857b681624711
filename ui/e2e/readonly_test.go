package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// readOnlyWorkspace stores one conversation in a database in its own folder, then
// makes that folder and file read-only for the binary: by their modes, or, as root
// (who may write anything), by running the binary as the unprivileged user nobody.
func readOnlyWorkspace(t *testing.T) (*workspace, string) {
	t.Helper()
	ws := newWorkspace(t)
	ws.db = filepath.Join(ws.dir, "ro", "t.db")
	out, err := runBinary(t, ws, "run", "--agent", "SupportAgent", "--input", "question=read me back", "--db", ws.db)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	conv := convID(t, string(out))
	dbDir := filepath.Dir(ws.db)
	if os.Geteuid() != 0 {
		chmod(t, ws.db, 0o444)
		chmod(t, dbDir, 0o555)
		t.Cleanup(func() { os.Chmod(dbDir, 0o755) })
		return ws, conv
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("running as root without setpriv: cannot make a database read-only for the binary")
	}
	ws.wrap = []string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"}
	// nobody may read (not write) the database, the configuration and the binary
	for _, d := range []string{filepath.Dir(ws.dir), ws.dir, dbDir, filepath.Join(ws.dir, "config"), filepath.Dir(ws.config), filepath.Dir(binary(t))} {
		chmod(t, d, 0o755)
	}
	chmod(t, ws.db, 0o644)
	chmod(t, ws.config, 0o644)
	return ws, conv
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// convID is the conversation run printed on its first line ("conversation ID (new) ...").
func convID(t *testing.T, out string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "conversation" {
			return f[1]
		}
	}
	t.Fatalf("no conversation in:\n%s", out)
	return ""
}

// A read-only database (here a folder and file the binary cannot write) is listed,
// shown and exported, each saying it is read-only; a change is refused saying why; the
// workbench opens it in a read-only mode that says so and shows its turns; nothing is
// left beside the file (no -wal, no -shm).
func TestReadOnlyDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	ws, conv := readOnlyWorkspace(t)
	before, err := os.ReadFile(ws.db)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"session", "ls"}, 0, []string{conv, "is read-only", "reading it, nothing can be changed"}},
		{[]string{"session", "show", conv}, 0, []string{"read me back", "is read-only"}},
		{[]string{"export", conv, "--format", "markdown"}, 0, []string{"**question**: read me back", "is read-only"}},
		{[]string{"export", conv, "--format", "session-json"}, 0, []string{`"question": "read me back"`}},
		{[]string{"session", "fork", conv, "--at", "0", "--name", "b"}, 1, []string{"cannot be written", "nothing was changed"}},
		{[]string{"run", "--agent", "SupportAgent", "--conversation", conv, "--input", "question=more"}, 1, []string{"nothing was changed"}},
	}
	for _, c := range cases {
		out, err := runBinary(t, ws, append(c.args, "--db", ws.db)...)
		if got := exitCode(err); got != c.code {
			t.Errorf("%v: exit %d, want %d\n%s", c.args, got, c.code, out)
		}
		for _, w := range c.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%v: output lacks %q:\n%s", c.args, w, out)
			}
		}
		if strings.Contains(string(out), "unable to open database file") {
			t.Errorf("%v: SQLite's bare error:\n%s", c.args, out)
		}
	}

	tm := startTerm(t, ws, 100, 30)
	tm.waitFor("read-only", "read me back")
	tm.press("Enter")
	tm.waitFor("intent: general", "opened read me back")
	tm.press("C-c")
	if code := tm.waitExit(); code != 0 {
		t.Errorf("the workbench exited %d; last screen:\n%s", code, tm.last)
	}

	after, err := os.ReadFile(ws.db)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Error("the database file changed")
	}
	if left, _ := filepath.Glob(ws.db + "-*"); len(left) > 0 {
		t.Errorf("reading left %v", left)
	}
}
