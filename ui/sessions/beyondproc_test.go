package sessions

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/storage"
)

// The environment that makes TestBeyondModelProcess the child process of
// BenchmarkBeyondModel's run-process and typed-process modes: the database, the
// conversation and how the Send is readied.
const (
	beyondDBEnv   = "SESSIONBENCH_BEYOND_DB"
	beyondConvEnv = "SESSIONBENCH_BEYOND_CONV"
	beyondModeEnv = "SESSIONBENCH_BEYOND_MODE" // run or typed
)

// beyondInProcesses is BenchmarkBeyondModel's run-process and typed-process modes: each
// op starts this test binary again (TestBeyondModelProcess) for the first Send of a new
// process on conversation conv of the database at path, readied as mode (run or typed)
// says, and reports what the child measured.
func beyondInProcesses(b *testing.B, path, conv, mode string) {
	var beyond, pre, post, cpu, whole time.Duration
	child := func() []byte {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBeyondModelProcess$", "-test.v")
		cmd.Env = append(os.Environ(), beyondDBEnv+"="+path, beyondConvEnv+"="+conv, beyondModeEnv+"="+mode)
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("the child process: %v\n%s", err, out)
		}
		return out
	}
	// One untimed, so that the branch's last turn is one this program ran, as after any
	// turn of `run` or the workbench: it left what the next turn's first call sends
	// (storage.FirstCall; a fixture's turns are not sent).
	child()
	n := 0
	for b.Loop() {
		out := child()
		var got [5]int64
		found := false
		for _, l := range strings.Split(string(out), "\n") {
			if rest, ok := strings.CutPrefix(l, "beyond-process "); ok {
				if _, err := fmt.Sscan(rest, &got[0], &got[1], &got[2], &got[3], &got[4]); err != nil {
					b.Fatalf("the child's figures %q: %v", l, err)
				}
				found = true
			}
		}
		if !found {
			b.Fatalf("the child reported nothing:\n%s", out)
		}
		beyond, pre, post, cpu = beyond+time.Duration(got[0]), pre+time.Duration(got[1]), post+time.Duration(got[2]), cpu+time.Duration(got[3])
		whole += time.Duration(got[4])
		n++
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }
	b.ReportMetric(ms(beyond), "beyond-ms/op")
	b.ReportMetric(ms(cpu), "cpu-ms/op")
	b.ReportMetric(ms(pre), "before-ms/op")
	b.ReportMetric(ms(post), "after-ms/op")
	b.ReportMetric(ms(whole), "whole-ms/op")
}

// TestBeyondModelProcess is the child process of BenchmarkBeyondModel's run-process and
// typed-process modes, skipped otherwise: the first Send of a new process as
// `sessionbench run` makes it (see the benchmark's run mode), or as the workbench does
// once the user typed (Prefetch first), with a model answering after 30 ms. It prints the
// Send's time beyond the model, before its first call and after its last, the
// process's CPU time from the Send to its turn's transaction, and the whole time from
// opening the store to the Send's end beyond the model (what the user of `run` waits
// for: the setup's reads run beside the restore, so a shorter setup leaves the Send
// more of the restore to wait for), in nanoseconds.
func TestBeyondModelProcess(t *testing.T) {
	path, conv := os.Getenv(beyondDBEnv), os.Getenv(beyondConvEnv)
	if path == "" || conv == "" {
		t.Skip("the child process of BenchmarkBeyondModel run-process and typed-process")
	}
	ctx := context.Background()
	opened := time.Now()
	open, err := storage.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	model := &slowLM{inner: instantLM{}, latency: 30 * time.Millisecond}
	a := New(open, model)
	a.SetAgentDirs()
	restored := func() {}
	if os.Getenv(beyondModeEnv) == "typed" {
		a.Prefetch(ctx, conv, storage.MainBranch)
	} else {
		restored = a.RestoreAhead(ctx, conv, storage.MainBranch, true)
		if err := runSetup(ctx, a, open, conv); err != nil {
			t.Fatal(err)
		}
		a.CallAhead(ctx, conv, storage.MainBranch, question("Why was I charged twice?"))
	}
	c0, t0 := cpuTime(), time.Now()
	if _, err := a.Send(ctx, SendRequest{Conv: conv, Branch: storage.MainBranch, Inputs: question("Why was I charged twice?")}, nil); err != nil {
		t.Fatal(err)
	}
	end := time.Now()
	restored()
	a.KeepFirstCalls(ctx) // as run does before it ends
	if err := open.Settle(); err != nil {
		t.Fatal(err)
	}
	cpu := cpuTime() - c0
	beyond := end.Sub(t0) - time.Duration(model.spent.Load())
	whole := end.Sub(opened) - time.Duration(model.spent.Load())
	fmt.Printf("beyond-process %d %d %d %d %d\n", beyond, model.first.Load()-t0.UnixNano(), end.UnixNano()-model.last.Load(), cpu, whole)
}
