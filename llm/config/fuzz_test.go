package config_test

import (
	"testing"

	"github.com/sessionbench/sessionbench/core/limits/limitstest"
	"github.com/sessionbench/sessionbench/llm/config"
)

// FuzzConfig: config.toml is refused or read, whatever its bytes, without panicking,
// with a short error.
func FuzzConfig(f *testing.F) {
	f.Add([]byte("[default]\nprovider = \"openai\"\nmodel = \"gpt-4o-mini\"\n\n[[providers]]\nname = \"openai\"\n" +
		"base_url = \"https://api.openai.com/v1\"\napi_key_env = \"OPENAI_API_KEY\"\nmodels = [\"gpt-4o-mini\"]\n\n[keys]\nquit = [\"q\"]\n"))
	for _, s := range limitstest.TOML() {
		f.Add([]byte(s))
		f.Add([]byte("[[providers]]\nname = \"p\"\nbase_url = \"http://x\"\n" + s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := config.Parse("config.toml", data)
		limitstest.CheckError(t, err)
	})
}
