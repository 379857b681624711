package cli

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/sessionbench/sessionbench/"

// The headless commands run without the terminal workbench: no package of this module
// they import, directly or not, imports Bubble Tea, Lip Gloss, Glamour or the workbench
// (they reach the engine through ui/sessions). The imports are read from the sources, so
// the test needs no go command.
func TestNoTerminalUIDependencies(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{} // package -> the package that imports it
	var visit func(pkg string)
	visit = func(pkg string) {
		dir := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(pkg, module)))
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("package %s: no Go files in %s (%v)", pkg, dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range file.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if strings.HasPrefix(path, "charm.land/") || path == module+"ui" {
					t.Errorf("%s imports %s (via %s)", pkg, path, chain(seen, pkg))
				}
				if strings.HasPrefix(path, module) {
					if _, ok := seen[path]; !ok {
						seen[path] = pkg
						visit(path)
					}
				}
			}
		}
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	seen[module+"ui/cli"] = ""
	visit(module + "ui/cli")
	if _, ok := seen[module+"ui/sessions"]; !ok {
		t.Error("ui/cli does not reach the engine through ui/sessions any more: update this test")
	}
}

// chain is the import path from ui/cli to pkg.
func chain(seen map[string]string, pkg string) string {
	var out []string
	for p := pkg; p != ""; p = seen[p] {
		out = append([]string{strings.TrimPrefix(p, module)}, out...)
	}
	return strings.Join(out, " -> ")
}
