package sessions

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/demo"
)

func writeAgent(t *testing.T, dir, file, example string, edit func(string) string) string {
	t.Helper()
	data, err := demo.ExampleFile(example)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if edit != nil {
		text = edit(text)
	}
	p := filepath.Join(dir, file)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func agentNames(a *Service) []string {
	var out []string
	for _, ag := range a.Agents() {
		out = append(out, ag.Name)
	}
	return out
}

func TestAgentFiles(t *testing.T) {
	ctx := context.Background()
	a, st, model, _ := newWorkbench(t)
	dir := t.TempDir()
	a.SetAgentDirs(dir)
	path := writeAgent(t, dir, "support.toml", "support.toml", nil)
	writeAgent(t, dir, "broken.toml", "support.toml", func(s string) string { return s + "\nbogus_key = 1\n" })

	names := agentNames(a)
	builtins := len(demo.Agents())
	if len(names) != builtins+1 || names[builtins] != "support" {
		t.Fatalf("agents %v: want the %d built-ins, then the file agent", names, builtins)
	}
	if errs := a.AgentErrors(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "broken.toml") {
		t.Errorf("agent errors %v, want broken.toml's", errs)
	}
	info := a.Agents()[builtins]
	if info.Signature == nil || len(info.Signature.Inputs) != 1 || info.Signature.Inputs[0].Name != "question" {
		t.Errorf("file agent's form: %+v", info.Signature)
	}

	c, err := a.NewConversation(ctx, "SUPPORT", "") // names match case-insensitively
	if err != nil {
		t.Fatal(err)
	}
	if c.Agent != "support" {
		t.Errorf("conversation agent %q, want the file agent's name", c.Agent)
	}
	stored, err := st.Conversation(ctx, c.ID)
	if err != nil || stored.Agent != path {
		t.Fatalf("stored agent %q, want the file's absolute path %q (%v)", stored.Agent, path, err)
	}
	tr := mustSend(t, a, c.ID, "main", question("Why was I charged twice?"))
	if tr.Outputs.String("reply") == "" || len(leafCalls(tr)) != 2 {
		t.Errorf("file agent turn: %v, %d calls", tr.Outputs, len(leafCalls(tr)))
	}

	// Reopened by a workbench that searches no directories: the stored path finds it.
	b := New(st, model)
	b.SetAgentDirs()
	convs, err := b.Conversations(ctx)
	if err != nil || len(convs) != 1 || convs[0].Agent != "support" {
		t.Fatalf("reopened conversations %+v, %v", convs, err)
	}
	if tr := mustSend(t, b, c.ID, "main", question("And the refund?")); tr.Index != 1 {
		t.Errorf("turn after reopening: index %d", tr.Index)
	}
	if names := agentNames(b); !strings.Contains(strings.Join(names, ","), "support") {
		t.Errorf("agents after reopening %v: the conversation's file agent is listed", names)
	}

	// An edited file is picked up on the next listing.
	writeAgent(t, dir, "support.toml", "support.toml", func(s string) string {
		return strings.Replace(s, `name = "support"`, `name = "helpdesk"`, 1)
	})
	if names := agentNames(a); names[builtins] != "helpdesk" {
		t.Errorf("agents after the edit %v", names)
	}
}

// An agent file of the directories is resolved by its path from the last listing while
// the file is unchanged, and read again once it changes or goes.
func TestResolveListedAgentFile(t *testing.T) {
	dir := t.TempDir()
	path := writeAgent(t, dir, "support.toml", "support.toml", nil)
	c := NewCatalog(dir)
	steps := []struct {
		name string
		edit func() // before resolving
		want string // the agent's name; "" for an error
	}{
		{"listed", nil, "support"},
		{"unchanged", nil, "support"},
		{"edited", func() {
			writeAgent(t, dir, "support.toml", "support.toml", func(s string) string {
				return strings.Replace(s, `name = "support"`, `name = "helpdesk"`, 1)
			})
		}, "helpdesk"},
		{"removed", func() {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, ""},
	}
	for _, st := range steps {
		if st.edit != nil {
			st.edit()
		}
		ag, err := c.Resolve(path)
		switch {
		case st.want == "" && err == nil:
			t.Errorf("%s: resolved %q, want an error", st.name, ag.Name)
		case st.want != "" && (err != nil || ag.Name != st.want):
			t.Errorf("%s: resolved %q (%v), want %q", st.name, ag.Name, err, st.want)
		}
	}
}

func TestAgentByPath(t *testing.T) {
	ctx := context.Background()
	a, _, _, _ := newWorkbench(t)
	path := writeAgent(t, t.TempDir(), "tr.toml", "translate.toml", nil)
	rel, err := filepath.Rel(mustGetwd(t), path)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, ref string
	}{{"absolute", path}, {"relative", rel}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := a.NewConversation(ctx, tc.ref, "by path")
			if err != nil {
				t.Fatal(err)
			}
			if c.Agent != "translate" {
				t.Errorf("agent %q", c.Agent)
			}
			if tr := mustSend(t, a, c.ID, "main", map1("text", "i has a apple")); tr.Outputs.String("translated") == "" {
				t.Errorf("outputs %v", tr.Outputs)
			}
		})
	}
	for _, bad := range []string{"NoSuchAgent", filepath.Join(t.TempDir(), "missing.toml")} {
		if _, err := a.NewConversation(ctx, bad, ""); err == nil {
			t.Errorf("agent %q accepted", bad)
		} else if !strings.Contains(err.Error(), filepath.Base(bad)) {
			t.Errorf("error %q does not name %q", err, bad)
		}
	}
	if _, err := a.NewConversation(ctx, "NoSuchAgent", ""); err == nil || !strings.Contains(err.Error(), "SupportAgent") {
		t.Errorf("unknown agent error %v should list the known agents", err)
	}
}

