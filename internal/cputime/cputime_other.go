//go:build !unix

package cputime

import "time"

// Process is not available here: callers report wall time only.
func Process() (time.Duration, bool) { return 0, false }
