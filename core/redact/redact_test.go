package redact_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sessionbench/sessionbench/core/redact"
)

func TestString(t *testing.T) {
	redact.Register("my-configured-key-123")
	redact.Register("short") // too short to redact
	cases := []struct{ in, want string }{
		{"no secret here", "no secret here"},
		{`{"error":{"message":"Incorrect API key provided: my-configured-key-123"}}`, `{"error":{"message":"Incorrect API key provided: [key redacted]"}}`},
		{"key sk-proj-AbCdEf0123456789_xyz-1 refused", "key [key redacted] refused"},
		{"sk-ant-api03-aaaaaaaaaaaaaaaaaaaa and sk-bbbbbbbbbbbbbbbbbbbbbbbb", "[key redacted] and [key redacted]"},
		{"a task-list-item-long-enough stays", "a task-list-item-long-enough stays"},
		{"sk-short stays", "sk-short stays"},
		{"the short word stays", "the short word stays"},
	}
	for _, c := range cases {
		if got := redact.String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestShaped: only the shape of a key counts, not the keys registered.
func TestShaped(t *testing.T) {
	redact.Register("registered-not-shaped-key")
	for _, c := range []struct {
		in   string
		want bool
	}{
		{`key_command = "echo sk-abcdefghijklmnopqrstu"`, true},
		{"sk-proj-AbCdEf0123456789_xyz-1", true},
		{`headers = { Authorization = "Bearer registered-not-shaped-key" }`, false},
		{"task-list-item-long-enough", false},
		{"sk-short", false},
		{"", false},
	} {
		if got := redact.Shaped(c.in); got != c.want {
			t.Errorf("Shaped(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestError(t *testing.T) {
	redact.Register("another-key-456789")
	err := redact.Error(fmt.Errorf("HTTP 401: bad key another-key-456789: %w", context.Canceled))
	if err.Error() != "HTTP 401: bad key [key redacted]: context canceled" || !errors.Is(err, context.Canceled) {
		t.Errorf("got %q (is Canceled: %v)", err, errors.Is(err, context.Canceled))
	}
	plain := errors.New("nothing secret")
	if redact.Error(plain) != plain {
		t.Error("an error with nothing to redact should come back as it was")
	}
}
