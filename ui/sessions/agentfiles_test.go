package sessions

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/storage"
)

const okHead = `name = "t"
inputs = ["question"]
outputs = ["reply"]
[[predictors]]
name = "respond"
signature = "question -> reply"
`

// Agent files are found in every directory; broken ones and a second use of a name are
// reported, not loaded.
func TestFindAgents(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	write := func(dir, name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	good := okHead + "[[steps]]\nname = \"a\"\npredictor = \"respond\"\n"
	write(d1, "one.toml", good)
	write(d1, "broken.toml", okHead)
	write(d2, "two.toml", strings.Replace(good, `name = "t"`, `name = "other"`, 1))
	write(d2, "dup.toml", good)
	write(d2, "notes.txt", "not an agent")
	agents, errs := FindAgentsIn([]string{d1, d2, filepath.Join(d1, "missing")})
	var names []string
	for _, a := range agents {
		names = append(names, a.Name)
	}
	if strings.Join(names, ",") != "t,other" {
		t.Errorf("agents = %v", names)
	}
	all := ""
	for _, e := range errs {
		all += e.Error() + "\n"
	}
	if len(errs) != 2 || !strings.Contains(all, "broken.toml") || !strings.Contains(all, "has no steps") || !strings.Contains(all, `agent "t" is already defined`) {
		t.Errorf("errors:\n%s", all)
	}
	dirs := AgentDirs(func(k string) string { return map[string]string{"HOME": "/home/u"}[k] })
	if dirs[0] != "/home/u/.config/sessionbench/agents" || dirs[1] != "agents" {
		t.Errorf("dirs = %v", dirs)
	}
}

// A template_file is read relative to the agent file; a missing one is reported at its
// key.
func TestLoadAgentFileReadsTemplateFiles(t *testing.T) {
	dir := t.TempDir()
	text := okHead + "adapter = \"template\"\ntemplate_file = \"respond.json\"\n[[steps]]\nname = \"a\"\npredictor = \"respond\"\n"
	path := filepath.Join(dir, "t.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadAgentFile(path); err == nil || !strings.Contains(err.Error(), "t.toml:8: predictors[1].template_file:") {
		t.Fatalf("missing template file: %v", err)
	}
	tpl := `{"messages":[{"role":"user","content":"{question}"}]}`
	if err := os.WriteFile(filepath.Join(dir, "respond.json"), []byte(tpl), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := LoadAgentFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Build(); err != nil || a.Source != path {
		t.Fatalf("build: %v (source %q)", err, a.Source)
	}
}

// An edited template_file changes what the next Send sends, as an edited agent file
// does: the session kept between turns is not reused.
func TestEditedTemplateFileIsSent(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "t.toml")
	text := okHead + "adapter = \"template\"\ntemplate_file = \"respond.json\"\n[[steps]]\nname = \"a\"\npredictor = \"respond\"\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	tplPath := filepath.Join(dir, "respond.json")
	writeTpl := func(greeting string, at time.Time) {
		t.Helper()
		tpl := `{"messages":[{"role":"system","content":"` + greeting + `"},{"role":"user","content":"{question}"}],"parse_mode":"chat"}`
		if err := os.WriteFile(tplPath, []byte(tpl), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(tplPath, at, at); err != nil {
			t.Fatal(err)
		}
	}
	writeTpl("You are the first assistant.", time.Now())
	st, err := storage.Open(ctx, filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	model := &lastRequestLM{}
	a := New(st, model)
	a.SetAgentDirs()
	c, err := a.NewConversation(ctx, path, "")
	if err != nil {
		t.Fatal(err)
	}
	system := func() string {
		t.Helper()
		if _, err := a.Send(ctx, SendRequest{Conv: c.ID, Branch: storage.MainBranch, Inputs: question("hi")}, nil); err != nil {
			t.Fatal(err)
		}
		return model.last[0].Content
	}
	if got := system(); got != "You are the first assistant." {
		t.Fatalf("first request's system message %q", got)
	}
	writeTpl("You are the second assistant.", time.Now().Add(time.Minute))
	if got := system(); got != "You are the second assistant." {
		t.Fatalf("after the template file was edited, the system message is still %q", got)
	}
}

// lastRequestLM is instantLM remembering the last request's messages.
type lastRequestLM struct {
	instantLM
	last []lm.Message
}

func (m *lastRequestLM) Call(ctx context.Context, req lm.Request) (lm.Response, error) {
	m.last = req.Messages.Slice()
	return m.instantLM.Call(ctx, req)
}
