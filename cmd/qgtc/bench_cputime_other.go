//go:build !unix

package main

import "time"

// processCPU is not available here: bench reports wall-clock figures only.
func processCPU() (time.Duration, bool) { return 0, false }
