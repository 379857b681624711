package storage

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/trace"
)

// The crash and multi-process tests run this test binary again as a child process; the
// environment variable selects what the child does.
const childEnv = "SESSIONBENCH_STORAGE_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(childMain(mode))
	}
	os.Exit(m.Run())
}

func childMain(mode string) int {
	ctx := context.Background()
	s, err := Open(ctx, os.Getenv("SB_DB"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 1
	}
	defer s.Close()
	conv, branch := os.Getenv("SB_CONV"), os.Getenv("SB_BRANCH")
	switch mode {
	case "crash":
		err = crashChild(ctx, s, conv, branch)
	case "writer":
		n, _ := strconv.Atoi(os.Getenv("SB_TURNS"))
		err = writerChild(ctx, s, conv, branch, n)
	case "hold":
		// begin a turn and keep it running until killed
		var key string
		if key, err = s.Sink(conv, branch).BeginTurn(ctx, nil); err == nil {
			fmt.Println("began", key)
			select {}
		}
	case "record":
		// record a whole turn's calls, then wait to be killed before committing it
		var key string
		if key, err = recordChild(ctx, s, conv, branch); err == nil {
			fmt.Println("recorded", key)
			select {}
		}
	case "commit":
		// record a whole turn's calls, commit it once SB_GO exists, then wait to be killed
		var key string
		if key, err = commitChild(ctx, s, conv, branch, os.Getenv("SB_GO")); err == nil {
			fmt.Println("committed", key)
			select {}
		}
	case "begin":
		if key, err := s.Sink(conv, branch).BeginTurn(ctx, nil); err == nil {
			fmt.Println("began", key)
		} else {
			fmt.Println("refused:", err)
		}
		return 0
	default:
		err = fmt.Errorf("unknown child mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// fixtureLM answers like the recorded fixtures and counts what it was asked.
type fixtureLM struct {
	mu   sync.Mutex
	paid int
}

func (f *fixtureLM) Name() string { return "fixture" }
func (f *fixtureLM) Call(_ context.Context, req lm.Request) (lm.Response, error) {
	f.mu.Lock()
	f.paid++
	f.mu.Unlock()
	return lm.Response{Text: "answer for " + req.Meta.Path}, nil
}

// crashChild resumes its branch's pending turn if there is one, then writes turns until it
// is killed, reporting on stdout each call and turn the moment its write returned.
func crashChild(ctx context.Context, s *Store, conv, branch string) error {
	out := os.Stdout // unbuffered: a reported line is a returned write
	sink := s.Sink(conv, branch)
	pending, err := s.PendingTurns(ctx)
	if err != nil {
		return err
	}
	var resume string
	for _, p := range pending {
		if p.ConvID == conv && p.Branch == branch && !p.Stale {
			resume = p.Key
			if err := sink.Resume(ctx, p.Key); err != nil {
				return err
			}
		}
	}
	fmt.Fprintln(out, "ready")
	for {
		b, err := s.Branch(ctx, conv, branch)
		if err != nil {
			return err
		}
		tr := fixtureTurn(b.Length, 8, true)
		key, err := sink.BeginTurn(ctx, tr.Inputs)
		if err != nil {
			return err
		}
		paidLM := &fixtureLM{}
		var model lm.LM = paidLM
		if resume != "" {
			if key != resume {
				return fmt.Errorf("resumed turn %s but BeginTurn gave %s", resume, key)
			}
			model = s.ReplayLM(key, paidLM)
		}
		var rec func(parent string, c *trace.Call) error
		rec = func(parent string, c *trace.Call) error {
			for _, ch := range c.Children {
				if err := rec(c.ID, ch); err != nil {
					return err
				}
			}
			resp, err := model.Call(ctx, lm.Request{Messages: c.Messages, Params: c.Params, Meta: lm.Meta{Path: c.Path}})
			if err != nil {
				return err
			}
			c.Completion = resp.Text
			if err := sink.RecordCall(ctx, key, parent, c); err != nil {
				return err
			}
			fmt.Fprintf(out, "R %s %s\n", key, c.ID)
			return nil
		}
		for _, c := range tr.Calls {
			if err := rec("", c); err != nil {
				return err
			}
		}
		if err := sink.CommitTurn(ctx, key, tr); err != nil {
			return err
		}
		if resume != "" {
			fmt.Fprintf(out, "P %s %d %d\n", key, Replayed(model), paidLM.paid)
			resume = ""
		}
		fmt.Fprintf(out, "C %s %d\n", key, tr.Index)
	}
}

func writerChild(ctx context.Context, s *Store, conv, branch string, n int) error {
	sink := s.Sink(conv, branch)
	for i := 0; i < n; i++ {
		b, err := s.Branch(ctx, conv, branch)
		if err != nil {
			return err
		}
		if _, err := runTurn(ctx, sink, fixtureTurn(b.Length, 4, i%3 == 0)); err != nil {
			return fmt.Errorf("turn %d: %w", i, err)
		}
		if _, err := s.ListConversations(ctx); err != nil {
			return fmt.Errorf("list: %w", err)
		}
	}
	return nil
}

func startChild(t *testing.T, mode, db, conv, branch string, extra ...string) (*exec.Cmd, *bufio.Scanner, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, "SB_DB="+db, "SB_CONV="+conv, "SB_BRANCH="+branch)
	cmd.Env = append(cmd.Env, extra...)
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewScanner(stdout), stderr
}

// TestCrashRecovery kills a writing child process with SIGKILL at random moments. After
// every kill the file passes integrity_check, every turn the child saw committed is on the
// branch in order, every call it saw recorded is stored, and the in-flight turn (if any)
// is resumed by the next child, which replays the calls already answered instead of paying
// for them again. SB_CRASH_KILLS raises the number of kills (default 50).
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	kills := 50
	if n, err := strconv.Atoi(os.Getenv("SB_CRASH_KILLS")); err == nil && n > 0 {
		kills = n
	}
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "crash.db")
	s, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustConv(t, s, "crash")

	committed := map[string]int{} // turn key -> index, as reported by children
	resumedChecked, withPending, ended := 0, 0, 0
	var expectResume *PendingTurn
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	for k := 0; k < kills; k++ {
		cmd, sc, stderr := startChild(t, "crash", db, "crash", MainBranch)
		lines := make(chan string, 1024)
		go func() {
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		if l, ok := <-lines; !ok || l != "ready" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child %d did not start: %q %s", k, l, stderr)
		}
		var early []string // lines read before the kill
		if k == kills-1 && len(committed) == 0 {
			// On a slow machine (-race, a loaded CI) every kill so far came before the
			// child's first commit: the last one waits for it.
			early = untilCommit(lines, time.Minute)
		} else {
			time.Sleep(time.Duration(rng.IntN(60)) * time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		recorded := map[string][]string{}
		next := func() (string, bool) {
			if len(early) > 0 {
				l := early[0]
				early = early[1:]
				return l, true
			}
			l, ok := <-lines
			return l, ok
		}
		for l, ok := next(); ok; l, ok = next() {
			f := strings.Fields(l)
			switch f[0] {
			case "C":
				idx, _ := strconv.Atoi(f[2])
				committed[f[1]] = idx
			case "R":
				recorded[f[1]] = append(recorded[f[1]], f[2])
			case "P":
				replayed, _ := strconv.Atoi(f[2])
				paid, _ := strconv.Atoi(f[3])
				if expectResume == nil || f[1] != expectResume.Key {
					t.Fatalf("child %d resumed %s, expected %v", k, f[1], expectResume)
				}
				var want int
				trace.WalkCalls(expectResume.Calls, func(*trace.Call, int) { want++ })
				if replayed != want || replayed+paid != 3 {
					t.Fatalf("resumed turn %s: %d replayed, %d paid; want %d replayed of 3", f[1], replayed, paid, want)
				}
				resumedChecked++
			}
		}
		if strings.TrimSpace(stderr.String()) != "" {
			t.Fatalf("child %d failed: %s", k, stderr)
		}

		if endedJournal(t, s, "crash", MainBranch) {
			ended++ // killed between a turn's end record and its transaction (commitlater.go)
		}
		if err := s.IntegrityCheck(ctx); err != nil {
			t.Fatalf("after kill %d: %v", k, err)
		}
		path, err := s.BranchPath(ctx, "crash", MainBranch)
		if err != nil {
			t.Fatal(err)
		}
		onPath := map[string]int{}
		for i, n := range path {
			if n.Index != i || n.Status != trace.StatusCompleted {
				t.Fatalf("after kill %d: turn %s at position %d has index %d status %s", k, n.Key, i, n.Index, n.Status)
			}
			onPath[n.Key] = n.Index
		}
		for key, idx := range committed {
			if got, ok := onPath[key]; !ok || got != idx {
				t.Fatalf("after kill %d: committed turn %s (index %d) missing from the branch", k, key, idx)
			}
		}
		pending, err := s.PendingTurns(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(pending) > 1 {
			t.Fatalf("after kill %d: %d pending turns, want at most 1", k, len(pending))
		}
		expectResume = nil
		if len(pending) == 1 {
			p := pending[0]
			if p.Stale || p.Branch != MainBranch || p.Index != len(path) {
				t.Fatalf("after kill %d: pending turn not resumable: %+v", k, p)
			}
			stored := map[string]bool{}
			trace.WalkCalls(p.Calls, func(c *trace.Call, _ int) { stored[c.ID] = true })
			for _, id := range recorded[p.Key] {
				if !stored[id] {
					t.Fatalf("after kill %d: call %s reported recorded but not stored", k, id)
				}
			}
			expectResume = p
			withPending++
		}
	}
	if len(committed) == 0 {
		t.Fatal("no child ever committed a turn")
	}
	t.Logf("%d kills, %d turns committed (%d left to the next reader by their end records), %d kills left a pending turn, %d resumes verified",
		kills, len(committed), ended, withPending, resumedChecked)
}

// endedJournal reports whether branch's journal holds a turn's end record: a turn its
// process returned as committed and died before its transaction ran.
func endedJournal(t *testing.T, s *Store, conv, branch string) bool {
	t.Helper()
	var id int64
	if err := s.r.QueryRowContext(context.Background(), "SELECT id FROM branches WHERE conv_id = ? AND name = ?", conv, branch).Scan(&id); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(s.runPath(id))
	if err != nil {
		return false
	}
	defer f.Close()
	h, _, err := readJournal(f)
	return err == nil && h != nil && h.end != nil
}

// untilCommit reads a child's lines until it reports a commit ("C ..."), it ends, or
// limit passes, and returns what it read.
func untilCommit(lines <-chan string, limit time.Duration) []string {
	var read []string
	deadline := time.After(limit)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return read
			}
			read = append(read, l)
			if strings.HasPrefix(l, "C ") {
				return read
			}
		case <-deadline:
			return read
		}
	}
}

// TestTwoProcessesWrite runs two writer processes on one database at once: both finish
// without an error (no SQLITE_BUSY reaches them) and every turn is stored.
func TestTwoProcessesWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "two.db")
	s, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustConv(t, s, "A")
	mustConv(t, s, "shared")
	if _, err := s.CreateBranch(ctx, "shared", "b"); err != nil {
		t.Fatal(err)
	}
	const n = 60
	type job struct{ conv, branch string }
	jobs := []job{{"A", MainBranch}, {"shared", MainBranch}, {"shared", "b"}}
	var cmds []*exec.Cmd
	var errs []*strings.Builder
	for _, j := range jobs {
		cmd, _, stderr := startChild(t, "writer", db, j.conv, j.branch, "SB_TURNS="+strconv.Itoa(n))
		cmds, errs = append(cmds, cmd), append(errs, stderr)
	}
	// The parent writes too, to a conversation of its own.
	mustConv(t, s, "parent")
	appendN(t, s, "parent", MainBranch, n)
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("writer %v: %v: %s", jobs[i], err, errs[i])
		}
	}
	for _, j := range append(jobs, job{"parent", MainBranch}) {
		turns, err := s.LoadBranch(ctx, j.conv, j.branch)
		if err != nil {
			t.Fatal(err)
		}
		if len(turns) != n {
			t.Errorf("%v: %d turns, want %d", j, len(turns), n)
		}
		for i, tr := range turns {
			if tr.Index != i || len(tr.Calls) != 2 {
				t.Fatalf("%v turn %d: index %d, %d calls", j, i, tr.Index, len(tr.Calls))
			}
		}
	}
	if err := s.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestTwoProcessesOneBranch: while one process runs a turn on a branch, a second process
