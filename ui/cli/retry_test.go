package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/storage/capture"
)

// failures are the ways a model call goes wrong that a turn must survive as a record.
var failures = []struct {
	name string
	fail func(w http.ResponseWriter, r *http.Request) (string, bool)
	msg  string // in the kept turn's error
}{
	{"parse failure", func(http.ResponseWriter, *http.Request) (string, bool) { return "no fields here, sorry", true },
		"failed to parse"},
	{"5xx", func(w http.ResponseWriter, _ *http.Request) (string, bool) {
		w.Header().Set("Retry-After-Ms", "1") // the client retries a 5xx; at once, please
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprint(w, `{"error":{"message":"bad gateway upstream","type":"server_error"}}`)
		return "", false
	}, "bad gateway upstream"},
	{"cut stream", func(w http.ResponseWriter, _ *http.Request) (string, bool) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"[[ ## reply ## ]]\\nTry a\"}}]}\n\n")
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close() // the connection dies mid-answer
		}
		return "", false
	}, ""},
}

// TestRetryFromTheFailure: a turn whose second call fails (every way above) is kept
// with both calls; 'session show' marks it; 'session retry' re-runs it against a healthy
// server, which is asked only for the failed call (the answered one is replayed from
// storage), and the retried turn joins the branch while the failed one stays beside it.
func TestRetryFromTheFailure(t *testing.T) {
	for _, tc := range failures {
		t.Run(tc.name, func(t *testing.T) {
			db := runIsolated(t)
			bad := chatServer(t, func(n int64, w http.ResponseWriter, r *http.Request) (string, bool) {
				if n == 1 {
					return supportAnswer, true // classify answers
				}
				return tc.fail(w, r) // respond fails
			})
			code, out, errs := runMain(context.Background(), "run", "--agent", "SupportAgent", "--input", "question=I can't log in",
				"--base-url", bad.URL+"/v1", "--model", "m", "--json", "--db", db)
			var failed runTurnJSON
			if code != 1 || json.Unmarshal([]byte(out), &failed) != nil || failed.Status != trace.StatusFailed ||
				failed.FailedCall != "c2 respond" || !strings.Contains(failed.Error, tc.msg) || failed.Calls != 2 {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
			}
			s := openStore(t, db)
			ft, err := s.LoadTurn(context.Background(), failed.Turn)
			if err != nil || ft.Status != trace.StatusFailed || len(ft.Calls) != 2 || ft.Calls[0].Error != "" {
				t.Fatalf("kept turn: %v %+v", err, ft)
			}
			respond := ft.Calls[1]
			if respond.Error == "" || respond.Messages.Len() < 2 || len(respond.Tries) == 0 || respond.Path != "respond" {
				t.Fatalf("failing call lost its request, attempts or error: %+v", respond)
			}
			if tc.name == "cut stream" && !strings.Contains(respond.Completion, "Try a") {
				t.Errorf("cut stream: partial completion %q not kept", respond.Completion)
			}

			code, out, _ = runMain(context.Background(), "session", "show", failed.Conversation, "--db", db)
			for _, want := range []string{"kept beside main", "✗   0  [" + failed.Turn + "] failed", "failed call: c2 respond",
				"retry: sessionbench session retry " + failed.Turn} {
				if code != 0 || !strings.Contains(out, want) {
					t.Errorf("session show lacks %q:\n%s", want, out)
				}
			}
			if _, out, _ = runMain(context.Background(), "session", "ls", "--db", db); !strings.Contains(out, "in_progress (1 failed)") {
				t.Errorf("session ls:\n%s", out)
			}

			var asked atomic.Int64
			good := chatServer(t, func(_ int64, _ http.ResponseWriter, r *http.Request) (string, bool) {
				asked.Add(1)
				return supportAnswer, true
			})
			code, out, errs = runMain(context.Background(), "session", "retry", failed.Turn, "--base-url", good.URL+"/v1", "--model", "m",
				"--json", "--db", db)
			var done runTurnJSON
			if code != 0 || json.Unmarshal([]byte(out), &done) != nil || done.Status != trace.StatusCompleted || done.RetryOf != failed.Turn ||
				done.Outputs.String("reply") != "Try a reset." {
				t.Fatalf("retry: exit %d\nstdout %s\nstderr %s", code, out, errs)
			}
			if asked.Load() != 1 {
				t.Errorf("the retry asked the model %d times; want 1 (classify is replayed from storage)", asked.Load())
			}
			turns, _ := s.LoadBranch(context.Background(), failed.Conversation, storage.MainBranch)
			if len(turns) != 1 || turns[0].Status != trace.StatusCompleted || len(turns[0].Calls) != 2 {
				t.Fatalf("branch after the retry: %+v", turns)
			}
			kept, _ := s.KeptTurns(context.Background(), failed.Conversation, storage.MainBranch)
			if len(kept) != 1 || kept[0].Key != failed.Turn || kept[0].Status != trace.StatusFailed {
				t.Errorf("the failed turn after its retry: %+v", kept)
			}
			// session show says where it was retried, and offers no retry of it any more.
			_, out, _ = runMain(context.Background(), "session", "show", failed.Conversation, "--db", db)
			if !strings.Contains(out, "retried as ["+done.Turn+"] on main") || strings.Contains(out, "retry: sessionbench session retry "+failed.Turn) {
				t.Errorf("session show after the retry:\n%s", out)
			}
			// Retrying it again: the branch has moved on; --branch retries on a fork.
			code, _, errs = runMain(context.Background(), "session", "retry", failed.Turn, "--base-url", good.URL+"/v1", "--model", "m", "--db", db)
			if code != 1 || !strings.Contains(errs, "moved on since turn") || !strings.Contains(errs, "session retry "+failed.Turn+" --branch NAME") {
				t.Errorf("second retry: exit %d %s", code, errs)
			}
			code, _, errs = runMain(context.Background(), "session", "retry", failed.Turn, "--branch", "again", "--base-url", good.URL+"/v1",
				"--model", "m", "--db", db)
			if b, err := s.Branch(context.Background(), failed.Conversation, "again"); code != 0 || err != nil || b.Length != 1 {
				t.Errorf("retry on a new branch: exit %d %s (%v)", code, errs, err)
			}
		})
	}
}

