package cli

import (
	"os/exec"
	"strings"
	"testing"
)

// The headless commands run without the terminal workbench: no Bubble Tea, Lip Gloss or
// Glamour in their import graph (they reach the engine through ui/sessions).
func TestNoTerminalUIDependencies(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command lists the imports: ", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "charm.land/") || dep == "github.com/sessionbench/sessionbench/ui" {
			t.Errorf("ui/cli depends on %s", dep)
		}
	}
}
