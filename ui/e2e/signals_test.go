package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWorkbenchSignalsLeaveTheTurnResumable: SIGTERM and SIGHUP (a closed terminal)
// reaching the workbench during a turn end it as `run` ends: the running turn is left
// interrupted, the process exits with 128 + the signal's number, and the next start
// offers to resume the turn, which then records.
func TestWorkbenchSignalsLeaveTheTurnResumable(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		name string
		code int
	}{{syscall.SIGTERM, "SIGTERM", 143}, {syscall.SIGHUP, "SIGHUP", 129}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			t.Parallel()
			ws := newWorkspace(t)
			ws.demoRate(t, 15) // slow enough to signal while the answer streams
			// the workbench's standard error goes to a file, to read its parting line
			// whole (the terminal scrolls it away as the pane closes)
			errFile := filepath.Join(ws.dir, "stderr")
			ws.wrap = []string{"sh", "-c", `exec "$@" 2>"$0"`, errFile}
			tm := startTerm(t, ws, 100, 30)
			tm.waitFor("no turns yet")
			tm.typeText("How do I reset my password?")
			tm.press("Enter")
			tm.waitFor("● running · esc cancels", "writing intent")

			pid := tm.workbenchPID()
			if err := syscall.Kill(pid, tc.sig); err != nil {
				t.Fatal(err)
			}
			if code := tm.waitExit(); code != tc.code {
				t.Fatalf("%v during a turn: exit status %d, want %d\nlast screen:\n%s", tc.sig, code, tc.code, tm.last)
			}

			// the workbench gives the terminal back and says what it left (a process
			// killed by the signal would print nothing)
			want := "sessionbench: interrupted by " + tc.name + ": a turn that was running is left interrupted, resumable"
			if data, err := os.ReadFile(errFile); err != nil || !strings.Contains(string(data), want) {
				t.Fatalf("standard error lacks %q: %q %v", want, data, err)
			}
			convs, out := listConversations(t, ws)
			if len(convs) != 1 || convs[0].Turns != 0 || convs[0].Pending != 1 || convs[0].Kept["interrupted"] != 1 || convs[0].Kept["cancelled"] != 0 {
				t.Fatalf("after %v mid-turn, want the turn kept interrupted and resumable; got %s", tc.sig, out)
			}

			ws.demoRate(t, 0)
			ws.wrap = nil
			tm.cmd = ws.args(binary(t))
			tm.restart()
			tm.waitFor("was interrupted", "[r]esume")
			tm.press("r")
			tm.waitFor("turn recorded on main", "╰─ 1 turn")
		})
	}
}

// workbenchPID is the process id of the workbench in the pane: the pane runs a shell
// (which writes the exit status), the workbench is its child.
func (tm *term) workbenchPID() int {
	tm.t.Helper()
	shell, err := strconv.Atoi(strings.TrimSpace(tm.must("display-message", "-p", "-t", tm.target, "#{pane_pid}")))
	if err != nil {
		tm.t.Fatalf("the pane's process id: %v", err)
	}
	deadline := time.Now().Add(waitLimit)
	for {
		children := childrenOf(shell)
		if len(children) == 1 {
			return children[0]
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("no single child of the pane's shell %d: %v", shell, children)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// TestWorkbenchSignalWhenIdle: SIGTERM with no turn running ends the workbench with
// 143 and says only that (nothing was left interrupted).
func TestWorkbenchSignalWhenIdle(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	errFile := filepath.Join(ws.dir, "stderr")
	ws.wrap = []string{"sh", "-c", `exec "$@" 2>"$0"`, errFile}
	tm := startTerm(t, ws, 100, 30)
	tm.waitFor("no turns yet")
	if err := syscall.Kill(tm.workbenchPID(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := tm.waitExit(); code != 143 {
		t.Fatalf("SIGTERM when idle: exit status %d, want 143", code)
	}
	if data, err := os.ReadFile(errFile); err != nil || string(data) != "sessionbench: interrupted by SIGTERM\n" {
		t.Fatalf("standard error: %q %v", data, err)
	}
}
