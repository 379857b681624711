// Package ui is the sessionbench terminal workbench: one root Bubble Tea model whose panes
// (chat transcripts per branch, input editor, call tree, wire preview, branch navigator,
// conversation list, compare view) are plain components drawn into rectangles. Everything
// it shows comes through the Backend interface, so it does not depend on how the engine,
// storage and models are wired.
package ui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/BurntSushi/toml"
	"github.com/sessionbench/sessionbench/themes"
)

// Options configure Run.
type Options struct {
	// Theme names a theme (built-in or a user theme file); it overrides the config file.
	Theme string
	// ConfigPath is the config file; "" means DefaultConfigPath(). A missing file is fine.
	ConfigPath string
	// ThemeDir holds user themes; "" means themes.Dir().
	ThemeDir string
	// ProgramOptions are passed to tea.NewProgram (tests set input, output, size).
	ProgramOptions []tea.ProgramOption
}

// Config is the workbench's part of the config file: other sections are ignored, so the
// file can be shared with the rest of sessionbench.
//
//	theme = "light"
//	[keys]
//	fork = ["F"]
//	undo = ["ctrl+z", "u"]
type Config struct {
	Theme string              `toml:"theme"`
	Keys  map[string][]string `toml:"keys"`
}

// DefaultConfigPath is $XDG_CONFIG_HOME/sessionbench/config.toml.
func DefaultConfigPath() string {
	dir := filepath.Dir(themes.Dir())
	if dir == "." {
		return ""
	}
	return filepath.Join(dir, "config.toml")
}

// LoadConfig reads the config file; a missing file gives the zero Config.
func LoadConfig(path string) (Config, error) {
	var c Config
	if path == "" {
		return c, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	if _, err := toml.Decode(string(data), &c); err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// Setup resolves the theme and key map from options and the config file.
func Setup(opts Options) (themes.Theme, KeyMap, error) {
	th, keys, _, err := setup(opts)
	return th, keys, err
}

// setup also reports whether a theme was named; when none was, the workbench follows
// the terminal's background (light or dark).
func setup(opts Options) (themes.Theme, KeyMap, bool, error) {
	path := opts.ConfigPath
	if path == "" {
		path = DefaultConfigPath()
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		return themes.Theme{}, KeyMap{}, false, err
	}
	keys := DefaultKeys()
	if err := keys.Rebind(cfg.Keys); err != nil {
		return themes.Theme{}, KeyMap{}, false, fmt.Errorf("config %s: %w", path, err)
	}
	name := cfg.Theme
	if opts.Theme != "" {
		name = opts.Theme
	}
	dir := opts.ThemeDir
	if dir == "" {
		dir = themes.Dir()
	}
	th, err := themes.Resolve(name, dir)
	if err != nil {
		return themes.Theme{}, KeyMap{}, false, err
	}
	return th, keys, name != "", nil
}

// Run starts the workbench on the terminal and returns when the user quits or ctx ends.
func Run(ctx context.Context, b Backend, opts Options) error {
	th, keys, named, err := setup(opts)
	if err != nil {
		return err
	}
	m := New(ctx, b, th, keys)
	m.autoTheme = !named
	popts := append([]tea.ProgramOption{tea.WithContext(ctx)}, opts.ProgramOptions...)
	p := tea.NewProgram(m, popts...)
	_, err = p.Run()
	m.waitRuns(5 * time.Second)
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // interrupted: a normal way to leave
	}
	if err != nil {
		return fmt.Errorf("workbench: %w", err)
	}
	return nil
}

// waitRuns gives a turn cancelled by quitting the time to finish: the backend drops its
// pending record when the cancelled call returns, and a process that exits first leaves
// the turn in flight in the database. The wait is bounded in case a backend hangs.
func (m *Model) waitRuns(limit time.Duration) {
	done := make(chan struct{})
	go func() {
		m.runs.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(limit):
	}
}
