//go:build !unix

package storage

import "time"

func cpuTime() time.Duration { return 0 }
