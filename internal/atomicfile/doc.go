// Package atomicfile writes output files so that a reader never sees a
// half-written one: the bytes go to a temporary file in the destination's
// folder, which is renamed over the destination only once everything is
// written and synced. A failed or interrupted write (an error, Abort, or
// SIGINT/SIGTERM while a file is open) removes the temporary file and leaves
// the destination as it was.
//
// Check tells before any long work whether a destination can be written at
// all, so that a command fails in its first second rather than after an hour.
package atomicfile
