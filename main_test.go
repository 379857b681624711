package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/demo"
	"github.com/sessionbench/sessionbench/llm"
	"github.com/sessionbench/sessionbench/storage"
	"github.com/sessionbench/sessionbench/storage/otlp"
	"github.com/sessionbench/sessionbench/ui/sessions"
)

// TestWorkbenchFlagsAreCheckedFirst: wrong workbench flags are refused with a message
// naming the value and the choices, before a database is created or the terminal used.
func TestWorkbenchFlagsAreCheckedFirst(t *testing.T) {
	cfgDir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfgDir)
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	for _, k := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "SESSIONBENCH_MODEL"} {
		t.Setenv(k, "")
	}
	badConfig := filepath.Join(cfgDir, "bad.toml")
	if err := os.WriteFile(badConfig, []byte("[default]\nprovider = \"nobody\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "sub", "wb.db")
	cases := []struct {
		args   []string
		code   int
		stdout []string
		stderr string // the whole of stderr must contain it ("" = stderr empty)
	}{
		{[]string{"-h"}, 0, []string{"commands:", "session fork", "workbench flags", "-theme", "-model", "-db", "-config"}, ""},
		{[]string{"--help"}, 0, []string{"workbench flags"}, ""},
		{[]string{"--version"}, 0, []string{"sessionbench ", "revision "}, ""},
		{[]string{"version"}, 0, []string{"sessionbench ", "revision "}, ""},
		{[]string{"version", "extra"}, 2, nil, `unexpected argument "extra"`},
		{[]string{"--bogus"}, 2, nil, "sessionbench: flag provided but not defined: -bogus (see 'sessionbench --help')\n"},
		{[]string{"--theme"}, 2, nil, "sessionbench: flag needs an argument: -theme (see 'sessionbench --help')\n"},
		{[]string{"--db", db, "stray"}, 2, nil, `unexpected argument "stray"`},
		{[]string{"--db", db, "--theme", "nope"}, 2, nil, `unknown theme "nope" (available: dark, light, high-contrast`},
		{[]string{"--db", db, "--model", "nope"}, 2, nil, `model "nope" (set by --model): no provider for it`},
		{[]string{"--db", db, "--config", filepath.Join(cfgDir, "none.toml")}, 2, nil, "none.toml: no such file"},
		{[]string{"--db", db, "--config", badConfig}, 2, nil, badConfig + ":2: default.provider"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := run(context.Background(), c.args, &out, &errb)
		bad := code != c.code || (c.stderr == "" && errb.Len() > 0) || !strings.Contains(errb.String(), c.stderr)
		for _, s := range c.stdout {
			bad = bad || !strings.Contains(out.String(), s)
		}
		if c.code != 0 && out.Len() > 0 {
			bad = true
		}
		if bad {
			t.Errorf("%q: exit %d (want %d)\nstdout: %s\nstderr: %s", c.args, code, c.code, out.String(), errb.String())
		}
	}
	if _, err := os.Stat(filepath.Dir(db)); !os.IsNotExist(err) {
		t.Errorf("a refused flag left %s behind (stat: %v)", filepath.Dir(db), err)
	}
}

// TestWorkbenchExportsTurns: with --otlp-endpoint, every turn the workbench records is
// sent as a trace (a turn span and one span per call): sent, and retried after failing.
func TestWorkbenchExportsTurns(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	spans := 0
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &m); err != nil {
			t.Errorf("collector: %v", err)
		}
		mu.Lock()
		for _, rs := range m.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans += len(ss.Spans)
			}
		}
		mu.Unlock()
	}))
	defer rcv.Close()
	store, err := storage.Open(ctx, filepath.Join(t.TempDir(), "wb.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	exp, err := otlp.New(ctx, otlp.Options{Endpoint: rcv.URL})
	if err != nil {
		t.Fatal(err)
	}
	demoLM := &switchLM{LM: llm.NewDemo(llm.DemoOptions{Scripts: demo.Scripts()})}
	b := &exportingBackend{Service: sessions.New(store, demoLM), store: store, exp: exp}
	c, err := b.NewConversation(ctx, "SupportAgent", "")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := b.Send(ctx, sessions.SendRequest{Conv: c.ID, Branch: storage.MainBranch, Inputs: sig.NewMap("question", "I can't log in")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, last := b.wait(); n != 0 {
		t.Fatalf("%d exports failed: %v", n, last)
	}
	calls := 0
	trace.WalkCalls(tr.Calls, func(*trace.Call, int) { calls++ })
	if calls == 0 || spans != 1+calls {
		t.Errorf("%d spans for a turn of %d calls", spans, calls)
	}

	// a failed turn is not a trace; its retry is
	demoLM.fail.Store(true)
	if _, err := b.Send(ctx, sessions.SendRequest{Conv: c.ID, Branch: storage.MainBranch, Inputs: sig.NewMap("question", "and now?")}, nil); err == nil {
		t.Fatal("the turn did not fail")
	}
	demoLM.fail.Store(false)
	kept, err := b.KeptTurns(ctx, c.ID, storage.MainBranch)
	if err != nil || len(kept) != 1 {
		t.Fatalf("kept turns: %v %d", err, len(kept))
	}
	b.wait()
	mu.Lock()
	before := spans
	mu.Unlock()
	if _, tr, err = b.Retry(ctx, sessions.RetryRequest{Key: kept[0].Key}, nil); err != nil {
		t.Fatal(err)
	}
	if n, last := b.wait(); n != 0 {
		t.Fatalf("%d exports failed: %v", n, last)
	}
	calls = 0
	trace.WalkCalls(tr.Calls, func(*trace.Call, int) { calls++ })
	mu.Lock()
	defer mu.Unlock()
	if spans-before != 1+calls {
		t.Errorf("the retried turn of %d calls sent %d spans", calls, spans-before)
	}
}

// switchLM fails every call while fail is set.
type switchLM struct {
	lm.LM
	fail atomic.Bool
}

func (s *switchLM) Call(ctx context.Context, req lm.Request) (lm.Response, error) {
	if s.fail.Load() {
		return lm.Response{}, errors.New("HTTP 503: the model is overloaded")
	}
	return s.LM.Call(ctx, req)
}
