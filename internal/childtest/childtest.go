// Package childtest helps tests that interrupt a child process mid-write
// (the atomic-write guarantees of cache files and data synth).
package childtest

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// WaitWriting waits until a file in dir has bytes in it (the child is
// mid-write), failing t after a minute.
func WaitWriting(t testing.TB, dir string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		es, _ := os.ReadDir(dir)
		for _, e := range es {
			if fi, err := e.Info(); err == nil && fi.Size() > 0 {
				return
			}
		}
		require.True(t, time.Now().Before(deadline), "the child never started writing")
		time.Sleep(5 * time.Millisecond)
	}
}
