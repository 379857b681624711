package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/demo"
	"github.com/sessionbench/sessionbench/ui/sessions"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), Env{Args: args, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

func TestAgentsCommand(t *testing.T) {
	dir := t.TempDir()
	good, err := demo.ExampleFile("support.toml")
	if err != nil {
		t.Fatal(err)
	}
	goodPath := filepath.Join(dir, "support.toml")
	badPath := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(goodPath, good, 0o600); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(good), `predictor = "respond"`, `predictor = "reply"`, 1)
	if err := os.WriteFile(badPath, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	saved := agentCatalog
	agentCatalog = func() *sessions.Catalog { return sessions.NewCatalog(dir) }
	defer func() { agentCatalog = saved }()

	cases := []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"agents", "ls"}, 1, "file        question -> reply, intent", "bad.toml:35: steps[2].predictor: unknown predictor \"reply\""},
		{[]string{"agents", "show", "RAGAgent"}, 0, "no history: retriever", ""},
		{[]string{"agents", "show", "support"}, 0, "source:  " + goodPath, ""},
		{[]string{"agents", "show", "retry.toml"}, 0, `until = "is_valid"`, ""},
		{[]string{"agents", "show", "nobody"}, 1, "", `no agent "nobody"`},
		// the workbench's lookup: a path names an agent file too, found or not in the directories
		{[]string{"agents", "show", goodPath}, 0, "source:  " + goodPath, ""},
		{[]string{"agents", "show", filepath.Join(dir, "none.toml")}, 1, "", "no such file"},
		{[]string{"agents", "check", goodPath}, 0, `ok (agent "support": question -> reply, intent)`, ""},
		{[]string{"agents", "check", badPath}, 1, "", `unknown predictor "reply" (defined: classify, respond)`},
		{[]string{"agents", "check", filepath.Join(dir, "none.toml")}, 1, "", "no such file"},
		{[]string{"agents"}, 2, "", "missing subcommand; want one of: ls, show, check"},
		{[]string{"agents", "rm"}, 2, "", `unknown subcommand "rm"; want one of: ls, show, check`},
		{[]string{"agents", "show"}, 2, "", "sessionbench agents show: want NAME, got 0 argument(s)"},
		{[]string{"agents", "ls", "extra"}, 2, "", `want no arguments, got 1 argument(s) ("extra")`},
		{[]string{"agents", "check"}, 2, "", "want FILE..., got 0 argument(s)"},
		{[]string{"agents", "show", "--help"}, 0, "usage:\n  sessionbench agents show", ""},
		{[]string{"agents", "show", "--bogus", "x"}, 2, "", "sessionbench agents show: flag provided but not defined: -bogus"},
		{[]string{"agents", "--help"}, 0, "agents check FILE...", ""},
	}
	for _, c := range cases {
		code, out, errs := runCLI(t, c.args...)
		if c.code == 2 && out != "" { // usage errors print nothing on stdout
			t.Errorf("%v: an error printed on stdout: %s", c.args, out)
		}
		if code != c.code || !strings.Contains(out, c.out) || !strings.Contains(errs, c.err) {
			t.Errorf("%v: code %d\nstdout:\n%s\nstderr:\n%s", c.args, code, out, errs)
		}
	}
}

func TestAgentsJSON(t *testing.T) {
	dir := t.TempDir()
	good, err := demo.ExampleFile("support.toml")
	if err != nil {
		t.Fatal(err)
	}
	goodPath := filepath.Join(dir, "support.toml")
	badPath := filepath.Join(dir, "bad.toml")
	os.WriteFile(goodPath, good, 0o600)
	os.WriteFile(badPath, []byte(strings.Replace(string(good), `predictor = "respond"`, `predictor = "reply"`, 1)), 0o600)
	saved := agentCatalog
	agentCatalog = func() *sessions.Catalog { return sessions.NewCatalog(dir) }
	defer func() { agentCatalog = saved }()

	var ls struct {
		Agents []agentOut `json:"agents"`
		Files  []string   `json:"example_files"`
		Errors []string   `json:"errors"`
	}
	var show struct {
		agentOut
		Session agentSessionOut `json:"session"`
	}
	var check []agentCheckOut
	var toml map[string]string
	cases := []struct {
		args  []string
		code  int
		into  any
		check func() bool
	}{
		{[]string{"agents", "ls", "--json"}, 1, &ls, func() bool {
			return len(ls.Agents) == len(demo.Agents())+1 && ls.Agents[0].Kind == "built-in" && ls.Agents[len(ls.Agents)-1].Source == goodPath &&
				len(ls.Files) > 0 && len(ls.Errors) == 1 && strings.Contains(ls.Errors[0], "bad.toml:35")
		}},
		{[]string{"agents", "show", "--json", "RAGAgent"}, 0, &show, func() bool {
			return show.Name == "RAGAgent" && show.Session.NoHistory[0] == "retriever" && show.Session.Children["answerer"].ExcludeFields[0] == "documents"
		}},
		{[]string{"agents", "show", "retry.toml", "--json"}, 0, &toml, func() bool { return strings.Contains(toml["toml"], `until = "is_valid"`) }},
		{[]string{"agents", "check", "--json", goodPath, badPath}, 1, &check, func() bool {
			return len(check) == 2 && check[0].OK && check[0].Agent.Name == "support" && !check[1].OK &&
				strings.Contains(strings.Join(check[1].Errors, "\n"), `bad.toml:35: steps[2].predictor: unknown predictor "reply"`)
		}},
	}
	for _, c := range cases {
		code, out, errs := runCLI(t, c.args...)
		if err := json.Unmarshal([]byte(out), c.into); err != nil || code != c.code || !c.check() {
			t.Errorf("%v: exit %d, %v\nstdout: %s\nstderr: %s", c.args, code, err, out, errs)
		}
	}
}
