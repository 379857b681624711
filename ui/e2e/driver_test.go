package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitLimit bounds every wait for the screen; it is never an assertion about speed.
const waitLimit = 20 * time.Second

// Commands get generous limits, so that a hung tool fails the test with its name
// instead of stalling it until go test's own timeout.
const (
	buildLimit = 5 * time.Minute
	cmdLimit   = 30 * time.Second
)

// escSettle follows a lone Escape: the workbench's terminal reader reads ESC and a byte
// arriving within 50ms as one alt+key press, so the next key must come later. Under load
// the reader can still see both at once, so the scenarios only follow Escape with a wait
// for its visible effect, and move the focus with Tab and shift+Tab.
const escSettle = 150 * time.Millisecond

var (
	buildOnce sync.Once
	buildDir  string
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// binary builds the real sessionbench binary once per test run, from the module root.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := filepath.Abs(filepath.Join("..", ".."))
		if err != nil {
			buildErr = fmt.Errorf("module root: %w", err)
			return
		}
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
			buildErr = fmt.Errorf("module root %s: %w", root, err)
			return
		}
		goTool, err := exec.LookPath("go")
		if err != nil {
			buildErr = fmt.Errorf("the go command builds the binary under test: %w", err)
			return
		}
		if buildDir, err = os.MkdirTemp("", "sessionbench-e2e-bin-"); err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(buildDir, "sessionbench")
		ctx, cancel := context.WithTimeout(context.Background(), buildLimit)
		defer cancel()
		// -buildvcs=auto overrides a GOFLAGS=-buildvcs=false, so a binary built in a
		// checkout carries its revision (TestVersion reads it).
		cmd := exec.CommandContext(ctx, goTool, "build", "-buildvcs=auto", "-o", binPath, ".")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("not done after %s: %w", buildLimit, err)
			}
			buildErr = fmt.Errorf("go build in %s: %w\n%s", root, err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// needTmux skips the test when it cannot run a terminal session.
func needTmux(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end tests are skipped under -short")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not found on PATH: end-to-end tests need tmux")
	}
}

// workspace is one test's private world: home, XDG folders, database and config file,
// so the user's own configuration, themes, agents and data never leak in.
type workspace struct {
	dir, db, config string
	model           string   // --model of the workbench; "" names none (the environment decides)
	extraEnv        []string // added to env(), e.g. OPENAI_BASE_URL for a real server
	wrap            []string // runs the binary through this command (another user: setpriv ...)
}