// An agent file named by path is read again when it changes: a conversation started
// with it runs the edited agent (and keeps running the same one while it does not).
func TestAgentByPathReread(t *testing.T) {
	ctx := context.Background()
	a, _, _, _ := newWorkbench(t)
	path := writeAgent(t, t.TempDir(), "tr.toml", "translate.toml", nil)
	c, err := a.NewConversation(ctx, path, "by path")
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name, language, wantDesc string
	}{
		{"as written", "", "Fixes spelling"},
		{"edited", "German", "Edited: German"},
		{"unchanged since", "", "Edited: German"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.language != "" {
				writeAgent(t, filepath.Dir(path), "tr.toml", "translate.toml", func(s string) string {
					s = strings.Replace(s, `target_language = "French"`, `target_language = "`+st.language+`"`, 1)
					return strings.Replace(s, `description = "Fixes`, `description = "Edited: `+st.language+`. Fixes`, 1)
				})
				later := time.Now().Add(time.Duration(len(st.name)) * time.Second) // a new mtime even on a coarse clock
				if err := os.Chtimes(path, later, later); err != nil {
					t.Fatal(err)
				}
			}
			ag, err := a.files.Resolve(path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(ag.Description, st.wantDesc) {
				t.Errorf("description %q, want it to start with %q", ag.Description, st.wantDesc)
			}
			tr := mustSend(t, a, c.ID, "main", map1("text", "i has a apple"))
			lang := "French"
			if strings.HasPrefix(st.wantDesc, "Edited") {
				lang = "German"
			}
			var sent string
			for _, call := range tr.Calls {
				if v, ok := call.Inputs.Get("target_language"); ok {
					sent, _ = v.(string)
				}
			}
			if sent != lang {
				t.Errorf("the turn ran with target_language %q, want %q", sent, lang)
			}
		})
	}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

// A Service given the catalog its caller read an agent file with (as `run` does after
// checking --agent) takes its first turn without reading the file again; one with its
// own catalog reads it. The file is overwritten with an invalid agent of the same size
// and time, so a second read fails and tells the two apart.
func TestSetCatalogSharesTheAgentRead(t *testing.T) {
	ctx := context.Background()
	a, st, model, _ := newWorkbench(t)
	path := writeAgent(t, t.TempDir(), "tr.toml", "translate.toml", nil)
	c, err := a.NewConversation(ctx, path, "shared")
	if err != nil {
		t.Fatal(err)
	}
	cat := NewCatalog()
	if _, err := cat.Resolve(path); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Repeat("#", int(fi.Size()-1))+"["), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		catalog  *Catalog
		wantRead bool
	}{{"shared catalog", cat, false}, {"own catalog", nil, true}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := New(st, model)
			b.SetAgentDirs()
			if tc.catalog != nil {
				b.SetCatalog(tc.catalog)
			}
			_, err := b.Send(ctx, SendRequest{Conv: c.ID, Branch: "main", Inputs: map1("text", "i has a apple")}, nil)
			if read := err != nil && strings.Contains(err.Error(), "tr.toml"); read != tc.wantRead || (err != nil && !read) {
				t.Errorf("Send: %v; want the agent file read again: %v", err, tc.wantRead)
			}
		})
	}
}
