package cli

import (
	"context"
	"errors"
	"os"
	"syscall"

	"github.com/sessionbench/sessionbench/core/trace"
)

// exitInterrupted is the exit code of a command stopped by Ctrl+C (128 + SIGINT); after
// SIGTERM it is 143 and after SIGHUP 129 (128 + the signal's number, as shells report).
// The others (storeOK, storeError, storeUsage) are in session.go.
const exitInterrupted = 130

// Interrupt is the cause main cancels the context with when the process gets a signal
// (SIGINT, SIGTERM, SIGHUP): the turn running then is left interrupted, resumable with
// 'session retry', and the command exits with 128 + the signal's number.
type Interrupt struct{ Signal os.Signal }

func (i Interrupt) Error() string { return "interrupted by " + signalName(i.Signal) }

// signalName is the name users know a signal by ("SIGTERM", not Go's "terminated").
func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "SIGINT (Ctrl+C)"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return s.String()
}

// Is makes an Interrupt an trace.ErrInterrupted, which is how the engine tells an
// interrupted turn from one the user cancelled.
func (i Interrupt) Is(target error) bool { return target == trace.ErrInterrupted }

// Code is the exit code after the signal.
func (i Interrupt) Code() int {
	if s, ok := i.Signal.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return exitInterrupted
}

// interruptCode is the exit code of a command whose context ended: 128 + the signal
// number when a signal ended it, else 130.
func interruptCode(ctx context.Context) int {
	var in Interrupt
	if errors.As(context.Cause(ctx), &in) {
		return in.Code()
	}
	return exitInterrupted
}