func newWorkspace(t *testing.T) *workspace {
	t.Helper()
	dir := t.TempDir()
	ws := &workspace{dir: dir, db: filepath.Join(dir, "t.db"), config: filepath.Join(dir, "config", "sessionbench", "config.toml"), model: "demo"}
	for _, d := range []string{filepath.Join(dir, "home"), filepath.Join(dir, "data"), filepath.Dir(ws.config)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// the demo model answers at once: the tests wait for what it says, not how fast
	ws.demoRate(t, 0)
	return ws
}

// demoRate sets the demo model's streaming speed in tokens per second.
func (ws *workspace) demoRate(t *testing.T, rate int) {
	t.Helper()
	if err := os.WriteFile(ws.config, []byte(fmt.Sprintf("[demo]\ntoken_rate = %d\n", rate)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// env is the whole environment of the binary and of tmux: nothing from the caller's
// but PATH, so no API key, model variable or terminal setting changes what is shown.
func (ws *workspace) env() []string {
	return append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(ws.dir, "home"),
		"XDG_CONFIG_HOME=" + filepath.Join(ws.dir, "config"),
		"XDG_DATA_HOME=" + filepath.Join(ws.dir, "data"),
		"LANG=C.UTF-8",
		"TERM=xterm-256color",
		"NO_COLOR=1",
		"TZ=UTC",
	}, ws.extraEnv...)
}

// args is the command line of the workbench over this workspace.
func (ws *workspace) args(bin string) []string {
	args := append(append([]string(nil), ws.wrap...), bin, "--db", ws.db, "--config", ws.config, "--theme", "dark")
	if ws.model != "" {
		args = append(args, "--model", ws.model)
	}
	return args
}

// term is the workbench running in a detached tmux session on a private socket.
type term struct {
	t      *testing.T
	ws     *workspace
	sock   string
	target string
	cmd    []string
	runs   int    // how many times the workbench was started
	status string // file the shell writes the current run's exit status to
	last   string // the last screen read, for failure messages
}

// startTerm runs the workbench in a w×h tmux window.
func startTerm(t *testing.T, ws *workspace, w, h int) *term {
	t.Helper()
	needTmux(t)
	return startCommand(t, ws, w, h, ws.args(binary(t)))
}

// startCommand runs a command line (the binary, a headless command) in a w×h tmux
// window, so that what it prints reaches a real terminal.
func startCommand(t *testing.T, ws *workspace, w, h int, cmd []string) *term {
	t.Helper()
	needTmux(t)
	// a short folder: unix socket paths are limited to about 100 bytes
	sockDir, err := os.MkdirTemp("", "sbe2e-")
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(sockDir, "tmux.conf")
	// remain-on-exit keeps the pane after the workbench quits, to read its exit status;
	// set-clipboard lets OSC 52 reach tmux buffers, so a leak would show
	if err := os.WriteFile(conf, []byte("set -g remain-on-exit on\nset -g status off\nset -g history-limit 0\nset -g set-clipboard on\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tm := &term{t: t, ws: ws, sock: filepath.Join(sockDir, "s"), target: "sb", cmd: cmd}
	t.Cleanup(func() {
		// the pane's shell and the workbench outlive kill-server for a moment: the
		// shell still writes the exit status and the workbench closes its database, so
		// the workspace is removed only once they are gone
		procs := tm.paneProcesses()
		_, _ = tm.tmux("kill-server")
		waitProcessesGone(procs)
		os.RemoveAll(sockDir)
	})
	// the workspace is the working directory: files the workbench saves land there
	if _, err := tm.tmux("-f", conf, "new-session", "-d", "-s", tm.target, "-c", ws.dir, "-x", strconv.Itoa(w), "-y", strconv.Itoa(h), tm.commandLine()); err != nil {
		t.Fatal(err)
	}
	return tm
}

// paneProcesses is the pane's shell and its children (the workbench), or none when the
// server or the pane is already gone.
func (tm *term) paneProcesses() []int {
	out, err := tm.tmux("list-panes", "-a", "-F", "#{pane_pid}")
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(out) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(append(pids, pid), childrenOf(pid)...)
		}
	}
	return pids
}

// childrenOf is the processes whose parent is pid (pgrep -P).
func childrenOf(pid int) []int {
	out, _ := exec.Command("pgrep", "-P", strconv.Itoa(pid)).Output()
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if c, err := strconv.Atoi(f); err == nil {
			pids = append(pids, c)
		}
	}
	return pids
}

// waitProcessesGone waits, up to waitLimit, until none of pids runs any more (gone or a
// zombie nobody reaped yet: a zombie writes nothing).
func waitProcessesGone(pids []int) {
	deadline := time.Now().Add(waitLimit)
	for _, pid := range pids {
		for time.Now().Before(deadline) {
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			// the state follows the command name, which is in parentheses
			if err != nil || bytes.HasPrefix(stat[bytes.LastIndexByte(stat, ')')+1:], []byte(" Z")) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// tmux runs one tmux command on the private server.
func (tm *term) tmux(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cmdLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "tmux", append([]string{"-u", "-S", tm.sock}, args...)...)
	cmd.Env = tm.ws.env()
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("not done after %s: %w", cmdLimit, err)
	}
	if err != nil {
		return string(out), fmt.Errorf("tmux %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

func (tm *term) must(args ...string) string {
	tm.t.Helper()
	out, err := tm.tmux(args...)
	if err != nil {
		tm.t.Fatalf("%v\nlast screen:\n%s", err, tm.last)
	}
	return out
}

// press sends named keys (Enter, Tab, BTab, Escape, C-c, or a single character).
func (tm *term) press(keys ...string) {
	tm.t.Helper()
	for _, k := range keys {
		tm.must("send-keys", "-t", tm.target, k)
		if k == "Escape" {
			time.Sleep(escSettle)
		}
	}
}

// typeText types text literally.
func (tm *term) typeText(s string) {
	tm.t.Helper()
	tm.must("send-keys", "-t", tm.target, "-l", s)
}

// screen is the visible pane as plain text.
func (tm *term) screen() string {
	tm.t.Helper()
	tm.last = tm.must("capture-pane", "-p", "-t", tm.target)
	return tm.last
}

// waitUntil polls the screen until ok holds, failing with the last screen on timeout.
func (tm *term) waitUntil(what string, ok func(screen string) bool) string {
	tm.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		s := tm.screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("waited %s for %s; last screen:\n%s", waitLimit, what, s)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// waitFor waits until every string is on screen.
func (tm *term) waitFor(want ...string) string {
	tm.t.Helper()
	return tm.waitUntil(fmt.Sprintf("%q on screen", want), func(s string) bool {
		for _, w := range want {
			if !strings.Contains(s, w) {
				return false
			}
		}
		return true
	})
}

// waitGone waits until none of the strings is on screen.
func (tm *term) waitGone(gone ...string) string {
	tm.t.Helper()
	return tm.waitUntil(fmt.Sprintf("%q gone from the screen", gone), func(s string) bool {
		for _, g := range gone {
			if strings.Contains(s, g) {
				return false
			}
		}
		return true
	})
}

// pasteBuffer waits for tmux's paste buffer, which an OSC 52 copy fills once tmux has
// read the sequence: the frame that says "copied" can be drawn before that.
func (tm *term) pasteBuffer() string {
	tm.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		out, err := tm.tmux("show-buffer")
		if err == nil {
			return out
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("waited %s for tmux's paste buffer: %v\nlast screen:\n%s", waitLimit, err, tm.last)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// resize sets the window size, as a terminal emulator being resized would.
func (tm *term) resize(w, h int) {
	tm.t.Helper()
	tm.must("resize-window", "-t", tm.target, "-x", strconv.Itoa(w), "-y", strconv.Itoa(h))
}

// paneTitle is the title the program set with OSC 0/2.
func (tm *term) paneTitle() string {
	tm.t.Helper()
	return strings.TrimSpace(tm.must("display-message", "-p", "-t", tm.target, "#{pane_title}"))
}

// commandLine is the shell command of the next run: the workbench, then its exit status
// written to a file. tmux's own pane_dead_status is not always filled in when the pane
// dies, so the status comes from the shell.
func (tm *term) commandLine() string {
	tm.runs++
	tm.status = filepath.Join(tm.ws.dir, fmt.Sprintf("exit-%d", tm.runs))
	return shellJoin(tm.cmd) + "; echo $? > " + shellJoin([]string{tm.status})
}

// waitExit waits for the workbench to end and returns its exit status (128+n when
// signal n killed it).
func (tm *term) waitExit() int {
	tm.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		data, err := os.ReadFile(tm.status)
		if err == nil && strings.HasSuffix(string(data), "\n") {
			n, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil {
				tm.t.Fatalf("exit status %q: %v", data, err)
			}
			return n
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("waited %s for the workbench to exit; last screen:\n%s", waitLimit, tm.screen())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// restart runs the workbench again in the same (dead) pane, same size and database.
func (tm *term) restart() {
	tm.t.Helper()
	tm.must("respawn-pane", "-k", "-t", tm.target, tm.commandLine())
}

// shellJoin quotes a command line for tmux, which hands it to sh -c.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// lines splits a screen into rows.
func lines(screen string) []string { return strings.Split(strings.TrimRight(screen, "\n"), "\n") }

// lineWith is the first row containing s, or "".
func lineWith(screen, s string) string {
	for _, l := range lines(screen) {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// runBinary runs the binary headless in the workspace's environment.
func runBinary(t *testing.T, ws *workspace, args ...string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdLimit)
	defer cancel()
	argv := append(append(append([]string(nil), ws.wrap...), binary(t)), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = ws.env()
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("sessionbench %s: not done after %s\n%s", strings.Join(args, " "), cmdLimit, out)
	}
	return out, err
}

// exitCode is the exit status of a finished command (-1 if it did not run).
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// convSummary is a conversation as `session ls --json` lists it.
type convSummary struct {
	ID      string         `json:"id"`
	Turns   int            `json:"turns"`
	Pending int            `json:"pending"`
	Kept    map[string]int `json:"kept_turns"`
}

// listConversations is what `session ls --json` says of the workspace's database, and
// its text for failure messages.
func listConversations(t *testing.T, ws *workspace) ([]convSummary, string) {
	t.Helper()
	out, err := runBinary(t, ws, "session", "ls", "--db", ws.db, "--json")
	if err != nil {
		t.Fatalf("session ls: %v\n%s", err, out)
	}
	var convs []convSummary
	if err := json.Unmarshal(out, &convs); err != nil {
		t.Fatalf("session ls --json: %v\n%s", err, out)
	}
	return convs, string(out)
}
