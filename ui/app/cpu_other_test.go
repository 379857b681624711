//go:build !unix

package app

import "time"

func cpuTime() time.Duration { return 0 }
