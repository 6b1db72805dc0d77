package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// qStderr receives infer's and sweep's progress, warnings and notes
// (a variable so tests can read them).
var qStderr io.Writer = os.Stderr

func qNote(format string, args ...any) {
	fmt.Fprintf(qStderr, "qgtc: note: "+format+"\n", args...)
}

// qCacheDir is where infer and sweep cache trained models and partitions
// (pipeline.Job.CacheDir): $QGTC_CACHE, else <user cache dir>/qgtc.
func qCacheDir() string {
	if d := os.Getenv("QGTC_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "qgtc")
	}
	return filepath.Join(os.TempDir(), "qgtc-cache")
}
