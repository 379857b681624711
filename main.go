// Command sessionbench is a terminal workbench for multi-step LLM programs.
package main

import (
	"fmt"
	"os"
)

const usage = `sessionbench: a workbench for multi-step LLM programs

usage: sessionbench <command> [flags]

commands:
  wire format    render a signature + inputs as exact chat messages (JSON on stdin)
  wire parse     parse a completion into typed outputs (JSON on stdin)
  help           show this text
`

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Print(usage)
		return 0
	}
	fmt.Fprintf(os.Stderr, "sessionbench: unknown command %q\n\n%s", args[0], usage)
	return 2
}
