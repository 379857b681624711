package demo

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Names resolve through the configuration file, once each; bad names say which.
func TestNamedModels(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte("[[providers]]\nname = \"local\"\nbase_url = \"http://127.0.0.1:1/v1\"\nmodels = [\"tiny\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(string) string { return "" }
	r := NamedModels(context.Background(), cfg, env)
	d, err := r("demo")
	if err != nil || !strings.Contains(d.Name(), "demo") {
		t.Fatalf("demo: %v, %v", d, err)
	}
	d2, _ := r("demo")
	if d2 != d {
		t.Errorf("a name must be resolved once and reused")
	}
	m, err := r("tiny")
	if err != nil || m.Name() != "tiny" {
		t.Fatalf("configured model: %v, %v", m, err)
	}
	if _, err := r("gpt-unknown"); err == nil || !strings.Contains(err.Error(), `model "gpt-unknown" named by the agent`) {
		t.Fatalf("unresolvable name: %v", err)
	}
}
