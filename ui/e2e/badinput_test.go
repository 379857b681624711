package e2e

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// badInput is one hostile or broken input given to the real binary.
type badInput struct {
	name  string
	args  []string                        // after the binary; FILE is replaced by the file below
	file  func(t *testing.T, path string) // writes FILE (nil: no file)
	stdin func() io.Reader
	code  int
	want  string // in the one-line error
	// maxRSS bounds the process's peak memory in MiB (0: not checked): a limit that
	// reads on past its size would blow through it.
	maxRSS int64
}

// deepJSON is n open brackets: the smallest input that nests n deep.
func deepJSON(n int) string { return strings.Repeat("[", n) }

// wireRequest is a wire request whose input q is v (raw JSON text).
func wireRequest(v string) string {
	return `{"adapter":"chat","signature":{"instructions":"x","inputs":[{"name":"q","type":"str"}],` +
		`"outputs":[{"name":"a","type":"str"}]},"inputs":{"q":` + v + `}}`
}

func text(s string) func() io.Reader { return func() io.Reader { return strings.NewReader(s) } }

func writes(content string) func(*testing.T, string) {
	return func(t *testing.T, path string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// sparse makes a file of size bytes without writing them: size limits must refuse it
// before reading.
func sparse(size int64) func(*testing.T, string) {
	return func(t *testing.T, path string) {
		t.Helper()
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
	}
}

// zeros streams n zero bytes.
func zeros(n int64) func() io.Reader {
	return func() io.Reader { return io.LimitReader(zeroReader{}, n) }
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

const fiveMB = 5 << 20

// A corpus of bad inputs against the real binary: each exits with its code and one
// line of error saying what and where, never panics or overflows its stack, creates no
// database and writes nothing to standard output; the large ones stay within a memory
// bound.
func TestBadInputCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	deepSteps := "name = \"x\"\ninputs = [\"q\"]\noutputs = [\"a\"]\n[[steps]]\nname = \"s\"\n[[steps" +
		strings.Repeat(".steps", 100_000) + "]]\nname = \"t\"\n"
	cases := []badInput{
		{name: "wire format, 5 MB of [", args: []string{"wire", "format"}, stdin: text(deepJSON(fiveMB)), code: 2,
			want: "nested deeper than 1000 levels", maxRSS: 200},
		{name: "wire parse, deep value", args: []string{"wire", "parse"}, stdin: text(wireRequest(deepJSON(fiveMB))), code: 2,
			want: "line 1, column 1"},
		{name: "wire strategies, deep", args: []string{"wire", "strategies"}, stdin: text(deepJSON(fiveMB)), code: 2,
			want: "nested deeper than 1000 levels"},
		{name: "wire format, deep type", args: []string{"wire", "format"}, code: 2, want: "nested deeper than 200 levels",
			stdin: text(strings.Replace(wireRequest(`"x"`), `"type":"str"`, `"type":"`+strings.Repeat("list[", 200_000)+`str"`, 1))},
		{name: "wire format, invalid UTF-8", args: []string{"wire", "format"}, stdin: text(wireRequest("\"a\xffb\"")), code: 2,
			want: "invalid UTF-8 (byte 0xff)"},
		{name: "wire format, 100 MB on stdin", args: []string{"wire", "format"}, stdin: zeros(100 << 20), code: 2,
			want: "standard input is larger than 32 MiB", maxRSS: 200},
		{name: "ask, 100 MB on stdin", args: []string{"ask", "--model", "demo", "-"}, stdin: zeros(100 << 20), code: 2,
			want: "larger than 16 MiB", maxRSS: 200},
		{name: "ask, invalid UTF-8", args: []string{"ask", "--model", "demo", "-"}, stdin: text("hi \xc3("), code: 2,
			want: "invalid UTF-8"},
		{name: "import, deep", args: []string{"import", "FILE"}, file: writes(`{"version":2,"turns":` + deepJSON(200_000)), code: 2,
			want: "nested deeper than 1000 levels"},
		{name: "import, invalid UTF-8", args: []string{"import", "FILE"}, file: writes("{\"version\":2,\"turns\":[],\"x\":\"\xff\"}"), code: 2,
			want: "line 1, column 30: invalid UTF-8"},
		{name: "import, too large", args: []string{"import", "FILE"}, file: sparse(300 << 20), code: 2, want: "larger than 256 MiB"},
		{name: "import, not JSON", args: []string{"import", "FILE"}, file: writes("{\"version\": 2,"), code: 2, want: "session file"},
		{name: "import, a directory", args: []string{"import", "DIR"}, code: 2, want: "is a directory"},
		{name: "run --script, deep", args: []string{"run", "--agent", "SupportAgent", "--script", "FILE"},
			file: writes(`{"question":` + deepJSON(fiveMB) + "\n"), code: 2, want: "FILE:1: column 1012: nested deeper than 1000 levels"},
		{name: "run --script, invalid UTF-8", args: []string{"run", "--agent", "SupportAgent", "--script", "FILE"},
			file: writes("{\"question\":\"ok\"}\n{\"question\":\"\xfe\"}\n"), code: 2, want: "line 2, column 14: invalid UTF-8 (byte 0xfe)"},
		{name: "run --script, too large", args: []string{"run", "--agent", "SupportAgent", "--script", "FILE"},
			file: sparse(65 << 20), code: 2, want: "larger than 64 MiB"},
		{name: "run, agent file nested by headers", args: []string{"run", "--agent", "FILE", "--input", "q=x"},
			file: writes(deepSteps), code: 2, want: "FILE:6: nested deeper than 1000 levels", maxRSS: 200},
		{name: "run, agent file nested by arrays", args: []string{"run", "--agent", "FILE", "--input", "q=x"},
			file: writes("name = \"x\"\na = " + deepJSON(1<<20)), code: 2, want: "FILE:2: nested deeper than 1000 levels"},
		{name: "ask, configuration nested", args: []string{"ask", "--config", "FILE", "hi"},
			file: writes("[default]\nmodel = " + deepJSON(1<<20)), code: 2, want: "FILE:2: nested deeper than 1000 levels"},
		{name: "workbench, configuration too large", args: []string{"--config", "FILE"}, file: sparse(5 << 20), code: 2,
			want: "larger than 4 MiB"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws := newWorkspace(t)
			in := filepath.Join(ws.dir, "input")
			args := make([]string, len(c.args))
			for i, a := range c.args {
				switch a {
				case "FILE":
					a = in
				case "DIR":
					a = ws.dir
				}
				args[i] = a
			}
			if c.file != nil {
				c.file(t, in)
			}
			switch c.args[0] {
			case "wire":
			case "--config": // the workbench
				args = append(args, "--db", ws.db, "--model", "demo")
			default: // before a command's text (ask TEXT)
				args = append([]string{args[0], "--db", ws.db}, args[1:]...)
			}
			ctx, cancel := context.WithTimeout(context.Background(), cmdLimit)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary(t), args...)
			cmd.Env = ws.env()
			if c.stdin != nil {
				cmd.Stdin = c.stdin()
			}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("not done after %s", cmdLimit)
			}
			errText := strings.ReplaceAll(stderr.String(), in, "FILE")
			if got := exitCode(err); got != c.code {
				t.Errorf("exit %d, want %d; stderr:\n%.2000s", got, c.code, errText)
			}
			lines := strings.Split(strings.TrimRight(errText, "\n"), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], c.want) {
				t.Errorf("want one line of error containing %q, got %d line(s):\n%.2000s", c.want, len(lines), errText)
			}
			for _, crash := range []string{"panic", "goroutine ", "fatal error", "stack overflow"} {
				if strings.Contains(stderr.String(), crash) {
					t.Errorf("the process crashed (%q):\n%.2000s", crash, stderr.String())
				}
			}
			if len(errText) > 1000 {
				t.Errorf("the error is %d bytes long: it should say what and where, not echo the input", len(errText))
			}
			if stdout.Len() > 0 {
				t.Errorf("wrote to standard output:\n%.500s", stdout.String())
			}
			if _, err := os.Stat(ws.db); err == nil {
				t.Errorf("a database was created at %s", ws.db)
			}
			if rss := maxRSSMiB(cmd.ProcessState); c.maxRSS > 0 && rss > c.maxRSS {
				t.Errorf("peak memory %d MiB, want at most %d MiB", rss, c.maxRSS)
			}
		})
	}
}
