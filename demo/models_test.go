package demo

import (
	"context"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/llm/config"
)

// Names resolve through the configuration file, once each; bad names say which.
func TestNamedModels(t *testing.T) {
	cfg, err := config.Parse("config.toml", []byte("[[providers]]\nname = \"local\"\nbase_url = \"http://127.0.0.1:1/v1\"\nmodels = [\"tiny\"]\n"))
	if err != nil {
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
