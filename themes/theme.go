// Package themes holds the workbench's colours and the lipgloss styles derived from them:
// built-in dark, light and high-contrast themes, and user themes read from TOML files.
//
// A theme names colours only; the terminal's colour profile (and NO_COLOR) is applied by
// the renderer when the frame is written, so one theme serves every terminal.
package themes

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/sessionbench/sessionbench/core/tomlfile"
)

// Palette is every colour a theme sets, as "#rrggbb" or an ANSI number ("1", "208").
// The TOML keys are the snake_case field names.
type Palette struct {
	Fg          string `toml:"fg"`
	Muted       string `toml:"muted"`
	Accent      string `toml:"accent"`
	Border      string `toml:"border"`
	BorderFocus string `toml:"border_focus"`
	Title       string `toml:"title"`
	User        string `toml:"user"`
	Assistant   string `toml:"assistant"`
	System      string `toml:"system"`
	Error       string `toml:"error"`
	Warning     string `toml:"warning"`
	Success     string `toml:"success"`
	SelectionFg string `toml:"selection_fg"`
	SelectionBg string `toml:"selection_bg"`
	DiffAdd     string `toml:"diff_add"`
	DiffDel     string `toml:"diff_del"`
	Tip         string `toml:"tip"`
	StatusFg    string `toml:"status_fg"`
	StatusBg    string `toml:"status_bg"`
}

// Theme is a named palette plus the glamour style used for markdown answers.
type Theme struct {
	Name    string  `toml:"name"`
	Dark    bool    `toml:"dark"`
	Glamour string  `toml:"glamour"` // glamour standard style: "dark", "light", "notty", ...
	Colors  Palette `toml:"colors"`
}

// Dark is the default theme.
func Dark() Theme {
	return Theme{Name: "dark", Dark: true, Glamour: "dark", Colors: Palette{
		Fg: "#d0d0d0", Muted: "#808080", Accent: "#7aa2f7", Border: "#444444", BorderFocus: "#7aa2f7",
		Title: "#e0af68", User: "#9ece6a", Assistant: "#7dcfff", System: "#bb9af7",
		Error: "#f7768e", Warning: "#e0af68", Success: "#9ece6a",
		SelectionFg: "#1a1b26", SelectionBg: "#7aa2f7", DiffAdd: "#9ece6a", DiffDel: "#f7768e",
		Tip: "#ff9e64", StatusFg: "#c0caf5", StatusBg: "#24283b",
	}}
}

// Light suits light terminal backgrounds.
func Light() Theme {
	return Theme{Name: "light", Dark: false, Glamour: "light", Colors: Palette{
		Fg: "#303030", Muted: "#6b6b6b", Accent: "#2e59c7", Border: "#b0b0b0", BorderFocus: "#2e59c7",
		Title: "#8f5e00", User: "#2b7a0b", Assistant: "#006b8f", System: "#7a3eb1",
		Error: "#c4223e", Warning: "#8f5e00", Success: "#2b7a0b",
		SelectionFg: "#ffffff", SelectionBg: "#2e59c7", DiffAdd: "#2b7a0b", DiffDel: "#c4223e",
		Tip: "#b35900", StatusFg: "#303030", StatusBg: "#e4e4e4",
	}}
}

// HighContrast uses the 16 basic ANSI colours at full strength, for low vision and for
// terminals whose palettes make subtle colours unreadable.
func HighContrast() Theme {
	return Theme{Name: "high-contrast", Dark: true, Glamour: "dark", Colors: Palette{
		Fg: "15", Muted: "7", Accent: "14", Border: "15", BorderFocus: "11",
		Title: "11", User: "10", Assistant: "14", System: "13",
		Error: "9", Warning: "11", Success: "10",
		SelectionFg: "0", SelectionBg: "11", DiffAdd: "10", DiffDel: "9",
		Tip: "11", StatusFg: "0", StatusBg: "15",
	}}
}

// Builtin returns the built-in theme with that name.
func Builtin(name string) (Theme, bool) {
	switch strings.ToLower(name) {
	case "", "dark":
		return Dark(), true
	case "light":
		return Light(), true
	case "high-contrast", "highcontrast", "hc":
		return HighContrast(), true
	}
	return Theme{}, false
}

// BuiltinNames lists the built-in themes.
func BuiltinNames() []string { return []string{"dark", "light", "high-contrast"} }

