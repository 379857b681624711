package config

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/sessionbench/sessionbench/core/redact"
)

// OnWarning, when set, is told of problems that do not stop the program: a
// configuration file that holds a credential and that other users can read. The CLI and
// the workbench print it on standard error.
var OnWarning func(msg string)

var (
	warnedMu sync.Mutex
	warned   = map[string]bool{}
)

// warnExposed tells OnWarning, once per file, when the file at path holds a credential
// (a header carrying one, a key written into key_command, anything shaped like an API
// key) and its mode lets other users read it, with the chmod that fixes it.
func warnExposed(path string, data []byte, f *File) {
	if OnWarning == nil || runtime.GOOS == "windows" {
		return // Windows has no such mode bits
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm()&0o044 == 0 {
		return
	}
	what := credentials(data, f)
	if len(what) == 0 {
		return
	}
	warnedMu.Lock()
	defer warnedMu.Unlock()
	if warned[path] {
		return
	}
	warned[path] = true
	OnWarning(fmt.Sprintf("%s holds %s and other users can read it (mode %04o); make it private: chmod 600 %s",
		path, strings.Join(what, ", "), st.Mode().Perm(), shellQuote(path)))
}

// credentials lists where the file holds a credential.
func credentials(data []byte, f *File) []string {
	var what []string
	for i, p := range f.Providers {
		names := make([]string, 0, len(p.Headers))
		for k := range p.Headers {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if SecretHeader(k) && strings.TrimSpace(p.Headers[k]) != "" {
				what = append(what, fmt.Sprintf("a credential in providers[%d].headers.%s", i+1, k))
			}
		}
	}
	for n, line := range strings.Split(string(data), "\n") {
		// the shape alone: the keys registered so far (this file's headers, once it was
		// loaded) are reported by name above, or belong to another file
		if redact.Shaped(line) && !strings.HasPrefix(strings.TrimSpace(line), "#") {
			what = append(what, fmt.Sprintf("an API key on line %d", n+1))
		}
	}
	return what
}

// shellQuote quotes a path for a command the user may paste.
func shellQuote(s string) string {
	if strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '_' || r == '-' || r == '~' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
