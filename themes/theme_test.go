package themes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuiltinsSetEveryColour(t *testing.T) {
	for _, name := range BuiltinNames() {
		th, ok := Builtin(name)
		if !ok {
			t.Fatalf("builtin %q missing", name)
		}
		for k, v := range paletteFields(&th.Colors) {
			if !colorRe.MatchString(*v) {
				t.Errorf("%s: colour %s = %q", name, k, *v)
			}
		}
		_ = th.Styles()
	}
}

func TestParse(t *testing.T) {
	cases := []struct {
		name, src, wantErr string
		check              func(t *testing.T, th Theme)
	}{
		{name: "override one colour", src: "name = \"mine\"\nbase = \"light\"\n[colors]\naccent = \"#ff0000\"\n",
			check: func(t *testing.T, th Theme) {
				if th.Name != "mine" || th.Colors.Accent != "#ff0000" || th.Colors.Fg != Light().Colors.Fg || th.Dark {
					t.Errorf("got %+v", th)
				}
			}},
		{name: "ansi number", src: "[colors]\nerror = \"196\"\n",
			check: func(t *testing.T, th Theme) {
				if th.Colors.Error != "196" || th.Name != "src" || !th.Dark {
					t.Errorf("got %+v", th)
				}
			}},
		{name: "unknown colour", src: "[colors]\nacent = \"#ff0000\"\n", wantErr: `theme: src.toml:2: colors.acent: unknown colour "acent"`},
		{name: "bad value", src: "[colors]\naccent = \"red\"\n", wantErr: `theme: src.toml:2: colors.accent: red: want "#rrggbb"`},
		{name: "unknown base", src: "base = \"sepia\"\n", wantErr: `theme: src.toml:1: base: unknown base theme "sepia"`},
		{name: "unknown key", src: "colour = 3\n", wantErr: `theme: src.toml:1: colour: unknown key`},
		{name: "bad toml", src: "[colors\n", wantErr: "theme: src.toml:2: expected"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			th, err := Parse([]byte(c.src), "src.toml")
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, th)
		})
	}
}

func TestResolveUserThemesFirst(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ocean.toml"), []byte("[colors]\naccent = \"#0000ff\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x.toml"), []byte("name = \"light\"\n[colors]\nfg = \"#111111\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	th, err := Resolve("ocean", dir)
	if err != nil || th.Colors.Accent != "#0000ff" {
		t.Fatalf("ocean: %+v %v", th, err)
	}
	th, err = Resolve("light", dir)
	if err != nil || th.Colors.Fg != "#111111" {
		t.Fatalf("user light should win over the built-in: %+v %v", th, err)
	}
	th, err = Resolve("high-contrast", filepath.Join(dir, "missing"))
	if err != nil || th.Name != "high-contrast" {
		t.Fatalf("built-in with no user dir: %+v %v", th, err)
	}
	if _, err := Resolve("nope", dir); err == nil || !strings.Contains(err.Error(), "ocean") {
		t.Fatalf("unknown theme error should list the available ones: %v", err)
	}
}
