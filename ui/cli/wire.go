package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/sessionbench/sessionbench/core/adapter"
	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/py"
	"github.com/sessionbench/sessionbench/ui/termtext"
)

func init() {
	Register(Command{
		Name: "wire",
		Usage: append([]string{
			"wire format                  render a request's messages byte for byte (JSON on stdin)",
			"wire parse                   parse a completion into typed outputs (JSON on stdin)",
		}, StrategiesUsage...),
		Run:     runWire,
		Ordinal: 10,
	})
}

// Exit codes of the wire command.
const (
	wireOK       = 0
	wireParseErr = 1 // the completion did not parse (DSPy's AdapterParseError text on stderr)
	wireBadInput = 2 // bad JSON, unknown adapter, type or constraint (one line on stderr)
)

func runWire(ctx context.Context, env Env) int {
	if len(env.Args) > 0 && env.Args[0] == "strategies" {
		sub := env
		sub.Args = env.Args[1:]
		return runWireStrategies(ctx, sub)
	}
	if len(env.Args) == 0 || (env.Args[0] != "format" && env.Args[0] != "parse") {
		sub := ""
		if len(env.Args) > 0 {
			sub = env.Args[0]
		}
		if isHelp(sub) {
			printFlagHelp(env.Stdout, newFlags("wire"))
			return wireOK
		}
		return unknownSubcommand(env, "wire", sub)
	}
	sub := env.Args[0]
	// format and parse take no flags and no arguments: the request is on stdin.
	pos, code, done := parseFlags(env, newFlags("wire "+sub), env.Args[1:], false)
	if done {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(env.Stderr, "sessionbench wire %s: unexpected argument %q (the request is read from standard input)\n", sub, pos[0])
		return wireBadInput
	}
	bad := func(err error) int {
		// One line: say what and where, never a multi-line dump.
		fmt.Fprintf(env.Stderr, "wire %s: %s\n", sub, strings.ReplaceAll(err.Error(), "\n", " "))
		return wireBadInput
	}
	data, err := readInput(env.Stdin, "standard input", maxRequest)
	if err != nil {
		return bad(err)
	}
	req, err := adapter.DecodeWireRequest(data)
	if err != nil {
		return bad(err)
	}
	a, err := adapter.New(req.Adapter, req.Raw)
	if err != nil {
		return bad(&adapter.WireError{Path: "adapter", Err: err})
	}
	if sub == "format" {
		return wireFormat(env, a, req, bad)
	}
	return wireParse(env, a, req, bad)
}

func wireFormat(env Env, a adapter.Adapter, req *adapter.WireRequest, bad func(error) int) int {
	msgs, err := a.Format(adapter.Request{Signature: req.Signature, Demos: req.Demos, Inputs: req.Inputs})
	if err != nil {
		return bad(err)
	}
	if msgs == nil {
		msgs = []lm.Message{}
	}
	out, err := marshalJSON(struct {
		Messages []lm.Message `json:"messages"`
	}{msgs}, false)
	if err != nil {
		return bad(err)
	}
	_, _ = env.Stdout.Write(out)
	return wireOK
}

func wireParse(env Env, a adapter.Adapter, req *adapter.WireRequest, bad func(error) int) int {
	if !req.HasCompl {
		return bad(&adapter.WireError{Path: "completion", Err: errors.New("missing (wire parse needs the model's completion text)")})
	}
	outputs, err := a.Parse(req.Signature, req.Completion)
	if err != nil {
		fmt.Fprint(env.Stderr, err.Error())
		if !strings.HasSuffix(err.Error(), "\n") {
			fmt.Fprintln(env.Stderr)
		}
		return wireParseErr
	}
	out, err := marshalJSON(struct {
		Outputs json.RawMessage `json:"outputs"`
	}{json.RawMessage(py.CompactJSON(outputs))}, false)
	if err != nil {
		// NaN and infinities are not JSON; write them as Python's json.dumps would.
		out = termtext.EscapeJSON([]byte(`{"outputs":` + py.CompactJSON(outputs) + "}\n"))
	}
	_, _ = env.Stdout.Write(out)
	return wireOK
}
