//go:build !unix

package layers

// qCPUTime is -1 where getrusage is missing.
func qCPUTime() int64 { return -1 }
