// Package config is where sessionbench keeps its files and what its configuration file
// says: the XDG paths (one rule on every system, macOS included, as Charm's tools do),
// config.toml decoded once into every section, and TOML errors that name the file, the
// line and the key (config.toml and agent files alike).
package config

import (
	"fmt"
	"path/filepath"
	"runtime"
)

// Env reads an environment variable (os.Getenv in production, a map in tests).
type Env func(string) string

// app is the folder name under each XDG base directory.
const app = "sessionbench"

// base is an XDG base directory: $name when it is an absolute path (the spec says to
// ignore a relative one), else home/fallback. "" when neither is known.
func base(getenv Env, name, fallback string) string {
	if dir := getenv(name); dir != "" && filepath.IsAbs(dir) {
		return dir
	}
	home := getenv("HOME")
	if home == "" && runtime.GOOS == "windows" {
		home = getenv("USERPROFILE")
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, fallback)
}

// ConfigDir is $XDG_CONFIG_HOME/sessionbench (~/.config/sessionbench); "" when neither
// XDG_CONFIG_HOME nor HOME is set.
func ConfigDir(getenv Env) string {
	b := base(getenv, "XDG_CONFIG_HOME", ".config")
	if b == "" {
		return ""
	}
	return filepath.Join(b, app)
}

// ConfigFile is the configuration file, ConfigDir/config.toml ("" when unknown).
func ConfigFile(getenv Env) string { return under(ConfigDir(getenv), "config.toml") }

// ThemesDir holds user themes, ConfigDir/themes ("" when unknown).
func ThemesDir(getenv Env) string { return under(ConfigDir(getenv), "themes") }

// AgentsDir holds the user's agent files, ConfigDir/agents ("" when unknown).
func AgentsDir(getenv Env) string { return under(ConfigDir(getenv), "agents") }

// DatabaseFile is $XDG_DATA_HOME/sessionbench/sessionbench.db
// (~/.local/share/sessionbench/sessionbench.db).
func DatabaseFile(getenv Env) (string, error) {
	b := base(getenv, "XDG_DATA_HOME", filepath.Join(".local", "share"))
	if b == "" {
		return "", fmt.Errorf("no place for the database: neither XDG_DATA_HOME nor HOME is set (pass --db PATH)")
	}
	return filepath.Join(b, app, "sessionbench.db"), nil
}

func under(dir, name string) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, name)
}
