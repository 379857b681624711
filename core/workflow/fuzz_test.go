package workflow_test

import (
	"testing"

	"github.com/sessionbench/sessionbench/core/limits/limitstest"
	"github.com/sessionbench/sessionbench/core/workflow"
	"github.com/sessionbench/sessionbench/demo"
)

// FuzzAgentFile: the agent-file compiler refuses or takes any bytes without panicking,
// TOML nested past the limit by arrays, inline tables, dotted keys and headers included,
// with a short error.
func FuzzAgentFile(f *testing.F) {
	for _, name := range demo.ExampleFiles() {
		data, err := demo.ExampleFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range limitstest.TOML() {
		f.Add([]byte("name = \"x\"\ninputs = [\"q\"]\noutputs = [\"a\"]\n" + s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := workflow.Parse("agent.toml", data, demo.Env())
		limitstest.CheckError(t, err)
	})
}
