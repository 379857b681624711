package workflow

import (
	"sort"
	"strings"
	"time"

	"github.com/sessionbench/sessionbench/core/sig"
)

// Clock is what tools read the date from; tests pin it.
type Clock func() time.Time

// Tool is a tool steps can run (tool = "name"): the fields it reads and writes, and what
// it does. The application supplies its tools in Env; they should be safe (no shell).
type Tool struct {
	Inputs  []string
	Outputs []string
	Run     func(in *sig.Map, now time.Time) (*sig.Map, error)
}

// toolNames lists the tools an agent file may use, for error messages.
func (e Env) toolNames() string {
	ns := make([]string, 0, len(e.Tools))
	for n := range e.Tools {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return strings.Join(ns, ", ")
}
