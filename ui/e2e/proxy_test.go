package e2e

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/llm"
	"github.com/sessionbench/sessionbench/llm/proxy"
	"github.com/sessionbench/sessionbench/storage"
)

// proxyProc is the real binary running `sessionbench proxy`, its log read line by line.
type proxyProc struct {
	cmd   *exec.Cmd
	url   string
	mu    sync.Mutex
	lines []string
	more  chan struct{}
}

func startProxyBinary(t *testing.T, ws *workspace, args ...string) *proxyProc {
	t.Helper()
	p := &proxyProc{more: make(chan struct{}, 64)}
	p.cmd = exec.Command(binary(t), append([]string{"proxy", "--port", "0", "--db", ws.db}, args...)...)
	p.cmd.Env = ws.env()
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cmd.Process.Kill(); p.cmd.Wait() })
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
			p.more <- struct{}{}
		}
	}()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			urls <- sc.Text()
		}
		io.Copy(io.Discard, stdout)
	}()
	select {
	case p.url = <-urls:
	case <-time.After(waitLimit):
		t.Fatalf("the proxy printed no URL; its log:\n%s", p.log())
	}
	return p
}

func (p *proxyProc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// waitLog waits until n log lines contain s.
func (p *proxyProc) waitLog(t *testing.T, s string, n int) {
	t.Helper()
	deadline := time.After(waitLimit)
	for strings.Count(p.log(), s) < n {
		select {
		case <-p.more:
		case <-deadline:
			t.Fatalf("waiting for %d log lines with %q; the log:\n%s", n, s, p.log())
		}
	}
}

// TestProxyKillLosesNoFinishedCall: calls that finished before a kill -9 of the proxy
// are in the database (durable the moment they were logged); the call in flight is not.
// The next proxy run commits the turn the killed one left open.
func TestProxyKillLosesNoFinishedCall(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end tests are skipped under -short")
	}
	ws := newWorkspace(t)
	demo := proxy.ModelServer(llm.NewDemo(llm.DemoOptions{}))
	arrived := make(chan struct{}, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Hang") != "" {
			io.Copy(io.Discard, r.Body) // a read body lets the server notice the proxy going away
			arrived <- struct{}{}
			<-r.Context().Done() // in flight until the proxy dies
			return
		}
		demo.ServeHTTP(w, r)
	}))
	defer up.Close()
	p := startProxyBinary(t, ws, "--base-url", up.URL, "--idle-gap", "1h")
	post := func(hang bool) error {
		req, _ := http.NewRequest(http.MethodPost, p.url+"/chat/completions",
			strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hello"}]}`))
		if hang {
			req.Header.Set("X-Hang", "1")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	for i := 0; i < 2; i++ {
		if err := post(false); err != nil {
			t.Fatal(err)
		}
	}
	p.waitLog(t, " 200 POST /v1/chat/completions", 2)
	go post(true) // its error is the proxy dying under it
	select {
	case <-arrived:
	case <-time.After(waitLimit):
		t.Fatal("the third call did not reach the upstream")
	}
	if err := p.cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()

	ctx := context.Background()
	s, err := storage.Open(ctx, ws.db)
	if err != nil {
		t.Fatal(err)
	}
	pending, err := s.PendingTurns(ctx)
	if err != nil || len(pending) != 1 || len(pending[0].Calls) != 2 {
		t.Fatalf("after kill -9: %d pending turns %v", len(pending), err)
	}
	conv := pending[0].ConvID
	s.Close()

	// The next run (its own conversation) commits what the killed one left open.
	p2 := startProxyBinary(t, ws, "--base-url", up.URL)
	if err := p2.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := p2.cmd.Wait(); err != nil {
		t.Fatalf("the second run: %v\n%s", err, p2.log())
	}
	s, err = storage.Open(ctx, ws.db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	turns, err := s.LoadBranch(ctx, conv, storage.MainBranch)
	if err != nil || len(turns) != 1 || len(turns[0].Calls) != 2 || turns[0].Calls[0].Error != "" {
		t.Fatalf("recovered: %d turns %v", len(turns), err)
	}
	if pending, _ := s.PendingTurns(ctx); len(pending) != 0 {
		t.Errorf("%d turns still pending", len(pending))
	}
}
