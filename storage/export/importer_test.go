package export

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/core/savefile"
	"github.com/sessionbench/sessionbench/core/sig"
)

// childDoc builds a session file with outer turns and one child "w" with n turns, and
// the extension's child_turns counts when given.
func childDoc(outer, n int, counts []int) string {
	doc := sig.NewMap("version", int64(2))
	var turns []any
	for i := 0; i < outer; i++ {
		turns = append(turns, sig.NewMap("inputs", sig.NewMap("q", int64(i)), "outputs", sig.NewMap("a", int64(i))))
	}
	doc.Set("turns", turns)
	var kids []any
	for j := 0; j < n; j++ {
		kids = append(kids, sig.NewMap("inputs", sig.NewMap("k", int64(j)), "outputs", sig.NewMap("v", int64(j)), "history_snapshot", nil))
	}
	doc.Set("node_states", sig.NewMap("w", sig.NewMap("version", int64(1), "turns", kids)))
	if counts != nil {
		var ext []any
		for _, c := range counts {
			ext = append(ext, sig.NewMap("child_turns", sig.NewMap("w", int64(c))))
		}
		doc.Set(savefile.ExtKey, sig.NewMap("format", int64(1), "turns", ext))
	}
	return py.CompactJSON(doc)
}

func TestBuildImportAttachesChildTurns(t *testing.T) {
	cases := []struct {
		name     string
		outer, n int
		counts   []int
		want     []int // calls per outer turn; nil: kept in metadata
		note     string
	}{
		{"counts from the file", 3, 4, []int{1, 1, 4}, []int{1, 0, 3}, ""},
		{"even split", 2, 4, nil, []int{2, 2}, "2 per outer turn"},
		{"one each", 3, 3, nil, []int{1, 1, 1}, "1 per outer turn"},
		{"uneven", 2, 3, nil, nil, "cannot be matched"},
		{"counts go down", 2, 2, []int{2, 1}, nil, "cannot be matched"},
		{"counts short", 2, 3, []int{1, 2}, nil, "cannot be matched"},
		{"no outer turns", 0, 2, nil, nil, "cannot be matched"},
		{"empty child", 2, 0, nil, []int{0, 0}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := savefile.Decode([]byte(childDoc(tc.outer, tc.n, tc.counts)))
			if err != nil {
				t.Fatal(err)
			}
			im, err := BuildImport(f)
			if err != nil {
				t.Fatal(err)
			}
			notes := strings.Join(im.Notes, "\n")
			if tc.note == "" && notes != "" || !strings.Contains(notes, tc.note) {
				t.Errorf("notes %q, want %q", notes, tc.note)
			}
			cfg, _ := im.Metadata[ConfigMetaKey].(string)
			if tc.want == nil {
				if !strings.Contains(cfg, `"node_states":{"w":{"version":1`) {
					t.Errorf("unattached child not kept whole: %s", cfg)
				}
				for _, tr := range im.Turns {
					if len(tr.Calls) != 0 {
						t.Errorf("unattached child produced calls")
					}
				}
				return
			}
			next := int64(0)
			for i, tr := range im.Turns {
				if len(tr.Calls) != tc.want[i] {
					t.Fatalf("turn %d has %d calls, want %d", i, len(tr.Calls), tc.want[i])
				}
				for _, c := range tr.Calls { // in the child's order
					if v, _ := c.Inputs.Get("k"); v != next || c.Path != "w" {
						t.Errorf("turn %d call %+v, want child turn %d", i, c, next)
					}
					next++
				}
			}
		})
	}
}

// A conversation's imported settings come back as the Python keys, in the file's order.
func TestSessionJSONWritesImportedSettings(t *testing.T) {
	_, src := sampleSource(t)
	src.Conv.Metadata = map[string]any{
		ConfigMetaKey: `{"max_turns":3,"initial_history":{"messages":[{"z":1,"a":2.0}]},"extra":{"app":"x"},"extension":{"record":"all"}}`,
		"user":        "u1",
	}
	var b strings.Builder
	if err := SessionJSON(&b, src, Options{HistoryField: "history"}); err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(b.String()), &doc); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"max_turns": "3", "app": `"x"`} {
		if string(doc[k]) != want {
			t.Errorf("%s = %s, want %s", k, doc[k], want)
		}
	}
	if !strings.Contains(b.String(), "\"initial_history\": {\n    \"messages\": [\n      {\n        \"z\": 1,\n        \"a\": 2.0") {
		t.Errorf("initial_history order or float lost:\n%s", b.String())
	}
	if !strings.Contains(string(doc[savefile.ExtKey]), `"record": "all"`) || !strings.Contains(string(doc[savefile.MetaKey]), `"user": "u1"`) ||
		strings.Contains(string(doc[savefile.MetaKey]), ConfigMetaKey) {
		t.Errorf("extension or metadata: %s %s", doc[savefile.ExtKey], doc[savefile.MetaKey])
	}
}
