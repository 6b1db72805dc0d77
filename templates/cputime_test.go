package templates

import (
	"time"

	"github.com/qgtc/qgtc/internal/cputime"
)

// processCPU is the process's CPU time so far (see internal/cputime).
func processCPU() (time.Duration, bool) { return cputime.Process() }
