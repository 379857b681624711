package storage

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/trace"
)

// v1Turn is a turn of the version-1 fixture: its parent (0 for a root), state, values
// and calls' usage (a nested call's parent key after a slash: "c2/c1").
type v1Turn struct {
	id, parent int64
	depth      int
	state      string
	reason     string // abort_reason of a discarded turn
	inputs     string
	outputs    sql.NullString
	calls      map[string]lm.Usage
}

// buildV1 writes a database exactly as schema version 1 left it (the first migration and
// rows holding only its columns), so the migration to version 2 is tested on a real
// file of the old schema, not on one this program wrote.
func buildV1(t *testing.T, path string, turns []v1Turn, branches map[string]int64) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(migrations[0])
	exec(fmt.Sprintf("PRAGMA application_id=%d", ApplicationID))
	exec("PRAGMA user_version=1")
	exec("PRAGMA journal_mode=WAL")
	at := "2025-01-15T10:30:45.000000000Z"
	exec("INSERT INTO conversations(id, title, created_at, updated_at) VALUES ('old', 'from v1', ?, ?)", at, at)
	for _, tr := range turns {
		parent := sql.NullInt64{Int64: tr.parent, Valid: tr.parent != 0}
		jumpDepth := max(tr.depth-1, 0) // jump = parent: correct, if not logarithmic
		exec(`INSERT INTO turns(id, conv_id, parent_id, jump_id, jump_depth, depth, state, inputs, outputs, started_at, abort_reason)
			VALUES (?, 'old', ?, ?, ?, ?, ?, ?, ?, ?, ?)`, tr.id, parent, parent, jumpDepth, tr.depth, tr.state, tr.inputs, tr.outputs, at,
			sql.NullString{String: tr.reason, Valid: tr.reason != ""})
		seq := 0
		for key, u := range tr.calls {
			seq++
			key, parentKey, _ := strings.Cut(key, "/")
			exec(`INSERT INTO calls(turn_id, call_key, parent_key, seq, path, predictor_type, adapter, model, request_key, params,
					prompt_tokens, completion_tokens, cached_tokens, total_tokens, started_at, latency_ns)
				VALUES (?, ?, ?, ?, 'agent', 'Predict', 'chat', 'm', ?, '{}', ?, ?, ?, ?, ?, 1000)`,
				tr.id, key, parentKey, seq, []byte(key), u.PromptTokens, u.CompletionTokens, u.CachedTokens, u.TotalTokens, at)
		}
	}
	for name, tip := range branches {
		exec(`INSERT INTO branches(conv_id, name, tip_id, created_at, updated_at) VALUES ('old', ?, ?, ?, ?)`,
			name, sql.NullInt64{Int64: tip, Valid: tip != 0}, at, at)
	}
}

func usage(p, c, ca int) lm.Usage {
	return lm.Usage{PromptTokens: p, CompletionTokens: c, CachedTokens: ca, TotalTokens: p + c}
}

