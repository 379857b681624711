// Command sessionbench is a terminal workbench for multi-step LLM programs.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/sessionbench/sessionbench/ui/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := cli.Main(ctx, cli.Env{Args: os.Args[1:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(code)
}
