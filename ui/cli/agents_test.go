package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/demo"
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
	saved := agentSearch
	agentSearch = func() ([]demo.Agent, []error) { return demo.FindAgentsIn([]string{dir}) }
	defer func() { agentSearch = saved }()

	cases := []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"agents", "ls"}, 1, "file        question -> reply, intent", "bad.toml:34: steps[2].predictor: unknown predictor \"reply\""},
		{[]string{"agents", "show", "RAGAgent"}, 0, "no history: retriever", ""},
		{[]string{"agents", "show", "support"}, 0, "source:  " + goodPath, ""},
		{[]string{"agents", "show", "retry.toml"}, 0, `until = "is_valid"`, ""},
		{[]string{"agents", "show", "nobody"}, 1, "", `no agent "nobody"`},
		{[]string{"agents", "check", goodPath}, 0, `ok (agent "support": question -> reply, intent)`, ""},
		{[]string{"agents", "check", badPath}, 1, "", `unknown predictor "reply" (defined: classify, respond)`},
		{[]string{"agents", "check", filepath.Join(dir, "none.toml")}, 1, "", "no such file"},
		{[]string{"agents"}, 2, "", "want 'agents ls'"},
	}
	for _, c := range cases {
		code, out, errs := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(out, c.out) || !strings.Contains(errs, c.err) {
			t.Errorf("%v: code %d\nstdout:\n%s\nstderr:\n%s", c.args, code, out, errs)
		}
	}
}
