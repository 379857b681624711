// Package limitstest gives the fuzz targets of every decoder of outside data the same
// hostile seeds (nested past limits.Depth, large, not UTF-8) and the same check of the
// errors they return.
package limitstest

import (
	"strings"
	"testing"

	"github.com/sessionbench/sessionbench/core/limits"
)

// Large is the size of the large seeds: big enough to show a decoder that copies or
// echoes its input, small enough that seeds run as fast unit tests (the benchmarks
// measure real sizes).
const Large = 256 << 10

// MaxError is the longest error message a decoder may return: errors say what and
// where, and quote input only as an excerpt (limits.Excerpt).
const MaxError = 16 << 10

// Deep returns open repeated n times followed by close repeated n times.
func Deep(open, close string, n int) string {
	return strings.Repeat(open, n) + strings.Repeat(close, n)
}

// JSON lists JSON values a decoder must refuse or read without trouble: nested just past
// limits.Depth and far past it (arrays, objects, unclosed), at the limit, a large string,
// a long flat list, invalid UTF-8 in a string, and numbers past float64 and int64.
func JSON() []string {
	d := limits.Depth
	return []string{
		Deep("[", "]", d+1),
		Deep(`{"a":`, "}", d+1),
		strings.Repeat("[", 20*d),
		Deep("[", "]", d-1),
		`"` + strings.Repeat("x", Large) + `"`,
		"[" + strings.Repeat("1,", Large/2) + "1]",
		"\"a\xffb\"",
		"1e400", "123456789012345678901234567890", "-0.0",
	}
}

// TOML lists TOML texts nested past limits.Depth by arrays, inline tables, dotted keys
// and table headers, and a large string.
func TOML() []string {
	d := limits.Depth
	return []string{
		"a = " + Deep("[", "]", d+1) + "\n",
		"a = " + Deep("{b = ", "}", d+1) + "\n",
		strings.Repeat("a.", d+1) + "a = 1\n",
		"[" + strings.Repeat("t.", d+1) + "t]\n",
		"[[steps]]\nname = \"s\"\n[[steps" + strings.Repeat(".steps", d+1) + "]]\nname = \"t\"\n",
		"a = \"" + strings.Repeat("x", Large) + "\"\n",
		"a = \"\xff\"\n",
	}
}

// CheckError fails the test when a decoder's error is too long to read: it must say
// what and where, not echo its input.
func CheckError(t *testing.T, err error) {
	t.Helper()
	if err != nil && len(err.Error()) > MaxError {
		t.Errorf("error of %d bytes (at most %d): %.300s…", len(err.Error()), MaxError, err.Error())
	}
}
