package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersion: the built binary names the revision it was built from. The go command
// records it only in a checkout whose .git is a folder (not in a git worktree, where
// .git is a file), so elsewhere the test checks that the binary says it is unknown.
func TestVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped under -short")
	}
	ws := newWorkspace(t)
	out, err := runBinary(t, ws, "--version")
	if err != nil {
		t.Fatalf("--version: %v\n%s", err, out)
	}
	cmdOut, err := runBinary(t, ws, "version")
	if err != nil || string(cmdOut) != string(out) {
		t.Errorf("'version' printed %q (%v), '--version' %q: they should agree", cmdOut, err, out)
	}
	if !strings.HasPrefix(string(out), "sessionbench ") {
		t.Fatalf("--version printed %q", out)
	}
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	fi, statErr := os.Stat(filepath.Join(root, ".git"))
	git, lookErr := exec.LookPath("git")
	if statErr != nil || !fi.IsDir() || lookErr != nil {
		if !strings.Contains(string(out), "revision unknown") {
			t.Errorf("built outside a plain checkout, yet --version claims a revision:\n%s", out)
		}
		t.Skipf("%s is not a plain git checkout (or git is missing): the revision cannot be compared", root)
	}
	head, err := exec.Command(git, "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	want := "revision " + strings.TrimSpace(string(head))
	if !strings.Contains(string(out), want) {
		t.Errorf("--version does not say %q:\n%s", want, out)
	}
}
