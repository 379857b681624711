package storage

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/trace"
)

func TestPreview(t *testing.T) {
	long := strings.Repeat("é", 299) + "ab"
	for _, tc := range []struct {
		name, raw, want string
		null            bool
	}{
		{"null", "", "", true},
		{"empty object", `{}`, "", false},
		{"not an object", `[1,2]`, "", false},
		{"corrupt", `{"a":`, "", false},
		{"first value only", `{"q":"hello","a":"x"}`, "hello", false},
		{"whitespace folded", `{"q":"  two\n\tlines  here "}`, "two lines here", false},
		{"number", `{"n":2.5}`, "2.5", false},
		{"nested", `{"m":{"k":[1,"x"]}}`, `{"k": [1, "x"]}`, false},
		{"exactly the limit", `{"q":"` + strings.Repeat("é", 300) + `"}`, strings.Repeat("é", 300), false},
		{"cut at a character", `{"q":"` + long + `"}`, strings.Repeat("é", 299) + "a…", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := preview(sql.NullString{String: tc.raw, Valid: !tc.null}); got != tc.want {
				t.Errorf("preview(%s) = %q, want %q", tc.raw, got, tc.want)
			}
		})
	}
}

// TurnOutline has TurnTree's structure and the previews of what TurnTree decodes.
func TestTurnOutlineMatchesTree(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	mustConv(t, s, "c")
	appendN(t, s, "c", MainBranch, 3)
	if _, err := s.Fork(ctx, "c", MainBranch, "f", 0); err != nil {
		t.Fatal(err)
	}
	appendN(t, s, "c", "f", 1)
	if _, err := s.Sink("c", MainBranch).BeginTurn(ctx, fixtureTurn(3, 0, false).Inputs); err != nil {
		t.Fatal(err)
	}
	tree, err := s.TurnTree(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	outline, err := s.TurnOutline(ctx, "c")
	if err != nil || len(outline) != len(tree) || len(tree) != 5 {
		t.Fatalf("outline %d nodes (%v), tree %d", len(outline), err, len(tree))
	}
	for i, n := range tree {
		o := outline[i]
		if o.Key != n.Key || o.Parent != n.Parent || o.Index != n.Index || o.Status != n.Status || !o.Started.Equal(n.Started) ||
			strings.Join(o.Branches, ",") != strings.Join(n.Branches, ",") {
			t.Errorf("node %d: outline %+v, tree %+v", i, o, n)
		}
		in := preview(sql.NullString{String: string(n.Inputs), Valid: true})
		out := preview(sql.NullString{String: string(n.Outputs), Valid: n.Outputs != nil})
		if o.InputPreview != in || o.OutputPreview != out || in == "" || (n.Status == trace.StatusCompleted) != (out != "") {
			t.Errorf("node %d previews %q / %q, want %q / %q", i, o.InputPreview, o.OutputPreview, in, out)
		}
	}
	if _, err := s.TurnOutline(ctx, "missing"); err == nil {
		t.Error("outline of a missing conversation: no error")
	}
}
