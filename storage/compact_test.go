package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// A delta gives back its text byte for byte, whatever the text and its base share.
func TestDeltaRoundTrip(t *testing.T) {
	long := strings.Repeat("[[ ## question ## ]]\nWhat is x?\n\n", 3)
	cases := []struct {
		name, base, body string
		delta            bool // whether a delta is worth it
	}{
		{"same template, new question", long + "Respond with the fields.", strings.Replace(long, "x?", "y and z?", 1) + "Respond with the fields.", true},
		{"prefix of the base", long + "Respond with the fields.", long, true},
		{"base is a prefix", long, long + "tail", true},
		{"overlapping prefix and suffix", long + "aaaa" + long, long + "aa" + long, true},
		{"nothing shared", long, strings.Repeat("Z", len(long)), false},
		{"changed in two places", "[[ ## question ## ]]\nquestion 493: why was I charged twice in month 1?",
			"[[ ## question ## ]]\nquestion 494: why was I charged twice in month 2?", true},
		{"parts moved", "alpha beta gamma delta epsilon zeta eta theta iota kappa",
			"kappa iota theta eta zeta epsilon delta gamma beta alpha", true},
		{"parts repeated", long, long + long + long, true},
		{"invalid UTF-8 and NUL", long + "\xff\x00\xfe", long + "\x00\xff", true},
		{"short text", "abc", "abd", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wc := newWriteCache()
			wc.baseSets, wc.stBases = map[string][]baseRef{}, map[string][]baseRef{}
			wc.addBase("k", 7, c.base)
			base, d := wc.delta("k", c.body)
			if (base != 0) != c.delta {
				t.Fatalf("delta used = %v, want %v (%d bytes for %d)", base != 0, c.delta, len(d), len(c.body))
			}
			if base == 0 {
				if string(d) != c.body {
					t.Fatalf("a text stored whole changed: %q", d)
				}
				return
			}
			if base != 7 || len(d) >= len(c.body)*3/4 {
				t.Fatalf("base %d, %d bytes for %d", base, len(d), len(c.body))
			}
			back, err := undelta([]byte(c.base), d)
			if err != nil || back != c.body {
				t.Fatalf("undelta = %q, %v; want %q", back, err, c.body)
			}
		})
	}
	for _, bad := range [][]byte{{0x80}, {3}, {4, 'a'}, {3, 200}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}} {
		if _, err := undelta([]byte("abcd"), bad); err == nil {
			t.Errorf("undelta(%v) accepted a corrupt delta", bad)
		}
	}
}

// Messages keep their extra keys (a template's "name"), and two messages differing only
// in them are different elements of a stored list.
func TestMessageExtraRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "x")
	msgs := func(name string) []lm.Message {
		return []lm.Message{
			{Role: "system", Content: "You are a helpful assistant."},
			{Role: "user", Content: "Hello, who is there?", Extra: `{"name":"` + name + `"}`},
			{Role: "assistant", Content: "Me.", Extra: `{"name":"bot","weight":0.5,"tags":["a",{"b":null}]}`},
			{Role: "user", Content: "And now?"},
		}
	}
	var sent [][]lm.Message
	for i, name := range []string{"alice", "bob", "bob"} {
		tr := &trace.Turn{Inputs: sig.NewMap("q", "hi"), Outputs: sig.NewMap("a", "ok"), Calls: []*trace.Call{{
			ID: "c1", Path: "p", PredictorType: "Predict", Adapter: "template", Model: "m",
			Inputs: sig.NewMap("q", "hi"), Outputs: sig.NewMap("a", "ok"), Messages: lm.MessagesOf(msgs(name)), Completion: "ok",
		}}}
		if i == 2 {
			tr.Calls[0].Messages = lm.MessagesOf(append(tr.Calls[0].Messages.Slice(), lm.Message{Role: "user", Content: "More", Extra: `{"name":"carol"}`}))
		}
		sent = append(sent, tr.Calls[0].Messages.Slice())
		if _, err := runTurn(ctx, s.Sink("x", MainBranch), tr); err != nil {
			t.Fatal(err)
		}
	}
	turns, err := s.LoadBranch(ctx, "x", MainBranch)
	if err != nil || len(turns) != 3 {
		t.Fatal(len(turns), err)
	}
	for i, tr := range turns {
		got := tr.Calls[0].Messages.Slice()
		if len(got) != len(sent[i]) {
			t.Fatalf("turn %d: %d messages, want %d", i, len(got), len(sent[i]))
		}
		for j := range got {
			if got[j] != sent[i][j] {
				t.Fatalf("turn %d message %d = %+v, want %+v", i, j, got[j], sent[i][j])
			}
		}
	}
}

