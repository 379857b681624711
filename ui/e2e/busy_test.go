package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestTurnInFlightElsewhereBinary: while another process runs a turn on a branch, the
// pending list shows the calls it has made with their requests whole (as the model got
// them, though its journal holds only what each adds to the turn before's), `session
// show` lists it, and undo is refused, by `session undo` and by the workbench, which
// says which turn and process hold the branch; once that process is gone, undo works.
func TestTurnInFlightElsewhereBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	t.Parallel()
	ws := newWorkspace(t)
	var mu sync.Mutex
	var bodies [][]byte
	var hangAt atomic.Int64 // the request that hangs until its client gives up
	inFlight := make(chan struct{}, 1)
	srv, _ := modelServer(t, func(n int64, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		if n == hangAt.Load() {
			inFlight <- struct{}{}
			<-r.Context().Done()
		}
	})
	env := append(ws.env(), "OPENAI_API_KEY=test")
	model := []string{"--base-url", srv.URL + "/v1", "--model", "m", "--db", ws.db, "--config", ws.config}
	// A conversation long enough that a new process journals its calls against the
	// stored turn before's (from 64 messages and history entries a call).
	script := filepath.Join(ws.dir, "turns.jsonl")
	var lines strings.Builder
	for i := range 35 {
		fmt.Fprintf(&lines, "{\"question\": \"question %d: why does my login fail?\"}\n", i)
	}
	if err := os.WriteFile(script, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := sb(t, env, append([]string{"run", "--agent", "SupportAgent", "--title", "busy", "--script", script, "--json"}, model...)...)
	if code != 0 {
		t.Fatalf("run --script: %d %s %s", code, out, errs)
	}
	var first turnLine
	if err := json.NewDecoder(strings.NewReader(out)).Decode(&first); err != nil {
		t.Fatalf("run --script --json: %v\n%s", err, out)
	}
	conv := first.Conversation

	// Another process's turn, in flight at its second request.
	mu.Lock()
	sent := len(bodies) // its first request is bodies[sent]
	mu.Unlock()
	hangAt.Store(int64(sent) + 2)
	a := exec.Command(binary(t), append([]string{"run", "--conversation", conv, "--input", "question=and now?"}, model...)...)
	a.Env = env
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		a.Process.Signal(syscall.SIGKILL)
		a.Wait()
	}()
	select {
	case <-inFlight:
	case <-time.After(waitLimit):
		t.Fatal("the other process never asked the model twice")
	}
	// Its first call, from the pending list: the request the model got, message for message.
	code, out, errs = sb(t, env, "session", "pending", "--db", ws.db, "--json")
	var pending []struct {
		Key   string `json:"key"`
		Index int    `json:"index"`
		Calls []struct {
			Messages []struct{ Role, Content string } `json:"messages"`
		} `json:"calls"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &pending) != nil || len(pending) != 1 || pending[0].Index != 35 || len(pending[0].Calls) != 1 {
		t.Fatalf("session pending: %d %s %s", code, out, errs)
	}
	turn := pending[0].Key
	busy := fmt.Sprintf(`branch "main" is busy: turn 35 (id %s) is running in process %d on `, turn, a.Process.Pid)
	var req struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	mu.Lock()
	err := json.Unmarshal(bodies[sent], &req)
	mu.Unlock()
	if err != nil || len(req.Messages) < 64 {
		t.Fatalf("the first request of the turn in flight: %d messages, %v; want 64 or more (journaled against the turn before's)", len(req.Messages), err)
	}
	got, want := pending[0].Calls[0].Messages, req.Messages
	if len(got) != len(want) {
		t.Fatalf("session pending: the call's request has %d messages, the model got %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("session pending: message %d of the call's request is %+v, the model got %+v", i, got[i], want[i])
		}
	}
	code, out, errs = sb(t, env, "session", "show", conv, "--db", ws.db, "--json")
	if code != 0 || !strings.Contains(out, `"key": "`+turn+`"`) {
		t.Errorf("session show: %d, the turn in flight not among its kept turns\n%s\n%s", code, out, errs)
	}

	// Undo is refused, from the command line and from the workbench.
	code, _, errs = sb(t, env, "session", "undo", conv, "--db", ws.db)
	if code == 0 || !strings.Contains(errs, busy) || !strings.Contains(errs, "nothing was undone") {
		t.Errorf("session undo: exit %d\n%s\nwant %q", code, errs, busy)
	}
	tm := startTerm(t, ws, 160, 45)
	tm.waitFor("busy")
	tm.press("Enter")
	tm.waitFor("opened busy")
	tm.press("Escape", "u")
	tm.waitFor("undo on main: storage: " + busy)
	tm.resize(80, 24)
	tm.waitFor("undo on main: storage: branch")

	a.Process.Signal(syscall.SIGKILL)
	a.Wait()
	tm.resize(160, 45)
	tm.press("u")
	tm.waitFor("undid 1 turn on main")
}
