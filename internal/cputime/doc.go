// Package cputime reads the CPU time (user + system, all threads) the
// process has used so far. Benchmarks and the CLI report it beside wall
// time: on a machine shared with other programs it grows only while this
// process runs, so per-core efficiency measured with it holds under load.
package cputime
