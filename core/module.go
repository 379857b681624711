// Package core is the session engine: modules and predictors, sessions that record one
// turn per user-facing call and inject history into every inner predictor, call records,
// cascading edits, examples and save files. It has no UI, SQL or HTTP.
package core

import (
	"context"
	"fmt"

	"github.com/sessionbench/sessionbench/core/sig"
)

// Prediction is what a module returns: named output values in order.
type Prediction struct {
	Fields *sig.Map
}

// NewPrediction builds a prediction from alternating name, value arguments.
func NewPrediction(kv ...any) *Prediction { return &Prediction{Fields: sig.NewMap(kv...)} }

// Get returns a field's value (nil when absent).
func (p *Prediction) Get(name string) any {
	if p == nil {
		return nil
	}
	v, _ := p.Fields.Get(name)
	return v
}

// String returns a field rendered with Python's str() ("" when absent).
func (p *Prediction) String(name string) string {
	if p == nil {
		return ""
	}
	return p.Fields.String(name)
}

// Bool returns a bool field (false when absent or not a bool).
func (p *Prediction) Bool(name string) bool {
	b, _ := p.Get(name).(bool)
	return b
}

// Module is a program: a predictor, a composition of modules, or a session.
type Module interface {
	Forward(ctx context.Context, inputs *sig.Map) (*Prediction, error)
}

// Sub is a named sub-module, the Go form of a module attribute in DSPy.
type Sub struct {
	Name   string
	Module Module
}

// Composite is implemented by modules made of other modules. Sessions walk it to find
// predictors (recursive sessions) and nested sessions; names join into dotted paths.
type Composite interface {
	Submodules() []Sub
}

// Named is implemented by modules that want a display name other than their Go type.
type Named interface {
	TypeName() string
}

// TypeName is the predictor or module type shown in call records ("Predict", "SupportAgent").
func TypeName(m Module) string {
	if n, ok := m.(Named); ok {
		return n.TypeName()
	}
	t := fmt.Sprintf("%T", m)
	for i := len(t) - 1; i >= 0; i-- {
		if t[i] == '.' || t[i] == '*' {
			return t[i+1:]
		}
	}
	return t
}

// Call invokes a sub-module. It is module(...) in DSPy terms: when a session wraps the
// sub-module (recursive="modules" or a nested session), the call is routed through it;
// otherwise it is m.Forward. Predictors are intercepted either way.
func Call(ctx context.Context, m Module, inputs *sig.Map) (*Prediction, error) {
	if f := frameFrom(ctx); f != nil {
		if ch := f.root.childFor(m); ch != nil && ch.kind == childModule {
			return ch.session.forwardNested(ctx, f, inputs)
		}
	}
	return m.Forward(ctx, inputs)
}

// Program is a module defined by a function, with its sub-modules listed for walking.
type Program struct {
	Name string
	Subs []Sub
	Fn   func(ctx context.Context, inputs *sig.Map) (*Prediction, error)
}

// Forward runs the function.
func (p *Program) Forward(ctx context.Context, inputs *sig.Map) (*Prediction, error) {
	return p.Fn(ctx, inputs)
}

// Submodules lists the program's parts.
func (p *Program) Submodules() []Sub { return p.Subs }

// TypeName is the program's name.
func (p *Program) TypeName() string {
	if p.Name == "" {
		return "Program"
	}
	return p.Name
}

// walk visits every sub-module depth-first with its dotted path, not descending into
// sessions (a nested session owns its own tree).
func walk(m Module, prefix string, f func(path string, m Module)) {
	c, ok := m.(Composite)
	if !ok {
		return
	}
	for _, s := range c.Submodules() {
		if s.Module == nil {
			continue
		}
		path := s.Name
		if prefix != "" {
			path = prefix + "." + s.Name
		}
		f(path, s.Module)
		if _, isSession := s.Module.(*Session); !isSession {
			walk(s.Module, path, f)
		}
	}
}