// A call's inputs and outputs stored as one text (the next history entry) come back as
// they were, also when they cannot be joined (no outputs, an empty object).
func TestCallValuesRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "x")
	vals := []struct{ in, out *sig.Map }{
		{sig.NewMap("question", "why?", "n", int64(3)), sig.NewMap("answer", "because", "ratio", 0.5, "list", []any{"a", nil})},
		{sig.NewMap("question", "why?"), nil},
		{nil, sig.NewMap("answer", "x")},
		{sig.NewMap(), sig.NewMap("answer", "x")},
		{sig.NewMap("q", "a,\"}{"), sig.NewMap("a", "}{,")},
	}
	tr := &trace.Turn{Inputs: sig.NewMap("q", "hi"), Outputs: sig.NewMap("a", "ok")}
	for i, v := range vals {
		tr.Calls = append(tr.Calls, &trace.Call{ID: string(rune('a' + i)), Path: "p", PredictorType: "Predict", Adapter: "chat", Model: "m",
			Inputs: v.in, Outputs: v.out, Messages: lm.MessagesOf([]lm.Message{{Role: "user", Content: "q"}}), Completion: "c"})
	}
	if _, err := runTurn(ctx, s.Sink("x", MainBranch), tr); err != nil {
		t.Fatal(err)
	}
	turns, err := s.LoadBranch(ctx, "x", MainBranch)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range turns[0].Calls {
		if toJSON(t, c.Inputs) != toJSON(t, vals[i].in) || toJSON(t, c.Outputs) != toJSON(t, vals[i].out) {
			t.Errorf("call %d: %s %s, want %s %s", i, toJSON(t, c.Inputs), toJSON(t, c.Outputs), toJSON(t, vals[i].in), toJSON(t, vals[i].out))
		}
	}
	var joined int
	if err := s.r.QueryRow("SELECT count(*) FROM calls WHERE io_id IS NOT NULL AND inputs IS NULL AND outputs IS NULL").Scan(&joined); err != nil || joined != 2 {
		t.Fatalf("%d calls store their values joined (%v), want 2", joined, err)
	}
	// a damaged split is reported, naming the call, by every read of the values
	if _, err := s.w.ExecContext(ctx, "UPDATE calls SET io_split = 1 WHERE call_key = 'e'"); err != nil {
		t.Fatal(err)
	}
	for _, o := range []LoadOptions{{}, {ValuesOnly: true}} {
		_, err := s.LoadBranchRangeWith(ctx, "x", MainBranch, 0, 0, o)
		if err == nil || !strings.Contains(err.Error(), "call e of turn") || !strings.Contains(err.Error(), "are corrupt") {
			t.Errorf("a damaged split of %+v: %v, want it reported as corrupt, naming the call", o, err)
		}
	}
}

// A database at schema version 7 or 8 (testdata/README.md; 8 with deltas and extra
// message keys) is backed up and migrated, and gives back everything as that version did;
// new turns beside the old ones use deltas, and deleting the branch that holds them
// sweeps no base another text still needs.
func TestMigrateKeepsEverything(t *testing.T) {
	for _, v := range []string{"v7", "v8"} {
		t.Run(v, func(t *testing.T) { testMigrateKeepsEverything(t, v) })
	}
}

