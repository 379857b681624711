package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
)

// The real binary under kill -9, signals and a second process: every way a process can
// stop leaves a record that is whole, never half written.

// supportReply answers both of SupportAgent's calls.
const supportReply = "[[ ## intent ## ]]\ntechnical\n\n[[ ## reasoning ## ]]\nA login problem.\n\n[[ ## reply ## ]]\nTry a reset.\n\n[[ ## completed ## ]]"

// modelServer speaks the OpenAI chat protocol (streamed, as the binary asks) and
// answers every completion request with supportReply after hold(n) returns, n counting
// them from 1.
func modelServer(t *testing.T, hold func(n int64, r *http.Request)) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.NotFound(w, r) // the HEAD that opens a connection early: not a call
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body)) // for hold to read
		k := n.Add(1)
		if hold != nil {
			hold(k, r)
		}
		if r.Context().Err() != nil {
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", supportReply)
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5,\"total_tokens\":15}}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// cliEnv is the environment of a headless command: its own empty configuration.
func cliEnv(t *testing.T) []string {
	t.Helper()
	return append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir(), "OPENAI_API_KEY=test")
}

// sb runs the binary to the end and returns its exit code, stdout and stderr.
func sb(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.Env = env
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return code, out.String(), errb.String()
}

// turnLine is what run --json prints for each turn (the fields the tests read).
type turnLine struct {
	Conversation string       `json:"conversation"`
	Turn         string       `json:"turn"`
	Index        int          `json:"index"`
	Status       trace.Status `json:"status"`
}

