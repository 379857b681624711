package sessions

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