// Opening a version-1 file backs it up, adds the running usage totals and previews for
// every turn (pending and discarded ones too), and later commits build on them.
func TestMigrateV1RunningUsage(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	out := func(s string) sql.NullString { return sql.NullString{String: s, Valid: true} }
	buildV1(t, path, []v1Turn{
		{id: 1, depth: 0, state: "committed", inputs: `{"question":"first\n  question"}`, outputs: out(`{"answer":"one","n":1}`),
			calls: map[string]lm.Usage{"c1": usage(10, 2, 1), "c2": usage(5, 1, 0), "c3/c2": usage(7, 3, 0)}},
		{id: 2, parent: 1, depth: 1, state: "committed", inputs: `{"question":"second"}`, outputs: out(`{"answer":"two"}`),
			calls: map[string]lm.Usage{"c1": usage(20, 4, 2)}},
		{id: 3, parent: 2, depth: 2, state: "committed", inputs: `{"question":"` + strings.Repeat("x", 400) + `"}`, outputs: out(`{}`)},
		{id: 4, parent: 1, depth: 1, state: "committed", inputs: `{"n":42}`, outputs: out(`{"answer":"fork"}`),
			calls: map[string]lm.Usage{"c1": usage(100, 50, 0)}},
		{id: 5, parent: 3, depth: 3, state: "pending", inputs: `{"question":"in flight"}`,
			calls: map[string]lm.Usage{"c1": usage(1000, 1, 0)}},
		{id: 6, parent: 2, depth: 2, state: "discarded", reason: "predictor answer: model refused", inputs: `{"question":"dropped"}`},
		{id: 7, parent: 2, depth: 2, state: "discarded", reason: "superseded by a new turn", inputs: `{"question":"superseded"}`},
		{id: 8, parent: 2, depth: 2, state: "discarded", reason: "session X: context canceled", inputs: `{"question":"esc"}`},
	}, map[string]int64{MainBranch: 3, "fork": 4, "short": 1, "empty": 0})

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var v int
	if err := s.r.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != SchemaVersion() || v < 2 {
		t.Fatalf("user_version %d (%v), want %d", v, err, SchemaVersion())
	}
	if b, _ := filepath.Glob(path + ".bak-v1-*"); len(b) != 1 {
		t.Fatalf("backups %v, want one .bak-v1 file", b)
	}
	if err := s.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
	t1, t2, t4 := usage(22, 6, 1), usage(20, 4, 2), usage(100, 50, 0)
	sum := func(us ...lm.Usage) lm.Usage {
		var o lm.Usage
		for _, u := range us {
			o.PromptTokens += u.PromptTokens
			o.CompletionTokens += u.CompletionTokens
			o.CachedTokens += u.CachedTokens
			o.TotalTokens += u.TotalTokens
		}
		return o
	}
	want := map[string]lm.Usage{MainBranch: sum(t1, t2), "fork": sum(t1, t4), "short": t1, "empty": {}}
	got, err := s.BranchUsage(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("branch %s: usage %+v, want %+v", name, got[name], w)
		}
		if ref := walkUsage(t, s, "old", name); got[name] != ref {
			t.Errorf("branch %s: usage %+v, but its loaded calls sum to %+v", name, got[name], ref)
		}
	}

	nodes, err := s.TurnOutline(ctx, "old")
	if err != nil || len(nodes) != 8 {
		t.Fatalf("outline: %d nodes, %v", len(nodes), err)
	}
	previews := map[string][2]string{
		"1": {"first question", "one"}, "2": {"second", "two"}, "3": {strings.Repeat("x", 300) + "…", ""},
		"4": {"42", "fork"}, "5": {"in flight", ""}, "6": {"dropped", ""}, "7": {"superseded", ""}, "8": {"esc", ""},
	}
	// Version 3: each state becomes a status; the abort reason becomes the turn's error.
	statuses := map[string]trace.Status{"1": trace.StatusCompleted, "2": trace.StatusCompleted, "3": trace.StatusCompleted,
		"4": trace.StatusCompleted, "5": trace.StatusInterrupted, "6": trace.StatusFailed, "7": trace.StatusCancelled, "8": trace.StatusCancelled}
	for _, n := range nodes {
		if w := previews[n.Key]; n.InputPreview != w[0] || n.OutputPreview != w[1] {
			t.Errorf("turn %s previews %q / %q, want %q / %q", n.Key, n.InputPreview, n.OutputPreview, w[0], w[1])
		}
		if n.Status != statuses[n.Key] || n.Owner != nil {
			t.Errorf("turn %s: status %s owner %v, want %s and no owner", n.Key, n.Status, n.Owner, statuses[n.Key])
		}
	}
	if n := nodes[5]; n.Error != "predictor answer: model refused" {
		t.Errorf("failed turn's error: %q", n.Error)
	}
	// The interrupted turn (no owner could be recorded before version 3) is not running.
	if p, err := s.PendingTurns(ctx); err != nil || len(p) != 1 || p[0].Key != "5" || p[0].Status != trace.StatusInterrupted {
		t.Errorf("pending after migration: %v %+v", err, p)
	}

	// A turn committed after the migration adds to its parent's backfilled totals.
	nt := fixtureTurn(4, 0, false)
	if _, err := s.AppendTurn(ctx, "old", "fork", nt); err != nil {
		t.Fatal(err)
	}
	got, err = s.BranchUsage(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if ref := walkUsage(t, s, "old", "fork"); got["fork"] != ref || ref.PromptTokens != 122+3*104 {
		t.Errorf("fork after a new turn: usage %+v, loaded calls sum to %+v", got["fork"], ref)
	}
}

// TestMigrationFilesNumbered: migration i (1-based) is the file numbered i and there is
// one file per number. Two files with one number (two branches adding a migration at
// once) would run in name order here but not on a database one of them already migrated.
func TestMigrationFilesNumbered(t *testing.T) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	for i, n := range names {
		if want := fmt.Sprintf("migrations/%04d_", i+1); !strings.HasPrefix(n, want) {
			t.Errorf("migration %d is %s, want a file named %s*.sql", i+1, n, want)
		}
	}
}
