//go:build !unix

package e2e

import "os"

func maxRSSMiB(*os.ProcessState) int64 { return 0 }
