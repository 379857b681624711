package storage

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// ErrBusy is returned when a branch already has a turn running in a live process.
var ErrBusy = errors.New("branch busy")

// Owner is the process a running turn belongs to: its pid on host. A turn whose owner is
// gone is interrupted: it may be resumed; a turn whose owner is alive keeps its branch
// busy. A turn in flight is known alive by the lock its process holds on the turn's
// journal (journal.go). Rows stored 'running' carry an owner that is gone (a journal
// imported after its process died), or were written by an earlier version of this
// program, which renewed a lease (LeaseUntil) while the turn ran.
type Owner struct {
	PID        int       `json:"pid"`
	Host       string    `json:"host"`
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	// Alive is false when the owner is gone: its process no longer exists, or, for a row
	// of an earlier version, its lease ran out.
	Alive bool `json:"alive"`

	id string // who wrote a stored owner ("journal": imported after its process died)
}

func (o *Owner) String() string {
	return fmt.Sprintf("process %d on %s", o.PID, o.Host)
}

// hostName is this machine's name as owners record it.
var hostName = sync.OnceValue(func() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "localhost"
	}
	return h
})

// ownerColumns are a turn's owner columns, in scanOwner's order.
const ownerColumns = `owner_pid, owner_host, owner_id, lease_until`

// scanOwner reads the owner columns; nil when the turn has no owner (it is not running).
func scanOwner(pid sql.NullInt64, host, id, lease sql.NullString) *Owner {
	if !id.Valid {
		return nil
	}
	o := &Owner{PID: int(pid.Int64), Host: host.String, LeaseUntil: parseTime(lease.String), id: id.String}
	o.Alive = o.alive(now())
	return o
}

// alive reports whether the owner may still be running its turn: its lease has not run
// out and, when it is on this host, its process exists. Another process of this host is
// believed gone as soon as its pid is, without waiting for the lease.
func (o *Owner) alive(t time.Time) bool {
	if o == nil || o.id == "" || !o.LeaseUntil.After(t) {
		return false
	}
	if o.Host == hostName() && o.PID != os.Getpid() {
		return processExists(o.PID)
	}
	return true
}

// busyError says which live process holds a branch.
func busyError(branch string, index int, key int64, o *Owner, started time.Time) error {
	return fmt.Errorf("storage: branch %q is busy: turn %d (id %d) is running in %s (started %s); wait for it, or stop that process: %w",
		branch, index, key, o, started.Local().Format("15:04:05"), ErrBusy)
}
