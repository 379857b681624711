package storage

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// ErrBusy is returned when a branch already has a turn running in a live process.
var ErrBusy = errors.New("branch busy")

// DefaultLease is how long a running turn's owner is believed alive without renewing its
// lease; the owner renews it every third of that while the turn runs.
const DefaultLease = 30 * time.Second

// Owner is the process a running turn belongs to: its pid on host, and the lease it
// renews while the turn runs. A turn whose owner is gone is interrupted: it may be
// resumed; a turn whose owner is alive keeps its branch busy.
type Owner struct {
	PID        int       `json:"pid"`
	Host       string    `json:"host"`
	LeaseUntil time.Time `json:"lease_until"`
	// Alive is false when the owner is gone: its lease ran out, or its process no longer
	// exists on this host.
	Alive bool `json:"alive"`

	id string // random per run: writes check it, so a taken-over turn refuses its old owner
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

// newOwner is an owner for a turn this process is about to run.
func (s *Store) newOwner() *Owner {
	var b [8]byte
	rand.Read(b[:])
	return &Owner{PID: os.Getpid(), Host: hostName(), LeaseUntil: now().Add(s.leaseDuration()), Alive: true, id: hex.EncodeToString(b[:])}
}

// SetLease changes the lease of the turns this store runs from now on (DefaultLease
// unless set; tests shorten it).
func (s *Store) SetLease(d time.Duration) {
	s.leaseMu.Lock()
	s.lease = d
	s.leaseMu.Unlock()
}

func (s *Store) leaseDuration() time.Duration {
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	if s.lease <= 0 {
		return DefaultLease
	}
	return s.lease
}

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
func busyError(branch string, key int64, o *Owner, started time.Time) error {
	return fmt.Errorf("storage: branch %q is busy: turn %d is running in %s (started %s, lease until %s); wait for it, or stop that process: %w",
		branch, key, o, started.Local().Format("15:04:05"), o.LeaseUntil.Local().Format("15:04:05"), ErrBusy)
}

// heartbeat renews a running turn's lease every third of the lease until stop is
// closed. It gives up (the lease then runs out) when the turn is no longer this owner's
// or the database cannot be written.
func (s *Store) heartbeat(id int64, o *Owner, stop <-chan struct{}) {
	every := s.leaseDuration() / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		// Not fsynced: a renewal lost with the machine only makes the lease look shorter
		// to whoever reads the file after the crash, when the owner is gone anyway.
		var renewed bool
		ctx := context.Background()
		err := s.writeLight(ctx, func(tx *wtx) error {
			res, err := tx.ExecContext(ctx, `UPDATE turns SET lease_until = ? WHERE id = ? AND owner_id = ? AND status = 'running'`,
				fmtTime(now().Add(s.leaseDuration())), id, o.id)
			if err != nil {
				return err
			}
			n, _ := res.RowsAffected()
			renewed = n == 1
			return nil
		})
		if err != nil || !renewed {
			return
		}
	}
}