func testMigrateKeepsEverything(t *testing.T, v string) {
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, v+".db")
	gunzip(t, v+".db", db)
	var want map[string]json.RawMessage
	if err := json.Unmarshal(gunzip(t, v+".json", ""), &want); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if backups, _ := filepath.Glob(db + ".bak-" + v + "-*"); len(backups) != 1 {
		t.Fatalf("backups %v, want one of version %s", backups, v)
	}
	check := func(when string) {
		t.Helper()
		for name, w := range want {
			var got []*trace.Turn
			if key, ok := strings.CutPrefix(name, "kept:"); ok {
				got, err = s.LoadTurns(ctx, []string{key})
			} else {
				got, err = s.LoadBranch(ctx, "old", name)
			}
			if err != nil {
				t.Fatalf("%s: %s: %v", when, name, err)
			}
			if g, _ := json.Marshal(got); string(g) != string(w) {
				t.Fatalf("%s: %s differs from what version %s stored:\n got %.2000s\nwant %.2000s", when, name, v, g, w)
			}
		}
	}
	check("migrated")
	if _, err := s.Fork(ctx, "old", MainBranch, "more", 3); err != nil {
		t.Fatal(err)
	}
	var added []*trace.Turn
	var maxID int64
	if err := s.r.QueryRow("SELECT max(id) FROM turns").Scan(&maxID); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6; i++ {
		b, err := s.Branch(ctx, "old", "more")
		if err != nil {
			t.Fatal(err)
		}
		nt := fixtureTurn(b.Length, 0, true)
		key, err := runTurn(ctx, s.Sink("old", "more"), nt)
		if err != nil {
			t.Fatal(err)
		}
		if want := turnKey(maxID + 1 + int64(i)); key != want { // schema 11's id counter starts after the stored turns
			t.Fatalf("new turn %d has key %s, want %s", i, key, want)
		}
		added = append(added, nt)
	}
	var deltas int
	if err := s.r.QueryRow("SELECT count(*) FROM contents WHERE base_id IS NOT NULL").Scan(&deltas); err != nil || deltas == 0 {
		t.Fatalf("%d texts stored as deltas (%v)", deltas, err)
	}
	turns, err := s.LoadBranch(ctx, "old", "more")
	if err != nil {
		t.Fatal(err)
	}
	for i, nt := range added {
		if got := turns[len(turns)-len(added)+i]; toJSON(t, got.Calls) != toJSON(t, nt.Calls) {
			t.Fatalf("new turn %d comes back different:\n got %s\nwant %s", i, toJSON(t, got.Calls), toJSON(t, nt.Calls))
		}
	}
	check("after new turns")
	if _, err := s.DeleteBranch(ctx, "old", "more", false); err != nil {
		t.Fatal(err)
	}
	check("after deleting the new branch")
	var orphans int
	if err := s.r.QueryRow(`SELECT count(*) FROM contents c WHERE c.base_id IS NOT NULL
		AND NOT EXISTS (SELECT 1 FROM contents b WHERE b.id = c.base_id)`).Scan(&orphans); err != nil || orphans != 0 {
		t.Fatalf("%d deltas lost their base (%v)", orphans, err)
	}
	if err := s.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
	var fk sql.NullString
	if err := s.r.QueryRow("SELECT 'x' FROM pragma_foreign_key_check LIMIT 1").Scan(&fk); err != sql.ErrNoRows {
		t.Fatalf("foreign key check: %v %v", fk, err)
	}
}

// A turn commits once, when it ends, and its log is fsynced once, after the commit
// returned: in flight it lives in its journal (which other processes see, and which keeps
// every finished call from a killed process). The first turn on a branch also reserves
// turn ids for the branch, in a commit of its own, which asks for no sync; the first
// turn of a later process finds its id reserved (turnids.go). Once the first turns have
// run, SQLite parses no statement again: each runs prepared.
func TestCommitsPerTurn(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "x")
	if err := s.Sync(); err != nil { // the syncs of opening and of the conversation
		t.Fatal(err)
	}
	for i := 0; i < 4+idsPerReserve; i++ { // past the first block of ids
		all0, durable0 := s.Commits()
		parsed0 := s.wc.parsed.Load()
		tr := fixtureTurn(i, 0, true)
		if _, err := runTurn(ctx, s.Sink("x", MainBranch), tr); err != nil {
			t.Fatal(err)
		}
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		all, durable := s.Commits()
		calls := 0
		trace.WalkCalls(tr.Calls, func(*trace.Call, int) { calls++ })
		want := int64(1)
		if i == 0 {
			want = 2 // the branch's first turn reserves ids
		}
		if calls < 2 || all-all0 != want || durable-durable0 != 1 {
			t.Fatalf("turn %d (%d calls): %d commits, %d durable; want %d and 1", i, calls, all-all0, durable-durable0, want)
		}
		if parsed := s.wc.parsed.Load() - parsed0; i >= 2 && parsed != 0 {
			t.Fatalf("turn %d: %d statements parsed again", i, parsed)
		}
	}
	// the next process: its first turn commits once
	path := s.Path()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	all0, _ := s.Commits()
	if _, err := runTurn(ctx, s.Sink("x", MainBranch), fixtureTurn(4+idsPerReserve, 0, true)); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if all, _ := s.Commits(); all-all0 != 1 {
		t.Errorf("the first turn of a process: %d commits; want 1 (its id reserved by the turns before)", all-all0)
	}
}

