package sessions

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
)

// copyFile copies a closed database.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreFromPathPack: a new process that restores a long branch from its path pack
// (storage/pathvalues.go) sends exactly the requests one restoring it from the rows
// sends, and stores the same turn.
func TestRestoreFromPathPack(t *testing.T) {
	ctx := context.Background()
	st, conv := sendFixtureOf(t, "SupportAgent", 300)
	path := st.Path()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// no pack at all (the fixture's own last Send may have packed what it read)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("DELETE FROM path_packs"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	dir := t.TempDir()
	rowsDB, packDB := filepath.Join(dir, "rows.db"), filepath.Join(dir, "pack.db")
	copyFile(t, path, rowsDB)

	// the workbench's prefetch restores the branch from its rows, and writes its pack
	st, err = storage.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	New(st, demoModel(0)).Prefetch(ctx, conv, storage.MainBranch)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	copyFile(t, path, packDB)

	send := func(db string, wantPacked bool) ([][]lm.Message, *TurnPage) {
		st, err := storage.Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		pv, err := st.LoadPathValues(ctx, conv, storage.MainBranch)
		if err != nil {
			t.Fatal(err)
		}
		if packed := pv.Packed == pv.Total; packed != wantPacked || pv.Total < 300 {
			t.Fatalf("%s: %d of %d turns from a pack, want all: %v", filepath.Base(db), pv.Packed, pv.Total, wantPacked)
		}
		model := &requestLog{LM: demoModel(0)}
		a := New(st, model)
		if _, err := a.Send(ctx, SendRequest{Conv: conv, Branch: storage.MainBranch, Inputs: question("Why was I charged twice?")}, nil); err != nil {
			t.Fatal(err)
		}
		p := pageOf(t, a, conv, storage.MainBranch)
		return model.reqs, &p
	}
	rowsSent, rowsPage := send(rowsDB, false)
	packSent, packPage := send(packDB, true)
	if len(rowsSent) != 2 || !reflect.DeepEqual(packSent, rowsSent) {
		t.Fatalf("restored from the pack, the Send sent %d requests unlike the %d sent restored from the rows", len(packSent), len(rowsSent))
	}
	a, b := rowsPage.Turns[len(rowsPage.Turns)-1], packPage.Turns[len(packPage.Turns)-1]
	a.Started, a.Ended = b.Started, b.Ended
	if len(a.Calls) != len(b.Calls) {
		t.Fatalf("%d calls stored, %d restored from the rows", len(b.Calls), len(a.Calls))
	}
	for i := range a.Calls {
		a.Calls[i].Started, a.Calls[i].Latency = b.Calls[i].Started, b.Calls[i].Latency
		for j := range a.Calls[i].Tries {
			a.Calls[i].Tries[j].Latency = b.Calls[i].Tries[j].Latency // the time each took
		}
	}
	if !reflect.DeepEqual(a.Calls, b.Calls) || !reflect.DeepEqual(a.Outputs, b.Outputs) {
		ja, _ := json.MarshalIndent(a, "", " ")
		jb, _ := json.MarshalIndent(b, "", " ")
		t.Fatalf("the turn stored differs:\nrows %s\npack %s", ja, jb)
	}
}

// TestPathPackAfterWarmUp: a branch's path read whole after its warm-up (here: another
// process undid turns and sent a new one, so the path kept no longer matches) is
// packed at the next turn's model call, not left to be read from the rows again by
// every new process.
func TestPathPackAfterWarmUp(t *testing.T) {
	ctx := context.Background()
	st, conv := sendFixtureOf(t, "SupportAgent", 300)
	// a model that takes time, as served ones do: the pack is written while it thinks
	// (warmAfter into the call); an instant one leaves Close to come first
	a := New(st, &slowLM{inner: demoModel(0), latency: 20 * time.Millisecond})
	a.Prefetch(ctx, conv, storage.MainBranch) // restores from the rows and writes the pack
	packed := func() (int, int) {
		pv, err := st.LoadPathValues(ctx, conv, storage.MainBranch)
		if err != nil {
			t.Fatal(err)
		}
		return pv.Packed, pv.Total
	}
	if p, n := packed(); p < n-1 || p == 0 { // the fixture's last Send may have come after it
		t.Fatalf("after the prefetch %d of %d turns packed", p, n)
	}
	// another writer takes the last turns back and goes on from there
	if _, err := st.Undo(ctx, conv, storage.MainBranch, 5); err != nil {
		t.Fatal(err)
	}
	tip, err := st.LoadBranchRange(ctx, conv, storage.MainBranch, -1, 1)
	if err != nil {
		t.Fatal(err)
	}
	other := tip.Turns[0].Clone()
	other.Inputs.Set("question", "a question from another process")
	if _, err := st.AppendTurns(ctx, conv, storage.MainBranch, []*trace.Turn{other}); err != nil {
		t.Fatal(err)
	}
	// the pack's last row left the path; the rows before it hold the path's first turns
	if p, n := packed(); p > n-2 {
		t.Fatalf("%d of %d turns from a pack whose last turns are off the branch's path", p, n)
	}
	if _, err := a.Send(ctx, SendRequest{Conv: conv, Branch: storage.MainBranch, Inputs: question("and now?")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil { // waits for the pack's write
		t.Fatal(err)
	}
	st, err = storage.Open(ctx, st.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if p, n := packed(); p < n-1 || p == 0 {
		t.Fatalf("after the Send %d of %d turns packed, want all but the Send's", p, n)
	}
}
