package themes

import (
	"testing"

	"github.com/sessionbench/sessionbench/core/limits/limitstest"
)

// FuzzTheme: a theme file is refused or read, whatever its bytes, without panicking,
// with a short error.
func FuzzTheme(f *testing.F) {
	f.Add([]byte("name = \"mine\"\nbase = \"light\"\n[colors]\naccent = \"#ff8800\"\n"))
	for _, s := range limitstest.TOML() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := Parse(data, "theme.toml")
		limitstest.CheckError(t, err)
	})
}