// is refused with the first one's pid ("branch busy"); once the first is killed, the
// second begins at once (same host: the dead pid is seen without waiting for the lease)
// and the killed turn is kept, superseded.
func TestTwoProcessesOneBranch(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "one.db")
	s, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustConv(t, s, "S")
	holder, out, stderr := startChild(t, "hold", db, "S", MainBranch)
	defer holder.Process.Kill()
	if !out.Scan() {
		t.Fatalf("holder did not begin: %s", stderr)
	}
	held := strings.TrimPrefix(out.Text(), "began ")
	begin := func() string {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=begin", "SB_DB="+db, "SB_CONV=S", "SB_BRANCH="+MainBranch)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("begin child: %v: %s", err, b)
		}
		return strings.TrimSpace(string(b))
	}
	want := fmt.Sprintf(`(id %s) is running in process %d on `, held, holder.Process.Pid)
	if got := begin(); !strings.HasPrefix(got, `refused: storage: branch "main" is busy: turn `) || !strings.Contains(got, want) {
		t.Fatalf("second process: %q\nwant prefix %q", got, want)
	}
	if err := holder.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	holder.Wait()
	got := begin()
	if !strings.HasPrefix(got, "began ") {
		t.Fatalf("second process after the first was killed: %q", got)
	}
	kept, err := s.KeptTurns(ctx, "S", MainBranch)
	if err != nil || len(kept) != 2 || kept[0].Key != held || kept[0].Status != trace.StatusCancelled || kept[0].Error != "superseded by a new turn" {
		t.Fatalf("kept turns: %v %+v", err, kept)
	}
}
