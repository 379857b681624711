package cli

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
)

func init() {
	Register(Command{
		Name:    "version",
		Usage:   []string{"version                      the module version and VCS revision of this binary (also --version)"},
		Run:     runVersion,
		Ordinal: 90,
	})
}

func runVersion(ctx context.Context, env Env) int {
	fs := newFlags("version")
	pos, code, done := parseFlags(env, fs, env.Args, false)
	if done {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(env.Stderr, "sessionbench version: unexpected argument %q\n", pos[0])
		return 2
	}
	fmt.Fprint(env.Stdout, Version())
	return 0
}

// Version describes this binary: the module version, then the VCS revision it was built
// from, from the build information the go command embeds.
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "sessionbench: no build information (built without module support)\n"
	}
	return formatVersion(info)
}

// formatVersion is Version over given build information. `go build` in a checkout
// records the revision; `go run` and `go test` do not, which the text says.
func formatVersion(info *debug.BuildInfo) string {
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	version := info.Main.Version
	if version == "" || version == "(devel)" {
		version = "(devel: built from a source tree without a version tag)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "sessionbench %s\n", version)
	if rev := settings["vcs.revision"]; rev != "" {
		var notes []string
		if t := settings["vcs.time"]; t != "" {
			notes = append(notes, "committed "+t)
		}
		if settings["vcs.modified"] == "true" {
			notes = append(notes, "with uncommitted changes")
		}
		fmt.Fprintf(&b, "revision %s", rev)
		if len(notes) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(notes, ", "))
		}
		b.WriteString("\n")
	} else {
		b.WriteString("revision unknown (go run and go test record none; go build or go install in a checkout do)\n")
	}
	fmt.Fprintf(&b, "%s %s/%s\n", info.GoVersion, settings["GOOS"], settings["GOARCH"])
	return b.String()
}
