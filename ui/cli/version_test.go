package cli

import (
	"runtime/debug"
	"testing"
)

func TestFormatVersion(t *testing.T) {
	set := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	tests := []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"go build in a clean checkout", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.0"},
			Settings: set("GOOS", "linux", "GOARCH", "amd64", "vcs.revision", "95c5ad7e", "vcs.time", "2026-01-02T03:04:05Z", "vcs.modified", "false")},
			"sessionbench v0.3.0\nrevision 95c5ad7e (committed 2026-01-02T03:04:05Z)\ngo1.26.8 linux/amd64\n"},
		{"uncommitted changes", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20260102030405-95c5ad7e0000+dirty"},
			Settings: set("GOOS", "darwin", "GOARCH", "arm64", "vcs.revision", "95c5ad7e", "vcs.modified", "true")},
			"sessionbench v0.0.0-20260102030405-95c5ad7e0000+dirty\nrevision 95c5ad7e (with uncommitted changes)\ngo1.26.8 darwin/arm64\n"},
		{"go run", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: set("GOOS", "linux", "GOARCH", "amd64")},
			"sessionbench (devel: built from a source tree without a version tag)\n" +
				"revision unknown (go run and go test record none; go build or go install in a checkout do)\ngo1.26.8 linux/amd64\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := formatVersion(&tc.info); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
