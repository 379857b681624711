package adapter

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"
)

// Factory builds an adapter from the whole wire request object (the JSON the `wire`
// command reads), so an adapter with its own settings reads its own keys from it; for
// example a template adapter can read "template": {...}. chat and json ignore it.
type Factory func(spec json.RawMessage) (Adapter, error)

var (
	regMu    sync.RWMutex
	registry = map[string]Factory{}
)

// Register makes an adapter available by name (to `wire` and to anything that picks
// adapters by name). Call it from an init function; a second registration replaces the first.
func Register(name string, f Factory) {
	regMu.Lock()
	defer regMu.Unlock()
	registry[name] = f
}

// New builds the named adapter from a wire request object (may be nil).
func New(name string, spec json.RawMessage) (Adapter, error) {
	regMu.RLock()
	f, ok := registry[name]
	regMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("unknown adapter %q (known: %s)", name, joinNames(Names()))
	}
	return f(spec)
}

// Names lists the registered adapters, sorted.
func Names() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func joinNames(ns []string) string {
	s := ""
	for i, n := range ns {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

func init() {
	Register("chat", func(json.RawMessage) (Adapter, error) { return Chat{}, nil })
	Register("json", func(json.RawMessage) (Adapter, error) { return JSON{}, nil })
}