// TestRetryInterruptedAndEdited: an interrupted turn (SIGTERM) resumes in place; a
// failed turn retried with an edited input re-asks only what the edit changed.
func TestRetryInterruptedAndEdited(t *testing.T) {
	db := runIsolated(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	srv := chatServer(t, func(n int64, _ http.ResponseWriter, r *http.Request) (string, bool) {
		if n == 2 {
			cancel(Interrupt{Signal: syscall.SIGTERM})
			<-r.Context().Done()
			return "", false
		}
		return supportAnswer, true
	})
	code, _, errs := runMain(ctx, "run", "--agent", "SupportAgent", "--input", "question=hi", "--base-url", srv.URL+"/v1", "--model", "m", "--db", db)
	if code != 143 || !strings.Contains(errs, "left resumable as turn ") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	id := convIDOf(t, errs)
	s := openStore(t, db)
	ps, _ := s.PendingTurns(context.Background())
	if len(ps) != 1 || !ps[0].Resumable() {
		t.Fatalf("pending: %+v", ps)
	}
	if _, out, _ := runMain(context.Background(), "session", "pending", "--db", db); !strings.Contains(out, "interrupted, resumable: sessionbench session retry "+ps[0].Key) {
		t.Errorf("session pending:\n%s", out)
	}
	var asked atomic.Int64
	good := chatServer(t, func(int64, http.ResponseWriter, *http.Request) (string, bool) {
		asked.Add(1)
		return supportAnswer, true
	})
	code, _, errs = runMain(context.Background(), "session", "retry", ps[0].Key, "--base-url", good.URL+"/v1", "--model", "m", "--db", db)
	if code != 0 || asked.Load() != 1 {
		t.Fatalf("resume: exit %d, %d requests (want 1): %s", code, asked.Load(), errs)
	}
	b, _ := s.Branch(context.Background(), id, storage.MainBranch)
	if b.Tip != ps[0].Key {
		t.Errorf("an interrupted turn resumes in place: tip %s, want %s", b.Tip, ps[0].Key)
	}

	// Edit and retry: a parse failure on the second turn, retried with another question.
	failing := chatServer(t, func(n int64, _ http.ResponseWriter, _ *http.Request) (string, bool) {
		if n == 1 {
			return supportAnswer, true
		}
		return "garbage", true
	})
	code, out, errs := runMain(context.Background(), "run", "--conversation", id, "--input", "question=second", "--base-url", failing.URL+"/v1",
		"--model", "m", "--json", "--db", db)
	var failed runTurnJSON
	if code != 1 || json.Unmarshal([]byte(out), &failed) != nil {
		t.Fatalf("exit %d %s %s", code, out, errs)
	}
	asked.Store(0)
	code, out, errs = runMain(context.Background(), "session", "retry", failed.Turn, "--input", "question=edited", "--base-url", good.URL+"/v1",
		"--model", "m", "--json", "--db", db)
	var done runTurnJSON
	if code != 0 || json.Unmarshal([]byte(out), &done) != nil || done.Inputs.String("question") != "edited" || asked.Load() != 2 {
		t.Fatalf("edit and retry: exit %d, %d requests (want 2: both depend on the question)\n%s\n%s", code, asked.Load(), out, errs)
	}
	for _, bad := range [][]string{{"--input", "nope=1"}, {"--branch", " "}, {}} {
		args := append([]string{"session", "retry", failed.Turn, "--db", db}, bad...)
		if len(bad) == 0 {
			args = []string{"session", "retry", done.Turn, "--db", db}
		}
		if code, _, errs := runMain(context.Background(), args...); code == 0 {
			t.Errorf("%v accepted: %s", bad, errs)
		}
	}
}

// The retry hints of 'session show' and 'session pending' run as printed: they name the
// database given with --db (quoted for the shell when its path needs it), so a shell
// runs them as they are (here the demo model answers the retried turn).
func TestRetryHintRunsAsPrinted(t *testing.T) {
	runIsolated(t)
	db := filepath.Join(t.TempDir(), "my db's folder", "s.db")
	if err := os.MkdirAll(filepath.Dir(db), 0o755); err != nil {
		t.Fatal(err)
	}
	bad := chatServer(t, func(n int64, w http.ResponseWriter, r *http.Request) (string, bool) {
		if n == 1 {
			return supportAnswer, true
		}
		http.Error(w, "upstream is down", http.StatusBadRequest)
		return "", false
	})
	code, out, errs := runMain(context.Background(), "run", "--agent", "SupportAgent", "--input", "question=I can't log in",
		"--base-url", bad.URL+"/v1", "--model", "m", "--json", "--db", db)
	var failed runTurnJSON
	if code != 1 || json.Unmarshal([]byte(out), &failed) != nil || failed.Status != trace.StatusFailed {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	_, out, _ = runMain(context.Background(), "session", "show", failed.Conversation, "--db", db)
	hint := ""
	for _, l := range strings.Split(out, "\n") {
		if _, h, ok := strings.Cut(l, "retry: "); ok {
			hint = h
		}
	}
	if !strings.HasPrefix(hint, "sessionbench session retry "+failed.Turn+" --db ") {
		t.Fatalf("session show's retry hint %q lacks --db:\n%s", hint, out)
	}
	args := shellWords(t, strings.TrimPrefix(hint, "sessionbench "))
	code, _, errs = runMain(context.Background(), args...)
	if code != 0 {
		t.Fatalf("the hint %q, run as printed: exit %d\n%s", hint, code, errs)
	}
	turns, err := openStore(t, db).LoadBranch(context.Background(), failed.Conversation, storage.MainBranch)
	if err != nil || len(turns) != 1 || turns[0].Status != trace.StatusCompleted {
		t.Fatalf("after the hint ran: %d turns %v", len(turns), err)
	}
}

// shellWords splits a command line as a POSIX shell does.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	out, err := exec.Command("sh", "-c", `printf '%s\0' `+line).Output()
	if err != nil {
		t.Fatalf("sh: %v", err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// A turn the proxy recorded failing is kept like any other, but its program runs
// outside sessionbench: 'session show' offers no retry command that could not run.
func TestRecordedFailedTurnHasNoRetryHint(t *testing.T) {
	db := runIsolated(t)
	ctx := context.Background()
	st, err := storage.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := capture.New(ctx, capture.Options{Store: st, IdleGap: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	call := &trace.Call{Path: "chat", PredictorType: "LM", Messages: lm.MessagesOf([]lm.Message{{Role: "user", Content: "hi"}}),
		Started: at, Error: "HTTP 502: upstream is down", Recovered: trace.RecoveredNone}
	if err := rec.Begin("", "", at)(ctx, call); err != nil {
		t.Fatal(err)
	}
	conv, _ := rec.Conversation()
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st.Close()
	code, out, errs := runMain(ctx, "session", "show", conv, "--db", db)
	if code != 0 || !strings.Contains(out, "kept beside main") || !strings.Contains(out, "recorded by the proxy: not retried here") ||
		strings.Contains(out, "session retry") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}