// Dir is where user themes live: $XDG_CONFIG_HOME/sessionbench/themes (or ~/.config/...).
func Dir() string {
	base := os.Getenv("XDG_CONFIG_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(home, ".config")
	}
	return filepath.Join(base, "sessionbench", "themes")
}

var colorRe = regexp.MustCompile(`^(#[0-9a-fA-F]{6}|#[0-9a-fA-F]{3}|[0-9]{1,3})$`)

// Parse reads a theme from TOML. Colours left out are taken from the theme named by
// `base` ("dark" unless given), so a user theme may change a single colour.
func Parse(data []byte, source string) (Theme, error) {
	var raw struct {
		Name    string         `toml:"name"`
		Base    string         `toml:"base"`
		Dark    *bool          `toml:"dark"`
		Glamour string         `toml:"glamour"`
		Colors  map[string]any `toml:"colors"`
	}
	// Problems name the file, the line and the key, as in every TOML file of ours.
	doc, err := tomlfile.Decode(source, data, &raw)
	if err != nil {
		return Theme{}, fmt.Errorf("theme: %w", err)
	}
	if errs := doc.UnknownKeys(nil, nil); len(errs) > 0 {
		return Theme{}, fmt.Errorf("theme: %w", errs[0])
	}
	t, ok := Builtin(raw.Base)
	if !ok {
		return Theme{}, fmt.Errorf("theme: %w", doc.Errorf("base", "unknown base theme %q (built-in: %s)", raw.Base, strings.Join(BuiltinNames(), ", ")))
	}
	t.Name = raw.Name
	if t.Name == "" {
		t.Name = strings.TrimSuffix(filepath.Base(source), filepath.Ext(source))
	}
	if raw.Dark != nil {
		t.Dark = *raw.Dark
	}
	if raw.Glamour != "" {
		t.Glamour = raw.Glamour
	}
	fields := paletteFields(&t.Colors)
	keys := make([]string, 0, len(raw.Colors))
	for k := range raw.Colors {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		dst, ok := fields[k]
		if !ok {
			return Theme{}, fmt.Errorf("theme: %w", doc.Errorf("colors."+k, "unknown colour %q", k))
		}
		s, ok := raw.Colors[k].(string)
		if !ok || !colorRe.MatchString(s) {
			return Theme{}, fmt.Errorf("theme: %w", doc.Errorf("colors."+k, "%v: want \"#rrggbb\" or an ANSI number 0-255", raw.Colors[k]))
		}
		*dst = s
	}
	return t, nil
}

func paletteFields(p *Palette) map[string]*string {
	return map[string]*string{
		"fg": &p.Fg, "muted": &p.Muted, "accent": &p.Accent, "border": &p.Border,
		"border_focus": &p.BorderFocus, "title": &p.Title, "user": &p.User,
		"assistant": &p.Assistant, "system": &p.System, "error": &p.Error,
		"warning": &p.Warning, "success": &p.Success, "selection_fg": &p.SelectionFg,
		"selection_bg": &p.SelectionBg, "diff_add": &p.DiffAdd, "diff_del": &p.DiffDel,
		"tip": &p.Tip, "status_fg": &p.StatusFg, "status_bg": &p.StatusBg,
	}
}

// LoadDir reads every *.toml theme in dir. A missing directory is not an error.
func LoadDir(dir string) ([]Theme, error) {
	if dir == "" {
		return nil, nil
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.toml"))
	if err != nil {
		return nil, fmt.Errorf("themes in %s: %w", dir, err)
	}
	sort.Strings(files)
	var out []Theme
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("theme: %w", err)
		}
		t, err := Parse(data, f)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// Resolve finds a theme by name: user themes in dir first (so a user may override a
// built-in name), then the built-ins.
func Resolve(name, dir string) (Theme, error) {
	user, err := LoadDir(dir)
	if err != nil {
		return Theme{}, err
	}
	for _, t := range user {
		if strings.EqualFold(t.Name, name) {
			return t, nil
		}
	}
	if t, ok := Builtin(name); ok {
		return t, nil
	}
	names := BuiltinNames()
	for _, t := range user {
		names = append(names, t.Name)
	}
	return Theme{}, fmt.Errorf("unknown theme %q (available: %s)", name, strings.Join(names, ", "))
}

// C converts a palette entry to a colour.
func C(s string) color.Color { return lipgloss.Color(s) }
