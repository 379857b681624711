// Package redact keeps API keys out of every text that is shown, logged or stored:
// errors (a server's 401 body may quote the key it refused), HTTP tries, abort reasons
// and recorded responses. It removes the keys this process was configured with
// (Register) and anything shaped like an OpenAI-style secret key ("sk-" and a long
// token), wherever it came from.
package redact

import (
	"regexp"
	"strings"
	"sync"
)

// Mark replaces a key.
const Mark = "[key redacted]"

// MinKeyLen is the shortest configured key that is redacted: a local server's key may
// be any text ("x", "none"), and removing such words from every message would garble
// them without protecting anything.
const MinKeyLen = 8

var (
	mu   sync.RWMutex
	keys []string // longest first, so a key containing another is removed whole
)

// skToken is an OpenAI-style secret key (sk-..., sk-proj-..., sk-ant-...) starting a
// word (the text before it is kept in group 1).
var skToken = regexp.MustCompile(`(^|[^A-Za-z0-9_\-])sk-[A-Za-z0-9][A-Za-z0-9_\-]{15,}`)

// Register adds a key to redact from now on (keys shorter than MinKeyLen are ignored).
func Register(key string) {
	key = strings.TrimSpace(key)
	if len(key) < MinKeyLen {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	for _, k := range keys {
		if k == key {
			return
		}
	}
	i := 0
	for i < len(keys) && len(keys[i]) >= len(key) {
		i++
	}
	keys = append(keys[:i], append([]string{key}, keys[i:]...)...)
}

// String returns s with every registered key and every sk-shaped token replaced by Mark.
func String(s string) string {
	if s == "" {
		return s
	}
	mu.RLock()
	for _, k := range keys {
		if strings.Contains(s, k) {
			s = strings.ReplaceAll(s, k, Mark)
		}
	}
	mu.RUnlock()
	if strings.Contains(s, "sk-") {
		s = skToken.ReplaceAllString(s, "${1}"+Mark)
	}
	return s
}

// Shaped reports whether s holds an sk-shaped token, whatever keys are registered: text
// that looks like a key by itself (a configuration line that holds one).
func Shaped(s string) bool {
	return strings.Contains(s, "sk-") && skToken.MatchString(s)
}

// Error returns err with a redacted message; errors.Is and errors.As still see what it
// wraps. It is err itself when nothing needed redacting.
func Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if red := String(msg); red != msg {
		return &redacted{msg: red, err: err}
	}
	return err
}

type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }
