// Package e2e holds the workbench's end-to-end tests: they build the real sessionbench
// binary, run it in a detached tmux session on a private socket, type as a user would
// (tmux send-keys) and read the screen back (tmux capture-pane). They skip when tmux is
// not on PATH and under `go test -short`.
//
// The package has no code of its own beyond this comment; the driver is in
// driver_test.go, the scenarios in e2e_test.go.
package e2e
