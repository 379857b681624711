package cli

import (
	"testing"

	"github.com/sessionbench/sessionbench/core/limits/limitstest"
	"github.com/sessionbench/sessionbench/demo"
)

// FuzzScriptLine: a line of run --script is refused or read, whatever it holds, without
// panicking, with a short error.
func FuzzScriptLine(f *testing.F) {
	f.Add(`{"question":"I can't log in"}`)
	for _, v := range limitstest.JSON() {
		f.Add(`{"question":` + v + `}`)
		f.Add(v)
	}
	ag, ok := demo.Lookup("SupportAgent")
	if !ok {
		f.Fatal("no SupportAgent")
	}
	fields := ag.Signature().Inputs
	f.Fuzz(func(t *testing.T, line string) {
		_, err := runScriptLine(ag, fields, line)
		limitstest.CheckError(t, err)
	})
}
