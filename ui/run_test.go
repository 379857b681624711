package ui_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/ui"
)

func TestSetupReadsConfigAndFlag(t *testing.T) {
	dir := t.TempDir()
	themeDir := filepath.Join(dir, "themes")
	if err := os.MkdirAll(themeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(themeDir, "dusk.toml"), []byte("[colors]\naccent = \"#123456\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte("theme = \"dusk\"\n[keys]\nfork = [\"F\"]\n[default]\nmodel = \"demo\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	th, keys, err := ui.Setup(ui.Options{ConfigPath: cfg, ThemeDir: themeDir})
	if err != nil {
		t.Fatal(err)
	}
	if th.Name != "dusk" || keys.Fork.Keys()[0] != "F" {
		t.Fatalf("theme %q fork %v", th.Name, keys.Fork.Keys())
	}
	th, _, err = ui.Setup(ui.Options{ConfigPath: cfg, ThemeDir: themeDir, Theme: "light"})
	if err != nil || th.Name != "light" {
		t.Fatalf("the flag should override the config: %q %v", th.Name, err)
	}
	if err := os.WriteFile(cfg, []byte("[keys]\nfrob = [\"x\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ui.Setup(ui.Options{ConfigPath: cfg, ThemeDir: themeDir}); err == nil || !strings.Contains(err.Error(), cfg) {
		t.Fatalf("a bad key name should be reported with the file: %v", err)
	}
	if _, _, err := ui.Setup(ui.Options{ConfigPath: filepath.Join(dir, "absent.toml"), ThemeDir: themeDir}); err == nil || !strings.Contains(err.Error(), "absent.toml") {
		t.Fatalf("a config file named on the command line must exist: %v", err)
	}
}

// A [keys] entry may name one key as a string, or several as a list.
func TestSetupTakesOneKeyOrAList(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte("[keys]\nfork = \"F\"\nundo = [\"U\", \"ctrl+z\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, keys, err := ui.Setup(ui.Options{ConfigPath: path})
	if err != nil {
		t.Fatal(err)
	}
	if got := keys.Fork.Keys(); !slices.Equal(got, []string{"F"}) {
		t.Errorf("fork = %q, want [F]", got)
	}
	if got := keys.Undo.Keys(); !slices.Equal(got, []string{"U", "ctrl+z"}) {
		t.Errorf("undo = %q, want [U ctrl+z]", got)
	}
}

// A bad [keys] entry is reported like every other configuration problem: file, line
// and key.
func TestSetupLocatesBadKeys(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"unknown action", "theme = \"dark\"\n\n[keys]\nfork = [\"F\"]\nfrobnicate = [\"x\"]\n", `:5: keys.frobnicate: unknown action "frobnicate"`},
		{"no keys", "[keys]\n\nundo = []\n", `:3: keys.undo: action "undo" has no keys`},
		{"not a key", "[keys]\nundo = 5\n", `:2`},
		{"not a key in a list", "[keys]\nundo = [\"u\", 5]\n", `:2`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.toml")
			if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err := ui.Setup(ui.Options{ConfigPath: path})
			if err == nil || !strings.HasPrefix(err.Error(), path+tc.want) {
				t.Fatalf("error %v, want it to start %q", err, path+tc.want)
			}
		})
	}
}