func openDB(t *testing.T, path string) *storage.Store {
	t.Helper()
	s, err := storage.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// kills is how many random kills a loop makes: SB_E2E_KILLS, or def.
func kills(def int) int {
	if n, err := strconv.Atoi(os.Getenv("SB_E2E_KILLS")); err == nil && n > 0 {
		return n
	}
	return def
}

// TestKillDuringRun kills `run --script` with SIGKILL at random moments. After every kill
// the database passes integrity_check; every turn the binary reported is on the branch,
// in order; at most one turn did not end, and it is interrupted (its process is gone),
// never "running". Every other time it is resumed with `session retry`, which asks the
// model only for the calls the turn had not got answers for; otherwise the next run
// supersedes it (kept, cancelled).
func TestKillDuringRun(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	t.Parallel()
	env := cliEnv(t)
	db := filepath.Join(t.TempDir(), "kill.db")
	srv, asked := modelServer(t, func(int64, *http.Request) { time.Sleep(time.Duration(rand.IntN(8)) * time.Millisecond) })
	model := []string{"--base-url", srv.URL + "/v1", "--model", "m", "--db", db}
	code, out, errs := sb(t, env, append([]string{"run", "--agent", "SupportAgent", "--input", "question=start", "--json"}, model...)...)
	var first turnLine
	if code != 0 || json.Unmarshal([]byte(out), &first) != nil {
		t.Fatalf("first run: %d %s %s", code, out, errs)
	}
	conv := first.Conversation
	var script strings.Builder
	for i := 0; i < 400; i++ {
		fmt.Fprintf(&script, "{\"question\": \"question %d\"}\n", i)
	}
	scriptPath := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(scriptPath, []byte(script.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	committed := []string{first.Turn}
	resumed, superseded := 0, 0
	rng := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
	for k := 0; k < kills(12); k++ {
		cmd := exec.Command(binary(t), append([]string{"run", "--conversation", conv, "--script", scriptPath, "--json"}, model...)...)
		cmd.Env = env
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		time.Sleep(time.Duration(30+rng.IntN(250)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		for l := range lines {
			var tl turnLine
			if err := json.Unmarshal([]byte(l), &tl); err != nil || tl.Status != trace.StatusCompleted {
				t.Fatalf("kill %d: line %q (%v)", k, l, err)
			}
			committed = append(committed, tl.Turn)
		}

		s := openDB(t, db)
		ctx := context.Background()
		if err := s.IntegrityCheck(ctx); err != nil {
			t.Fatalf("kill %d: %v", k, err)
		}
		path, err := s.BranchPath(ctx, conv, storage.MainBranch)
		if err != nil {
			t.Fatal(err)
		}
		if len(path) < len(committed) {
			t.Fatalf("kill %d: %d turns on the branch, but the binary reported %d", k, len(path), len(committed))
		}
		for i, key := range committed {
			if path[i].Key != key || path[i].Index != i || path[i].Status != trace.StatusCompleted {
				t.Fatalf("kill %d: reported turn %s is not at %d on the branch (%+v)", k, key, i, path[i])
			}
		}
		committed = committed[:0]
		for _, n := range path {
			committed = append(committed, n.Key) // a commit may land just before the kill, unreported
		}
		pending, err := s.PendingTurns(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(pending) > 1 {
			t.Fatalf("kill %d: %d turns not ended", k, len(pending))
		}
		if len(pending) == 1 {
			p := pending[0]
			if p.Status != trace.StatusInterrupted || !p.Resumable() || p.Index != len(path) {
				t.Fatalf("kill %d: the killed turn is %s (resumable %v, index %d of %d)", k, p.Status, p.Resumable(), p.Index, len(path))
			}
			if k%2 == 0 {
				answered := 0
				trace.WalkCalls(p.Calls, func(c *trace.Call, _ int) {
					if c.Error == "" && len(c.Children) == 0 {
						answered++
					}
				})
				before := asked.Load()
				code, _, errs := sb(t, env, append([]string{"session", "retry", p.Key}, model...)...)
				if code != 0 {
					t.Fatalf("kill %d: resume: %d %s", k, code, errs)
				}
				if paid := asked.Load() - before; paid != int64(2-answered) {
					t.Fatalf("kill %d: the resume paid %d calls; %d of 2 were answered before the kill", k, paid, answered)
				}
				committed = append(committed, p.Key)
				resumed++
			} else {
				superseded++
			}
		}
		s.Close()
	}
	t.Logf("%d kills: %d turns on the branch, %d killed turns resumed, %d superseded", kills(12), len(committed), resumed, superseded)
}

// v1Save writes a dspy-session version-1 save file of n turns.
func v1Save(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"version": 1, "turns": [`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"index": %d, "inputs": {"question": "Q%d"}, "outputs": {"answer": "A%d"}, "history_snapshot": {"messages": []}, "score": null}`, i, i, i)
	}
	b.WriteString(`], "initial_history": null, "l2_memory": "", "node_states": {}}`)
	p := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestKillDuringImport kills `import` of a 3,000-turn file with SIGKILL at random moments
// (spread over how long a whole import takes): every conversation in the database has
// all 3,000 turns; a killed import leaves none.
func TestKillDuringImport(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	t.Parallel()
	const n = 3000
	env := cliEnv(t)
	db := filepath.Join(t.TempDir(), "import.db")
	file := v1Save(t, n)
	start := time.Now()
	if code, _, errs := sb(t, env, "import", file, "--db", db); code != 0 {
		t.Fatalf("import: %d %s", code, errs)
	}
	whole := time.Since(start)
	done, killed := 1, 0
	rng := rand.New(rand.NewPCG(11, uint64(time.Now().UnixNano())))
	for k := 0; k < kills(12); k++ {
		cmd := exec.Command(binary(t), "import", file, "--db", db)
		cmd.Env = env
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.Int64N(int64(whole) + 1)))
		cmd.Process.Signal(syscall.SIGKILL)
		exited := cmd.Wait() == nil
		if !exited {
			killed++
		}
		s := openDB(t, db)
		ctx := context.Background()
		if err := s.IntegrityCheck(ctx); err != nil {
			t.Fatalf("kill %d: %v", k, err)
		}
		list, err := s.ListConversations(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// A kill can land after the import committed but before the process exited:
		// then the conversation is whole although the process died. Each run adds
		// exactly one whole conversation or none, and one that exited adds one.
		switch {
		case len(list) == done+1:
			done++
		case len(list) != done || exited:
			t.Fatalf("kill %d: %d conversations after %d whole imports (this run exited cleanly: %v)", k, len(list), done, exited)
		}
		for _, c := range list {
			if c.Turns != n || c.MainLength != n {
				t.Fatalf("kill %d: conversation %s has %d turns (%d on main), want %d", k, c.ID, c.Turns, c.MainLength, n)
			}
		}
		s.Close()
	}
	t.Logf("%d kills over a %s import: %d processes killed, %d imports whole", kills(12), whole.Round(time.Millisecond), killed, done-1)
}

// TestSignalsLeaveTheTurnResumable: SIGINT, SIGTERM and SIGHUP during a turn leave it
// interrupted, resumable; the binary says so and exits 128 + the signal's number.
func TestSignalsLeaveTheTurnResumable(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	t.Parallel()
	cases := []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}, {syscall.SIGHUP, 129}}
	for _, tc := range cases {
		t.Run(tc.sig.String(), func(t *testing.T) {
			env := cliEnv(t)
			db := filepath.Join(t.TempDir(), "sig.db")
			inFlight := make(chan struct{}, 1)
			srv, _ := modelServer(t, func(n int64, r *http.Request) {
				if n == 2 { // respond: hang until the client goes away
					inFlight <- struct{}{}
					<-r.Context().Done()
				}
			})
			cmd := exec.Command(binary(t), "run", "--agent", "SupportAgent", "--input", "question=hi", "--json",
				"--base-url", srv.URL+"/v1", "--model", "m", "--db", db)
			cmd.Env = env
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-inFlight:
			case <-time.After(waitLimit):
				cmd.Process.Kill()
				t.Fatal("the second call never came")
			}
			cmd.Process.Signal(tc.sig)
			cmd.Wait()
			if got := cmd.ProcessState.ExitCode(); got != tc.code || !strings.Contains(stderr.String(), "left resumable as turn ") {
				t.Fatalf("exit %d (want %d)\n%s", got, tc.code, stderr.String())
			}
			var tl turnLine
			if json.Unmarshal([]byte(stdout.String()), &tl) != nil || tl.Status != trace.StatusInterrupted {
				t.Errorf("json line: %q", stdout.String())
			}
			s := openDB(t, db)
			ps, err := s.PendingTurns(context.Background())
			if err != nil || len(ps) != 1 || !ps[0].Resumable() || ps[0].Owner != nil || len(ps[0].Calls) != 2 {
				t.Fatalf("pending: %v %+v", err, ps)
			}
		})
	}
}

// TestTwoProcessesOneBranchBinary: while one process runs a turn on a branch, a second
// is refused with "branch busy" naming the first's pid; killed, the first no longer
// holds the branch.
func TestTwoProcessesOneBranchBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	t.Parallel()
	env := cliEnv(t)
	db := filepath.Join(t.TempDir(), "two.db")
	var hang atomic.Bool
	inFlight := make(chan struct{}, 1)
	srv, _ := modelServer(t, func(_ int64, r *http.Request) {
		if hang.CompareAndSwap(true, false) {
			inFlight <- struct{}{}
			<-r.Context().Done()
		}
	})
	model := []string{"--base-url", srv.URL + "/v1", "--model", "m", "--db", db}
	code, out, errs := sb(t, env, append([]string{"run", "--agent", "SupportAgent", "--input", "question=start", "--json"}, model...)...)
	var first turnLine
	if code != 0 || json.Unmarshal([]byte(out), &first) != nil {
		t.Fatalf("first run: %d %s %s", code, out, errs)
	}
	hang.Store(true)
	a := exec.Command(binary(t), append([]string{"run", "--conversation", first.Conversation, "--input", "question=a"}, model...)...)
	a.Env = env
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer a.Process.Kill()
	select {
	case <-inFlight:
	case <-time.After(waitLimit):
		t.Fatal("the first process never asked the model")
	}
	code, _, errs = sb(t, env, append([]string{"run", "--conversation", first.Conversation, "--input", "question=b"}, model...)...)
	want := fmt.Sprintf(`branch "main" is busy: turn 1 (id 2) is running in process %d on `, a.Process.Pid)
	if code != 1 || !strings.Contains(errs, want) {
		t.Fatalf("second process: exit %d\n%s\nwant %q", code, errs, want)
	}
	a.Process.Signal(syscall.SIGKILL)
	a.Wait()
	code, _, errs = sb(t, env, append([]string{"run", "--conversation", first.Conversation, "--input", "question=b"}, model...)...)
	if code != 0 || !strings.Contains(errs, "note: turn 2 on main") {
		t.Fatalf("after the first was killed: exit %d\n%s", code, errs)
	}
}
