package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// callsOf is the calls export of a conversation, one decoded record per line.
func callsOf(t *testing.T, db, id string) []map[string]any {
	t.Helper()
	code, out, errs := runMain(context.Background(), "export", id, "--format", "calls", "--db", db)
	if code != 0 {
		t.Fatalf("export calls: exit %d: %s", code, errs)
	}
	var calls []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		calls = append(calls, m)
	}
	return calls
}

// A session-json export writes each request's messages once (calls name them by
// position) and import reads them back exactly: every call's request, history,
// completion and raw request of the imported conversation equal the original's.
// --no-calls leaves the records out of a smaller file that still imports.
func TestExportSharesRequestsAndImportRestoresThem(t *testing.T) {
	runIsolated(t)
	db := filepath.Join(t.TempDir(), "a.db")
	code, out, errs := runMain(context.Background(), "run", "--agent", "SupportAgent", "--db", db,
		"--script", writeFile(t, "s.jsonl", `{"question":"I can't log in"}`+"\n"+`{"question":"It says password expired"}`+"\n"+
			`{"question":"Still failing"}`+"\n"+`{"question":"Thanks"}`+"\n"))
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	id := convIDOf(t, out+errs)
	full := exportJSON(t, db, id)
	if !strings.Contains(full, `"messages_ref": "`) || !strings.Contains(full, `"shared": [`) {
		t.Fatalf("the export does not share requests:\n%.1500s", full)
	}
	ext := full[strings.Index(full, `"sessionbench": {`):]
	if strings.Contains(ext, `"messages": [`) {
		t.Error("a call writes its request whole")
	}
	path := writeFile(t, "full.json", full)
	db2 := filepath.Join(t.TempDir(), "b.db")
	id2, _ := importFile(t, db2, path)
	orig, back := callsOf(t, db, id), callsOf(t, db2, id2)
	if len(orig) != 8 || len(back) != len(orig) {
		t.Fatalf("%d calls, %d after import", len(orig), len(back))
	}
	for i := range orig {
		for _, k := range []string{"messages", "history", "completion", "raw_request", "inputs", "outputs", "path"} {
			if !reflect.DeepEqual(orig[i][k], back[i][k]) {
				t.Errorf("call %d: %s differs after import:\n%v\n%v", i, k, orig[i][k], back[i][k])
			}
		}
	}

	code, slim, errs := runMain(context.Background(), "export", id, "--format", "session-json", "--no-calls", "--db", db)
	if code != 0 {
		t.Fatalf("--no-calls: exit %d: %s", code, errs)
	}
	if strings.Contains(slim, `"calls"`) || strings.Contains(slim, `"shared"`) || len(slim) >= len(full) {
		t.Errorf("--no-calls: %d bytes (full %d), calls left in:\n%.800s", len(slim), len(full), slim)
	}
	id3, sum := importFile(t, filepath.Join(t.TempDir(), "c.db"), writeFile(t, "slim.json", slim))
	// (the calls come back from node_states, as from a file Python saved: values, no requests)
	if id3 == "" || sum["turns"] != 4.0 {
		t.Errorf("--no-calls import: %v", sum)
	}
	if code, _, errs := runMain(context.Background(), "export", id, "--format", "markdown", "--no-calls", "--db", db); code != 2 ||
		!strings.Contains(errs, "--no-calls applies to --format session-json") {
		t.Errorf("--no-calls with markdown: exit %d: %s", code, errs)
	}
}