// Texts and list nodes are found by a short hash: a row under the same hash that holds
// something else (as a collision would) is never taken for what is looked up.
func TestShortHashCollisions(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "x")
	tr := fixtureTurn(0, 0, false)
	c := tr.Calls[1] // agent.answer
	chain := hash16{}
	for _, m := range c.Messages.All() {
		chain = chainHash(chain, m.Role, contentHash(m.Content))
	}
	// Impostors: a text under the hash of the call's completion, and a one-element list
	// under the hash of the call's whole request, made before the turn is stored.
	if _, err := s.w.Exec("INSERT INTO contents(hash, body) VALUES (?, 'not the completion')", contentHash(c.Completion).short()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Exec(`INSERT INTO list_nodes(hash, parent_id, role, content_id, depth) VALUES (?, NULL, 'user', last_insert_rowid(), ?)`,
		chain.short(), c.Messages.Len()); err != nil {
		t.Fatal(err)
	}
	if _, err := runTurn(ctx, s.Sink("x", MainBranch), tr); err != nil {
		t.Fatal(err)
	}
	// A fresh store (a cold cache) looks the request up by its hashes to store it again.
	s2, err := Open(ctx, s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	again := fixtureTurn(0, 0, false)
	if _, err := runTurn(ctx, s2.Sink("x", MainBranch), again); err != nil {
		t.Fatal(err)
	}
	turns, err := s2.LoadBranch(ctx, "x", MainBranch)
	if err != nil || len(turns) != 2 {
		t.Fatal(len(turns), err)
	}
	for i, got := range turns {
		if toJSON(t, got.Calls) != toJSON(t, tr.Calls) {
			t.Fatalf("turn %d comes back different:\n got %s\nwant %s", i, toJSON(t, got.Calls), toJSON(t, tr.Calls))
		}
	}
}

// Consecutive calls of a predictor repeat most of the previous request and history,
// which the write cache reuses (the nodes of the previous list, the JSON of unchanged
// history entries): whatever changed between them, each call is stored as it was sent,
// a history entry changed in place included.
func TestConsecutiveListsStoredExactly(t *testing.T) {
	ctx := context.Background()
	msg := func(i int) lm.Message {
		return lm.Message{Role: []string{"user", "assistant"}[i%2], Content: fmt.Sprintf("message %d of the conversation", i)}
	}
	upto := func(n int) []lm.Message {
		out := []lm.Message{{Role: "system", Content: "system"}}
		for i := range n {
			out = append(out, msg(i))
		}
		return out
	}
	entries := make([]*sig.Map, 12)
	for i := range entries {
		entries[i] = sig.NewMap("question", fmt.Sprintf("q%d", i), "answer", fmt.Sprintf("a%d", i))
	}
	steps := []struct {
		name    string
		msgs    func() []lm.Message
		hist    func() []*sig.Map
		prepare func()
	}{
		{"first", func() []lm.Message { return upto(4) }, func() []*sig.Map { return entries[:2] }, nil},
		{"extends", func() []lm.Message { return upto(6) }, func() []*sig.Map { return entries[:3] }, nil},
		{"middle changed", func() []lm.Message { m := upto(8); m[3].Content += " (edited)"; return m },
			func() []*sig.Map { return entries[:4] }, func() { entries[1].Set("answer", "a1 (edited in place)") }},
		{"shorter", func() []lm.Message { return upto(3) }, func() []*sig.Map { return entries[:2] }, nil},
		{"window", func() []lm.Message { return append(upto(0), upto(10)[5:]...) }, func() []*sig.Map { return entries[3:7] }, nil},
		{"window moved", func() []lm.Message { return append(upto(0), upto(12)[7:]...) }, func() []*sig.Map { return entries[4:8] },
			func() { entries[5].Set("answer", []any{"a list", int64(5)}) }},
		{"window, entry replaced", func() []lm.Message { return append(upto(0), upto(12)[7:]...) },
			func() []*sig.Map {
				h := append([]*sig.Map{}, entries[5:9]...)
				h[1] = sig.NewMap("question", "other")
				return h
			}, nil},
		{"whole again", func() []lm.Message { return upto(12) }, func() []*sig.Map { return entries }, nil},
	}
	s := openTemp(t)
	mustConv(t, s, "x")
	var want []string
	for _, st := range steps {
		if st.prepare != nil {
			// the turn before's values are the sink's until its transaction has run
			// (commitlater.go): change them only then
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
			st.prepare()
		}
		c := &trace.Call{ID: "c1", Path: "agent", PredictorType: "Predict", Adapter: "chat", Model: "m",
			Messages: lm.MessagesOf(st.msgs()), History: sig.History{Messages: st.hist()}, Completion: "ok", Started: fixtureEpoch}
		want = append(want, toJSON(t, c))
		tr := &trace.Turn{Inputs: sig.NewMap("q", st.name), Outputs: sig.NewMap("a", "ok"), Calls: []*trace.Call{c}}
		if _, err := runTurn(ctx, s.Sink("x", MainBranch), tr); err != nil {
			t.Fatal(err)
		}
	}
	turns, err := s.LoadBranch(ctx, "x", MainBranch)
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range steps {
		if got := toJSON(t, turns[i].Calls[0]); got != want[i] {
			t.Errorf("%s: stored\n%s\nsent\n%s", st.name, got, want[i])
		}
	}
}
