// Package ui is the sessionbench terminal workbench: one root Bubble Tea model that routes
// focus, layout and backend results, and components in the bubbles shape (a transcript
// per branch, the editor, the call tree, the wire pane; as modals the compare view, the
// branch navigator, the conversation list, the forms). Everything it shows comes through
// the Backend interface (ui/sessions implements it), so it does not depend on how the
// engine, storage and models are wired.
package ui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/sessionbench/sessionbench/llm/config"
	"github.com/sessionbench/sessionbench/themes"
)

// Options configure Run.
type Options struct {
	// Theme names a theme (built-in or a user theme file); it overrides the config file.
	Theme string
	// Config is the configuration file already read (main reads it once for every
	// part); when nil, ConfigPath is read: "" means config.ConfigFile(), which may be
	// missing.
	Config     *config.File
	ConfigPath string
	// ThemeDir holds user themes; "" means config.ThemesDir().
	ThemeDir string
	// Models, when set with more than one model, opens the workbench on the model picker.
	Models *ModelChoice
	// SaveDir is where the compare view saves requests; "" means the current directory.
	SaveDir string
	// ReadOnly says why the database is read-only ("" when it is not): the header says
	// "read-only" and the status line why; anything that would change it fails.
	ReadOnly string
	// ProgramOptions are passed to tea.NewProgram (tests set input, output, size).
	ProgramOptions []tea.ProgramOption
}

// Setup resolves the theme and key map from options and the config file.
func Setup(opts Options) (themes.Theme, KeyMap, error) {
	th, keys, _, err := setup(opts)
	return th, keys, err
}

// setup also reports whether a theme was named; when none was, the workbench follows
// the terminal's background (light or dark).
func setup(opts Options) (themes.Theme, KeyMap, bool, error) {
	// The workbench reads its sections (theme, [keys]) of the one configuration file.
	cfg := opts.Config
	if cfg == nil {
		path, mustExist := opts.ConfigPath, true
		if path == "" {
			path, mustExist = config.ConfigFile(os.Getenv), false
		}
		var err error
		if cfg, err = config.Load(path, mustExist); err != nil {
			return themes.Theme{}, KeyMap{}, false, err
		}
	}
	keys := DefaultKeys()
	over := make(map[string][]string, len(cfg.Keys))
	for action, list := range cfg.Keys {
		over[action] = list
	}
	if err := keys.Rebind(over); err != nil {
		var re *RebindError
		if errors.As(err, &re) {
			// where it is in the file, as every other configuration problem
			return themes.Theme{}, KeyMap{}, false, cfg.Errorf("keys."+re.Action, "%s", re.Msg)
		}
		return themes.Theme{}, KeyMap{}, false, fmt.Errorf("%s: %w", cfg.Name(), err)
	}
	name := cfg.Theme
	if opts.Theme != "" {
		name = opts.Theme
	}
	dir := opts.ThemeDir
	if dir == "" {
		dir = config.ThemesDir(os.Getenv)
	}
	th, err := themes.Resolve(name, dir)
	if err != nil {
		return themes.Theme{}, KeyMap{}, false, err
	}
	return th, keys, name != "", nil
}

// ErrTurnInterrupted is Run's answer when ctx ended while a turn was running: the turn
// is left interrupted, resumable (the next start offers it).
var ErrTurnInterrupted = errors.New("a turn that was running is left interrupted, resumable ('sessionbench session pending' lists it)")

// Run starts the workbench on the terminal and returns when the user quits or ctx ends.
// Signals are the caller's: main turns SIGINT, SIGTERM and SIGHUP into ctx's end (a
// running turn is then left interrupted). Bubble Tea's own handler stays off: it would
// race that cancellation, block sending its quit message to a program already stopped,
// and hang the shutdown for good.
func Run(ctx context.Context, b Backend, opts Options) error {
	th, keys, named, err := setup(opts)
	if err != nil {
		return err
	}
	m := New(ctx, b, th, keys)
	m.autoTheme = !named
	m.SetPoll(time.Second)
	if opts.SaveDir != "" {
		m.SetSaveDir(opts.SaveDir)
	}
	if opts.ReadOnly != "" {
		m.e.readOnly = opts.ReadOnly
		m.e.status.set("read-only: " + opts.ReadOnly + "; conversations can be read, nothing can be changed")
	}
	if opts.Models != nil && len(opts.Models.Models) > 1 {
		m.OfferModels(*opts.Models)
	}
	popts := append([]tea.ProgramOption{tea.WithContext(ctx), tea.WithoutSignalHandler()}, opts.ProgramOptions...)
	p := tea.NewProgram(m, popts...)
	_, err = p.Run()
	running := m.runner.active()
	m.runner.wait(5 * time.Second)
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		if running {
			return ErrTurnInterrupted
		}
		return nil // interrupted: a normal way to leave
	}
	if err != nil {
		return fmt.Errorf("workbench: %w", err)
	}
	return nil
}
